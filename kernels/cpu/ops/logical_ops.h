/* logical_ops.h - logical_and, logical_or, logical_xor and logical_not for every compute type:
 * a value is true when it is non-zero (for complex: either part; NaN counts as true), as NumPy.
 * One definition serves the binary, unary and complex kernel families. */
#ifndef CTENSOR_CPU_LOGICAL_OPS_H_
#define CTENSOR_CPU_LOGICAL_OPS_H_

#include "engine/cpu_dtypes.h"

#define CT_DEFINE_LOGICAL_OPS(A, SFX, T, C, U, ID)         \
  static inline ct_bool8 ct_op_logical_and_##C(C a, C b) { \
    return a != 0 && b != 0;                               \
  }                                                        \
  static inline ct_bool8 ct_op_logical_or_##C(C a, C b) {  \
    return a != 0 || b != 0;                               \
  }                                                        \
  static inline ct_bool8 ct_op_logical_xor_##C(C a, C b) { \
    return (a != 0) != (b != 0);                           \
  }                                                        \
  static inline ct_bool8 ct_op_logical_not_##C(C x) {      \
    return x == 0;                                         \
  }
CT_CPU_COMPUTE_TYPES(CT_DEFINE_LOGICAL_OPS, _)
CT_CPU_BOOL_TYPE(CT_DEFINE_LOGICAL_OPS, _)
CT_CPU_COMPLEX_TYPES(CT_DEFINE_LOGICAL_OPS, _)
#undef CT_DEFINE_LOGICAL_OPS

#endif /* CTENSOR_CPU_LOGICAL_OPS_H_ */
