/* where_kernels.c - in progress: registers nothing yet. */
#include "cpu_register.h"

int ct_cpu_register_where(void) { return CT_OK; }
