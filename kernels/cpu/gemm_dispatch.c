/* gemm_dispatch.c - picks the GEMM micro-kernels for this CPU once (see gemm_ukernel.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_ukernel.h"

static _Atomic(const ct_gemm_ukernels*) ct_gemm_chosen = NULL;

/* The widest set this CPU runs, no wider than `limit` (an ISA name, or NULL for no limit). */
static const ct_gemm_ukernels* ct_gemm_choose(const char* limit) {
  const bool allow_avx512 = !limit || strcmp(limit, "avx512") == 0;
  const bool allow_avx2 = allow_avx512 || strcmp(limit, "avx2") == 0;
  (void)allow_avx2;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
#ifdef CT_HAVE_GEMM_AVX512
  if (allow_avx512 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
    return &ct_gemm_ukernels_avx512;
  }
#endif
#ifdef CT_HAVE_GEMM_AVX2
  if (allow_avx2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return &ct_gemm_ukernels_avx2;
  }
#endif
#endif
  return &ct_gemm_ukernels_generic;
}

const ct_gemm_ukernels* ct_gemm_ukernels_get(void) {
  const ct_gemm_ukernels* set = atomic_load_explicit(&ct_gemm_chosen, memory_order_acquire);
  if (set) return set;
  /* Threads racing here compute the same answer; the first store wins. */
  const char* limit = getenv("CTENSOR_CPU_ISA");
  if (limit && strcmp(limit, "generic") != 0 && strcmp(limit, "avx2") != 0 &&
      strcmp(limit, "avx512") != 0) {
    limit = NULL; /* an unknown name does not restrict */
  }
  set = ct_gemm_choose(limit);
  const ct_gemm_ukernels* expected = NULL;
  if (!atomic_compare_exchange_strong(&ct_gemm_chosen, &expected, set)) set = expected;
  return set;
}
