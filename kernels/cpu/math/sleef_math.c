/* sleef_math.c - the choice between SLEEF's AVX-512 and AVX2 loops and the caller's own (see
 * sleef_math.h): the widest set that the build has and ct_cpu_isa() allows. */
#include "math/sleef_math.h"

#include "engine/cpu_isa.h"

/* CALL, then true, where the CPU (and CTENSOR_CPU_ISA) allow LEVEL; a set the build lacks is
 * never run. */
#define CT_SLEEF_RUN_IF(LEVEL, CALL) \
  if (ct_cpu_isa() >= (LEVEL)) {     \
    CALL;                            \
    return true;                     \
  }
#ifdef CT_HAVE_SLEEF_AVX512
#define CT_SLEEF_RUN_AVX512(CALL) CT_SLEEF_RUN_IF(CT_CPU_ISA_AVX512, CALL)
#else
#define CT_SLEEF_RUN_AVX512(CALL)
#endif
#ifdef CT_HAVE_SLEEF_AVX2
#define CT_SLEEF_RUN_AVX2(CALL) CT_SLEEF_RUN_IF(CT_CPU_ISA_AVX2, CALL)
#else
#define CT_SLEEF_RUN_AVX2(CALL)
#endif

/* NAME PARAMS: NAME_avx512 ARGS or NAME_avx2 ARGS, true; false where neither runs (the
 * parameters are then unused, which the build does not warn about). */
#define CT_SLEEF_DEFINE(NAME, PARAMS, ARGS) \
  bool NAME PARAMS {                        \
    CT_SLEEF_RUN_AVX512(NAME##_avx512 ARGS) \
    CT_SLEEF_RUN_AVX2(NAME##_avx2 ARGS)     \
    return false;                           \
  }

#define CT_SLEEF_DEFINE_TYPE(SFX, T)                                                               \
  CT_SLEEF_DEFINE(ct_sleef_unary_##SFX,                                                            \
                  (ct_sleef_fn fn, const char* src, int64_t ss, char* dst, int64_t ds, int64_t n), \
                  (fn, src, ss, dst, ds, n))                                                       \
  CT_SLEEF_DEFINE(ct_sleef_binary_##SFX,                                                           \
                  (ct_sleef_binary_fn fn, const char* a, int64_t as, const char* b, int64_t bs,    \
                   char* dst, int64_t ds, int64_t n),                                              \
                  (fn, a, as, b, bs, dst, ds, n))                                                  \
  CT_SLEEF_DEFINE(ct_sleef_divmod_##SFX,                                                           \
                  (int floor_divide, T (*scalar)(T, T), const char* a, int64_t as, const char* b,  \
                   int64_t bs, char* dst, int64_t ds, int64_t n),                                  \
                  (floor_divide, scalar, a, as, b, bs, dst, ds, n))
CT_SLEEF_DEFINE_TYPE(f32, float)
CT_SLEEF_DEFINE_TYPE(f64, double)
