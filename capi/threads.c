/* threads.c - how many threads CPU kernels use. */
#include <stdatomic.h>

#include "internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static atomic_int ct_num_threads_setting = 0; /* 0: OpenMP's default */

int ct_cpu_num_threads(void) {
  const int n = atomic_load_explicit(&ct_num_threads_setting, memory_order_relaxed);
#ifdef _OPENMP
  if (omp_in_parallel()) return 1; /* inside a parallel region: nested regions would get one */
  return n > 0 ? n : omp_get_max_threads();
#else
  (void)n;
  return 1;
#endif
}

int ct_get_num_threads(int32_t* n) {
  ct_clear_error();
  if (!n) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_get_num_threads: n is NULL");
  *n = ct_cpu_num_threads();
  return CT_OK;
}

int ct_set_num_threads(int32_t n) {
  ct_clear_error();
  if (n > CT_MAX_THREADS) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "ct_set_num_threads: %d threads; ctensor uses at most %d", n,
                        CT_MAX_THREADS);
  }
  atomic_store(&ct_num_threads_setting, n > 0 ? n : 0);
  return CT_OK;
}
