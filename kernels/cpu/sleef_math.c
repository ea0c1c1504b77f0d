/* sleef_math.c - the choice between SLEEF's AVX2 loops and the caller's own (see sleef_math.h). */
#include "sleef_math.h"

#include "cpu_isa.h"

#ifdef CT_HAVE_SLEEF_AVX2
#define CT_SLEEF_AVX2_RUN(SFX)                            \
  if (ct_cpu_isa() >= CT_CPU_ISA_AVX2) {                  \
    ct_sleef_unary_##SFX##_avx2(fn, src, ss, dst, ds, n); \
    return true;                                          \
  }
#else
#define CT_SLEEF_AVX2_RUN(SFX)
#endif

#define CT_SLEEF_UNARY_DEFINE(SFX)                                                              \
  bool ct_sleef_unary_##SFX(ct_sleef_fn fn, const char* src, int64_t ss, char* dst, int64_t ds, \
                            int64_t n) {                                                        \
    CT_SLEEF_AVX2_RUN(SFX)                                                                      \
    (void)fn, (void)src, (void)ss, (void)dst, (void)ds, (void)n;                                \
    return false;                                                                               \
  }
CT_SLEEF_UNARY_DEFINE(f32)
CT_SLEEF_UNARY_DEFINE(f64)
