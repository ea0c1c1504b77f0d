/* elementwise_grad_impl.h - the CPU kernels of the element-wise backward operators
 * (capi/ops/elementwise_grad_table.h) for one compute type. elementwise_grad_float.c (T float:
 * float16, bfloat16, float32) and elementwise_grad_double.c (T double: float64) each include it
 * as their own translation unit, so that the table's helpers and formulas compile as written,
 * in T, with <tgmath.h> picking expf or exp.
 *
 * Before including: T (the compute type); CT_EWG_STORAGE(M, ...), which expands
 * M(SFX, ST, ID, ...) for each dtype computed in T (SFX and ID as cpu_dtypes.h names them, ST
 * the storage type); CT_EWG_REGISTER, the name of the registration function to define. */
#include <stdbool.h>
#include <string.h>
#include <tgmath.h>

#include "cpu_register.h"
#include "engine/cpu_dtypes.h"
#include "engine/cpu_isa.h"
#include "engine/elementwise_loops.h"
#include "engine/strided_iter.h"
#include "ops/elementwise_grad_table.h"
#include "ops/elementwise_table.h"

/* The attribute values (P0, P1) of a call, handed to the loops as `extra`. */
typedef struct ct_ewg_params {
  double v[2];
} ct_ewg_params;

/* The table's helpers as functions of T. */
#define CT_EWG_HELPER(NAME, PARAMS, ...)                \
  static inline __attribute__((unused)) T NAME PARAMS { \
    __VA_ARGS__                                         \
  }
CT_ELEMENTWISE_GRAD_HELPERS(CT_EWG_HELPER)
#undef CT_EWG_HELPER

/* Per inputs column: the number of inputs, the type and size of `a` (the condition is bool, one
 * byte) and its load. Per outputs column: the number of outputs and the second output's store
 * (nothing with one). */
#define CT_EWG_INPUTS_FROM_X 2
#define CT_EWG_INPUTS_FROM_OUT 2
#define CT_EWG_INPUTS_FROM_X1_X2 3
#define CT_EWG_INPUTS_FROM_CONDITION 2
#define CT_EWG_A_TYPE_FROM_X T
#define CT_EWG_A_TYPE_FROM_OUT T
#define CT_EWG_A_TYPE_FROM_X1_X2 T
#define CT_EWG_A_TYPE_FROM_CONDITION bool
#define CT_EWG_A_SIZE_FROM_X(ST) ((int64_t)sizeof(ST))
#define CT_EWG_A_SIZE_FROM_OUT(ST) ((int64_t)sizeof(ST))
#define CT_EWG_A_SIZE_FROM_X1_X2(ST) ((int64_t)sizeof(ST))
#define CT_EWG_A_SIZE_FROM_CONDITION(ST) ((int64_t)1)
#define CT_EWG_LOAD_A_FROM_X(SFX, ST, P) ct_load_##SFX(*(const ST*)(P))
#define CT_EWG_LOAD_A_FROM_OUT CT_EWG_LOAD_A_FROM_X
#define CT_EWG_LOAD_A_FROM_X1_X2 CT_EWG_LOAD_A_FROM_X
#define CT_EWG_LOAD_A_FROM_CONDITION(SFX, ST, P) (*(const uint8_t*)(P) != 0)
#define CT_EWG_OUTPUTS_GRAD_X 1
#define CT_EWG_OUTPUTS_GRAD_X1 1
#define CT_EWG_OUTPUTS_GRAD_X1_X2 2
#define CT_EWG_IF_TWO_GRAD_X(...)
#define CT_EWG_IF_TWO_GRAD_X1(...)
#define CT_EWG_IF_TWO_GRAD_X1_X2(...) __VA_ARGS__

/* Element i: the inputs loaded through byte steps S0 (grad_out), S1 (a), S2 (b), the outputs
 * stored through S3 and S4. */
