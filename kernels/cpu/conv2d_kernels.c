/* conv2d_kernels.c - in progress: registers nothing yet. */
#include "cpu_register.h"

int ct_cpu_register_conv2d(void) { return CT_OK; }
