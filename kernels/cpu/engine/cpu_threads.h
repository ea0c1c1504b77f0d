/* cpu_threads.h - the thread count CPU kernels use (set through ct_set_num_threads). */
#ifndef CTENSOR_CPU_THREADS_H_
#define CTENSOR_CPU_THREADS_H_

__attribute__((visibility("hidden"))) int ct_cpu_num_threads(void);

#endif
