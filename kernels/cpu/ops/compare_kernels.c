/* compare_kernels.c - equal, less, greater: bool results for every dtype. */
#include "cpu_register.h"
#include "engine/elementwise_loops.h"

#define CT_DEF(A, SFX, T, C, U, ID)                    \
  static inline ct_bool8 ct_op_equal_##C(C a, C b) {   \
    return a == b;                                     \
  }                                                    \
  static inline ct_bool8 ct_op_less_##C(C a, C b) {    \
    return a < b;                                      \
  }                                                    \
  static inline ct_bool8 ct_op_greater_##C(C a, C b) { \
    return a > b;                                      \
  }
CT_CPU_COMPUTE_TYPES(CT_DEF, _)
CT_CPU_BOOL_TYPE(CT_DEF, _)
#undef CT_DEF

#define CT_COMPARE_KERNELS(K) \
  K(equal, CT_CPU_ALL_TYPES)  \
  K(less, CT_CPU_ALL_TYPES)   \
  K(greater, CT_CPU_ALL_TYPES)

#define CT_COMPARE_X(NAME, SFX, T, C, U, ID) CT_BINARY_LOOP(NAME, SFX, T, C, b8, uint8_t)
#define CT_COMPARE_REG_X(NAME, SFX, T, C, U, ID) \
  {#NAME, 3, {ID, ID, CT_DT_BOOL}, ct_cpu_elementwise_run, NULL, &ct_cpu_##NAME##_##SFX##_entry},

#define K(NAME, TYPES) TYPES(CT_COMPARE_X, NAME)
CT_COMPARE_KERNELS(K)
#undef K

static const ct_cpu_kernel ct_cpu_compare_kernels[] = {
#define K(NAME, TYPES) TYPES(CT_COMPARE_REG_X, NAME)
    CT_COMPARE_KERNELS(K)
#undef K
};

int ct_cpu_register_compare(void) {
  return ct_cpu_register_all(ct_cpu_compare_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_compare_kernels));
}
