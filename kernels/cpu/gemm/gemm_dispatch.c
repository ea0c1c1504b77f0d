/* gemm_dispatch.c - the GEMM micro-kernels for the instruction-set level ct_cpu_isa() chose
 * (see gemm_ukernel.h and cpu_isa.h; CTENSOR_CPU_ISA lowers it for tests). */
#include "engine/cpu_isa.h"
#include "gemm/gemm_ukernel.h"

const ct_gemm_ukernels* ct_gemm_ukernels_get(void) {
  switch (ct_cpu_isa()) {
    case CT_CPU_ISA_AVX512:
#ifdef CT_HAVE_GEMM_AVX512
      return &ct_gemm_ukernels_avx512;
#endif
      /* fall through: built without the AVX-512 set */
    case CT_CPU_ISA_AVX2:
#ifdef CT_HAVE_GEMM_AVX2
      return &ct_gemm_ukernels_avx2;
#endif
      /* fall through */
    default:
      return &ct_gemm_ukernels_generic;
  }
}
