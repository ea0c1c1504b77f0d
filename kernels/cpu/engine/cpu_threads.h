/* cpu_threads.h - the thread count CPU kernels use (set through ct_set_num_threads):
 * ct_cpu_num_threads, defined with the setting in capi/threads.c and declared in internal.h. */
#ifndef CTENSOR_CPU_THREADS_H_
#define CTENSOR_CPU_THREADS_H_

#include "internal.h"

#endif
