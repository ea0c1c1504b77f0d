/* elementwise_grad_double.c - the element-wise backward kernels computed in double (float64;
 * elementwise_grad_impl.h). */
/* everything included before T is defined (elementwise_grad_impl.h includes them too) */
#include <tgmath.h>

#include "cpu_register.h"
#include "engine/cpu_dtypes.h"
#include "engine/strided_iter.h"
#include "ops/elementwise_grad_table.h"
#include "ops/elementwise_table.h"

CT_INTERNAL int ct_cpu_register_elementwise_grad_double(void);

#define T double
#define CT_EWG_STORAGE(M, ...) M(f64, double, CT_DT_F64, __VA_ARGS__)
#define CT_EWG_REGISTER ct_cpu_register_elementwise_grad_double
#include "ops/elementwise_grad_impl.h"
