/* cpu_isa.h - the instruction-set level CPU kernels run at, chosen once per process.
 *
 * Hot loops are compiled several times (generic x86-64, AVX2, AVX-512) and one copy is picked at
 * run time from what the CPU supports, so one build serves every x86-64 machine. The environment
 * variable CTENSOR_CPU_ISA (generic, avx2 or avx512; read once, at the first call) lowers the
 * level, for testing every copy on one machine; a level the CPU lacks is never chosen. On other
 * architectures and compilers everything runs the generic copy. */
#ifndef CTENSOR_CPU_ISA_H_
#define CTENSOR_CPU_ISA_H_

#include "internal.h"

typedef enum ct_cpu_isa_level {
  CT_CPU_ISA_GENERIC = 0, /* the compiler's baseline (x86-64: SSE2) */
  CT_CPU_ISA_AVX2 = 1,    /* AVX2 + FMA + F16C */
  CT_CPU_ISA_AVX512 = 2,  /* AVX-512 F, BW, DQ, VL on top of AVX2 */
} ct_cpu_isa_level;

/* The level kernels use: the best the CPU supports, lowered by CTENSOR_CPU_ISA. Thread-safe. */
CT_INTERNAL ct_cpu_isa_level ct_cpu_isa(void);

/* Name of a level ("generic", "avx2", "avx512"). */
CT_INTERNAL const char* ct_cpu_isa_name(ct_cpu_isa_level level);

/* Per-ISA copies of a function. CT_CPU_ISA_VARIANTS(RET, NAME, PARAMS, ARGS) expects a
 * `static CT_CPU_ISA_BODY RET NAME##_body PARAMS` and defines `static RET NAME PARAMS`, which
 * calls the copy for ct_cpu_isa(); CT_CPU_ISA_LOOP(NAME, PARAMS, ARGS) does the same for a void
 * function. The copies target AVX2 or AVX-512 without FMA (no fma in the target lists, so no
 * contraction), so the compiler vectorises for the wider registers but every copy computes
 * bitwise the same results; bodies that want FMA use it explicitly. The exceptions are the
 * vector math sets (vector_math.h: float32 exp and softmax use FMA, within an ulp of each other)
 * and the GEMM micro-kernels (FMA). */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(CT_NO_ISA_VARIANTS)
#define CT_CPU_ISA_BODY __attribute__((always_inline)) inline
#define CT_CPU_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#ifdef CT_CPU_ISA_AVX512_AS_AVX2
/* A file defines this before including cpu_isa.h where GCC would fuse its AVX-512 copy's
 * arithmetic in spite of -ffp-contract=off: GCC 12's SLP VEC_FMADDSUB pattern turns the
 * alternating `a·b - c·d, a·e + c·f` of a complex product into vfmaddsub, an instruction
 * AVX-512F brings for every vector width. Its AVX-512 slot then runs the AVX2 copy. */
#define CT_CPU_TARGET_AVX512 CT_CPU_TARGET_AVX2
#else
#define CT_CPU_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,f16c")))
#endif
#define CT_CPU_ISA_DISPATCH(RET, NAME, PARAMS, ARGS, RETURN) \
  CT_CPU_ISA_DISPATCH_BODIES(RET, NAME, PARAMS, ARGS, RETURN, NAME##_body, NAME##_body)
/* The same with the AVX2 and AVX-512 copies inlining WIDE_BODY (which may use AVX intrinsics
 * through always_inline helpers with target("avx")) and the generic copy BODY. */
#define CT_CPU_ISA_DISPATCH_BODIES(RET, NAME, PARAMS, ARGS, RETURN, BODY, WIDE_BODY) \
  CT_CPU_TARGET_AVX2 static RET NAME##_avx2 PARAMS {                                 \
    RETURN WIDE_BODY ARGS;                                                           \
  }                                                                                  \
  CT_CPU_TARGET_AVX512 static RET NAME##_avx512 PARAMS {                             \
    RETURN WIDE_BODY ARGS;                                                           \
  }                                                                                  \
  static RET NAME##_generic PARAMS {                                                 \
    RETURN BODY ARGS;                                                                \
  }                                                                                  \
  static RET NAME PARAMS {                                                           \
    switch (ct_cpu_isa()) {                                                          \
      case CT_CPU_ISA_AVX512:                                                        \
        RETURN NAME##_avx512 ARGS;                                                   \
        break;                                                                       \
      case CT_CPU_ISA_AVX2:                                                          \
        RETURN NAME##_avx2 ARGS;                                                     \
        break;                                                                       \
      default:                                                                       \
        RETURN NAME##_generic ARGS;                                                  \
    }                                                                                \
  }
#else
#define CT_CPU_ISA_BODY inline
#define CT_CPU_TARGET_AVX2
#define CT_CPU_TARGET_AVX512
#define CT_CPU_ISA_DISPATCH(RET, NAME, PARAMS, ARGS, RETURN) \
  static RET NAME PARAMS {                                   \
    RETURN NAME##_body ARGS;                                 \
  }
#define CT_CPU_ISA_DISPATCH_BODIES(RET, NAME, PARAMS, ARGS, RETURN, BODY, WIDE_BODY) \
  static RET NAME PARAMS {                                                           \
    RETURN BODY ARGS;                                                                \
  }
#endif
#define CT_CPU_ISA_VARIANTS(RET, NAME, PARAMS, ARGS) \
  CT_CPU_ISA_DISPATCH(RET, NAME, PARAMS, ARGS, return)
#define CT_CPU_ISA_LOOP(NAME, PARAMS, ARGS) CT_CPU_ISA_DISPATCH(void, NAME, PARAMS, ARGS, )
/* CT_CPU_ISA_LOOP with `NAME##_wide_body` in the AVX2 and AVX-512 copies. */
#define CT_CPU_ISA_LOOP_WIDE(NAME, PARAMS, ARGS) \
  CT_CPU_ISA_DISPATCH_BODIES(void, NAME, PARAMS, ARGS, , NAME##_body, NAME##_wide_body)

#endif /* CTENSOR_CPU_ISA_H_ */
