/* sleef_math.c - the choice between SLEEF's AVX2 loops and the caller's own (see sleef_math.h). */
#include "sleef_math.h"

#include "cpu_isa.h"

bool ct_sleef_unary_f32(ct_sleef_fn fn, const char* src, int64_t ss, char* dst, int64_t ds,
                        int64_t n) {
#ifdef CT_HAVE_SLEEF_AVX2
  if (ct_cpu_isa() >= CT_CPU_ISA_AVX2) {
    ct_sleef_unary_f32_avx2(fn, src, ss, dst, ds, n);
    return true;
  }
#endif
  (void)fn, (void)src, (void)ss, (void)dst, (void)ds, (void)n;
  return false;
}

bool ct_sleef_unary_f64(ct_sleef_fn fn, const char* src, int64_t ss, char* dst, int64_t ds,
                        int64_t n) {
#ifdef CT_HAVE_SLEEF_AVX2
  if (ct_cpu_isa() >= CT_CPU_ISA_AVX2) {
    ct_sleef_unary_f64_avx2(fn, src, ss, dst, ds, n);
    return true;
  }
#endif
  (void)fn, (void)src, (void)ss, (void)dst, (void)ds, (void)n;
  return false;
}
