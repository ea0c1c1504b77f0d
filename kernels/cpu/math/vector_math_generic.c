/* vector_math_generic.c - the baseline vector_math set (16-byte vectors, no fused multiply-adds:
 * SSE2 on x86-64, and whatever the compiler makes of them elsewhere), and the run-time choice
 * between the sets. */
#include "engine/cpu_isa.h"
#include "math/vector_math.h"

#define CT_VM_NAME ct_vector_math_generic
#define CT_VM_ISA "generic"
#define CT_VM_BYTES 16
#define CT_VM_FMA(a, b, c) ((a) * (b) + (c))
#if defined(__SSE2__)
#include <xmmintrin.h>
#define CT_VM_MAX(a, b) _mm_max_ps((a), (b))
#define CT_VM_MIN(a, b) _mm_min_ps((a), (b))
#define CT_VM_STREAM(p, v) _mm_stream_ps((p), (v))
/* Whether any lane of an integer vector has its sign bit set. */
#define CT_VM_ANY_SIGN(v) _mm_movemask_ps((__m128)(v))
#else
#define CT_VM_MAX(a, b) ct_vm_select((a) > (b), (a), (b))
#define CT_VM_MIN(a, b) ct_vm_select((a) < (b), (a), (b))
#define CT_VM_STREAM(p, v) memcpy((p), &(v), sizeof(v))
#endif
#include "math/vector_math_impl.h"

const ct_vector_math* ct_vector_math_get(void) {
  switch (ct_cpu_isa()) {
    case CT_CPU_ISA_AVX512:
#ifdef CT_HAVE_VECTOR_MATH_AVX512
      return &ct_vector_math_avx512;
#endif
      /* fall through: built without the AVX-512 set */
    case CT_CPU_ISA_AVX2:
#ifdef CT_HAVE_VECTOR_MATH_AVX2
      return &ct_vector_math_avx2;
#endif
      /* fall through */
    default:
      return &ct_vector_math_generic;
  }
}