#define CT_EWG_ELEMENT(INPUTS, OUTPUTS, SFX, ST, GRAD0, GRAD1, S0, S1, S2, S3, S4)           \
  do {                                                                                       \
    const T g = ct_load_##SFX(*(const ST*)(data[0] + i * (S0)));                             \
    const CT_EWG_A_TYPE_##INPUTS a = CT_EWG_LOAD_A_##INPUTS(SFX, ST, data[1] + i * (S1));    \
    const T b =                                                                              \
        CT_EWG_INPUTS_##INPUTS > 2 ? ct_load_##SFX(*(const ST*)(data[2] + i * (S2))) : (T)0; \
    (void)b;                                                                                 \
    *(ST*)(data[CT_EWG_INPUTS_##INPUTS] + i * (S3)) = ct_store_##SFX(GRAD0);                 \
    CT_EWG_IF_TWO_##OUTPUTS(*(ST*)(data[CT_EWG_INPUTS_##INPUTS + 1] + i * (S4)) =            \
                                ct_store_##SFX(GRAD1);)                                      \
  } while (0)

/* The loop ct_cpu_<NAME>_<SFX> and its kernel data: a copy for dense runs (constant steps, which
 * the compiler vectorises) and one for any steps, compiled per instruction set (cpu_isa.h). */
typedef struct ct_ewg_kernel {
  ct_cpu_strided_loop loop;
  ct_elementwise_params params;
} ct_ewg_kernel;

#define CT_EWG_LOOP(SFX, ST, ID, NAME, INPUTS, OUTPUTS, PARAMS, GRAD0, GRAD1)                   \
  static CT_CPU_ISA_BODY void ct_cpu_##NAME##_##SFX##_body(char** data, const int64_t* steps,   \
                                                           int64_t n, const void* extra) {      \
    const ct_ewg_params* params = (const ct_ewg_params*)extra;                                  \
    const T P0 = (T)params->v[0], P1 = (T)params->v[1];                                         \
    (void)P0, (void)P1;                                                                         \
    enum { inputs = CT_EWG_INPUTS_##INPUTS, outputs = CT_EWG_OUTPUTS_##OUTPUTS };               \
    const int64_t size = (int64_t)sizeof(ST), a_size = CT_EWG_A_SIZE_##INPUTS(ST);              \
    bool dense = steps[0] == size && steps[1] == a_size;                                        \
    for (int k = 2; k < inputs + outputs; ++k) dense = dense && steps[k] == size;               \
    if (dense) {                                                                                \
      for (int64_t i = 0; i < n; ++i) {                                                         \
        CT_EWG_ELEMENT(INPUTS, OUTPUTS, SFX, ST, GRAD0, GRAD1, size, a_size, size, size, size); \
      }                                                                                         \
    } else {                                                                                    \
      const int64_t s2 = inputs > 2 ? steps[2] : 0;                                             \
      const int64_t s3 = steps[inputs], s4 = outputs > 1 ? steps[inputs + 1] : 0;               \
      (void)s4;                                                                                 \
      for (int64_t i = 0; i < n; ++i) {                                                         \
        CT_EWG_ELEMENT(INPUTS, OUTPUTS, SFX, ST, GRAD0, GRAD1, steps[0], steps[1], s2, s3, s4); \
      }                                                                                         \
    }                                                                                           \
  }                                                                                             \
  CT_CPU_ISA_LOOP(ct_cpu_##NAME##_##SFX, CT_CPU_LOOP_PARAMS, CT_CPU_LOOP_ARGS)                  \
  static const ct_ewg_kernel ct_cpu_##NAME##_##SFX##_kernel = {ct_cpu_##NAME##_##SFX,           \
                                                               CT_ELEMENTWISE_PARAMS_##PARAMS};
#define CT_EWG_ROW_LOOPS(NAME, INPUTS, OUTPUTS, PARAMS, GRAD0, GRAD1, DOC) \
  CT_EWG_STORAGE(CT_EWG_LOOP, NAME, INPUTS, OUTPUTS, PARAMS, GRAD0, GRAD1)
CT_ELEMENTWISE_GRAD_OPS(CT_EWG_ROW_LOOPS)

/* Runs a loop over the inputs and outputs, the attributes read into P0 and P1 as the table's
 * params column says. */
static int ct_cpu_elementwise_grad_run(const ct_kernel_call* call) {
  const ct_ewg_kernel* kernel = call->kernel_data;
  ct_ewg_params params = {{0, 0}};
  if (kernel->params == CT_ELEMENTWISE_PARAMS_FLOATS) {
    for (int32_t k = 0; k < call->schema->num_attrs && k < 2; ++k) {
      const ct_attr_value* v = &call->attrs[k];
      params.v[k] = v->type == CT_ATTR_INT ? (double)v->value.i : v->value.f;
    }
  } else if (kernel->params == CT_ELEMENTWISE_PARAMS_GELU) {
    const char* mode = call->attrs[0].value.s;
    if (mode && strcmp(mode, "tanh") == 0) {
      params.v[0] = 1;
    } else if (!mode || strcmp(mode, "none") != 0) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "%s: approximate must be \"none\" or \"tanh\", got \"%s\"",
                          call->schema->name, mode ? mode : "(null)");
    }
  }
  const ct_tensor* operands[CT_CPU_MAX_OPERANDS];
  int32_t count = 0;
  for (int32_t i = 0; i < call->num_inputs; ++i) operands[count++] = call->inputs[i];
  for (int32_t i = 0; i < call->num_outputs; ++i) operands[count++] = call->outputs[i];
  ct_cpu_iterate(count, operands, kernel->loop, &params);
  return CT_OK;
}

/* The kernel list: one per (row, dtype), signature inputs then outputs. */
#define CT_EWG_SIGNATURE_FROM_X(ID) ID, ID
#define CT_EWG_SIGNATURE_FROM_OUT(ID) ID, ID
#define CT_EWG_SIGNATURE_FROM_X1_X2(ID) ID, ID, ID
#define CT_EWG_SIGNATURE_FROM_CONDITION(ID) ID, CT_DT_BOOL
#define CT_EWG_SIGNATURE_GRAD_X(ID) ID
#define CT_EWG_SIGNATURE_GRAD_X1(ID) ID
#define CT_EWG_SIGNATURE_GRAD_X1_X2(ID) ID, ID
#define CT_EWG_REG(SFX, ST, ID, NAME, INPUTS, OUTPUTS, PARAMS, GRAD0, GRAD1) \
  {#NAME,                                                                    \
   CT_EWG_INPUTS_##INPUTS + CT_EWG_OUTPUTS_##OUTPUTS,                        \
   {CT_EWG_SIGNATURE_##INPUTS(ID), CT_EWG_SIGNATURE_##OUTPUTS(ID)},          \
   ct_cpu_elementwise_grad_run,                                              \
   NULL,                                                                     \
   &ct_cpu_##NAME##_##SFX##_kernel},
#define CT_EWG_ROW_REGS(NAME, INPUTS, OUTPUTS, PARAMS, GRAD0, GRAD1, DOC) \
  CT_EWG_STORAGE(CT_EWG_REG, NAME, INPUTS, OUTPUTS, PARAMS, GRAD0, GRAD1)

static const ct_cpu_kernel ct_cpu_elementwise_grad_kernels[] = {
    CT_ELEMENTWISE_GRAD_OPS(CT_EWG_ROW_REGS)};

int CT_EWG_REGISTER(void) {
  return ct_cpu_register_all(ct_cpu_elementwise_grad_kernels,
                             CT_CPU_KERNEL_COUNT(ct_cpu_elementwise_grad_kernels));
}
