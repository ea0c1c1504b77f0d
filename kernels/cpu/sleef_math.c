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

#ifdef CT_HAVE_SLEEF_AVX2
#define CT_SLEEF_BINARY_AVX2_RUN(SFX)                           \
  if (ct_cpu_isa() >= CT_CPU_ISA_AVX2) {                        \
    ct_sleef_binary_##SFX##_avx2(fn, a, as, b, bs, dst, ds, n); \
    return true;                                                \
  }
#else
#define CT_SLEEF_BINARY_AVX2_RUN(SFX)
#endif

#define CT_SLEEF_BINARY_DEFINE(SFX)                                                           \
  bool ct_sleef_binary_##SFX(ct_sleef_binary_fn fn, const char* a, int64_t as, const char* b, \
                             int64_t bs, char* dst, int64_t ds, int64_t n) {                  \
    CT_SLEEF_BINARY_AVX2_RUN(SFX)                                                             \
    (void)fn, (void)a, (void)as, (void)b, (void)bs, (void)dst, (void)ds, (void)n;             \
    return false;                                                                             \
  }
CT_SLEEF_BINARY_DEFINE(f32)
CT_SLEEF_BINARY_DEFINE(f64)

#ifdef CT_HAVE_SLEEF_AVX2
#define CT_SLEEF_DIVMOD_AVX2_RUN(SFX)                                             \
  if (ct_cpu_isa() >= CT_CPU_ISA_AVX2) {                                          \
    ct_sleef_divmod_##SFX##_avx2(floor_divide, scalar, a, as, b, bs, dst, ds, n); \
    return true;                                                                  \
  }
#else
#define CT_SLEEF_DIVMOD_AVX2_RUN(SFX)
#endif

#define CT_SLEEF_DIVMOD_DEFINE(SFX, T)                                                       \
  bool ct_sleef_divmod_##SFX(int floor_divide, T (*scalar)(T, T), const char* a, int64_t as, \
                             const char* b, int64_t bs, char* dst, int64_t ds, int64_t n) {  \
    CT_SLEEF_DIVMOD_AVX2_RUN(SFX)                                                            \
    (void)floor_divide, (void)scalar, (void)a, (void)as, (void)b, (void)bs;                  \
    (void)dst, (void)ds, (void)n;                                                            \
    return false;                                                                            \
  }
CT_SLEEF_DIVMOD_DEFINE(f32, float)
CT_SLEEF_DIVMOD_DEFINE(f64, double)
