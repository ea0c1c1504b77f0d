/* cu_reduce_grad.cu - backward operators of the CUDA forwards sum, mean, prod, max and min
 * (matmul_backward is cu_matmul.cu's).
 *
 * One thread per group (an element of grad_out) walks its group twice, as the OpenCL kernels do
 * (cl_reduce_grad.c): a first pass gathers what the formula needs (ties of the maximum, zeros and
 * the product of the other elements), a second writes grad_x; double accumulators, the CPU
 * kernels' formulas (reduce_grad_kernels.c). */
#include <math.h>
#include <stdint.h>

#include "cu_call.h"
#include "cu_layout.h"
#include "cu_types.cuh"
#include "plugin_grad_geometry.h"

namespace {

constexpr int ct_cu_threads = 256;

enum ct_cu_rgrad_kind { CT_CU_RGRAD_SUM, CT_CU_RGRAD_MEAN, CT_CU_RGRAD_PROD, CT_CU_RGRAD_MAX };

struct ct_cu_rgrad_entry {
  const char* name;
  int kind;
  bool has_out;
};

constexpr ct_cu_rgrad_entry ct_cu_rgrads[] = {{"sum_backward", CT_CU_RGRAD_SUM, false},
                                              {"mean_backward", CT_CU_RGRAD_MEAN, false},
                                              {"prod_backward", CT_CU_RGRAD_PROD, false},
                                              {"max_backward", CT_CU_RGRAD_MAX, true},
                                              {"min_backward", CT_CU_RGRAD_MAX, true}};

/* Whether x is a maximum (or minimum) of its group: equal to out, or nan when out is nan. */
__device__ __forceinline__ bool ct_cu_is_extremum(double x, double out) {
  return out != out ? x != x : x == out;
}

template <ct_pl_type Tag>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_rgrad_kernel(const ct_pl_layout kept, const ct_pl_layout reduced, int kind, int64_t n,
                       int64_t count, char* gx, const char* g, const char* x, const char* o) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[4];
    ct_cu_offsets<4>(kept, i, off);
    const double gv = (double)ct_cu_load<Tag>(g + off[1]);
    const double ov = o ? (double)ct_cu_load<Tag>(o + off[3]) : 0.0;
    int64_t ties = 0, zeros = 0;
    double product = 1.0;
    if (kind == CT_CU_RGRAD_PROD || kind == CT_CU_RGRAD_MAX) {
      for (int64_t j = 0; j < count; ++j) {
        int64_t r[2];
        ct_cu_offsets<2>(reduced, j, r);
        const double xv = (double)ct_cu_load<Tag>(x + off[2] + r[0]);
        if (kind == CT_CU_RGRAD_MAX) {
          ties += ct_cu_is_extremum(xv, ov);
        } else if (xv == 0) {
          ++zeros;
        } else {
          product *= xv;
        }
      }
    }
    for (int64_t j = 0; j < count; ++j) {
      int64_t r[2];
      ct_cu_offsets<2>(reduced, j, r);
      const double xv = (double)ct_cu_load<Tag>(x + off[2] + r[0]);
      double v = gv;
      if (kind == CT_CU_RGRAD_MEAN) {
        v = gv / (double)count;
      } else if (kind == CT_CU_RGRAD_MAX) {
        v = ct_cu_is_extremum(xv, ov) ? gv / (double)ties : 0.0;
      } else if (kind == CT_CU_RGRAD_PROD) {
        v = zeros == 0 ? gv * (product / xv) : (zeros == 1 && xv == 0 ? gv * product : 0.0);
      }
      ct_cu_store<Tag>(gx + off[0] + r[1], v);
    }
  }
}

template <ct_pl_type Tag>
int ct_cu_rgrad_run(const ct_kernel_call* call) {
  const auto* entry = static_cast<const ct_cu_rgrad_entry*>(call->kernel_data);
  const ct_tensor* gx = call->outputs[0];
  if (ct_pl_tensor_elements(gx) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_pl_layout kept, reduced;
  const int64_t count = ct_pl_reduce_grad_layouts(call, &kept, &reduced);
  const int64_t n = kept.elements;
  const char* o = entry->has_out ? ct_cu_tensor_bytes(call->inputs[2]) : nullptr;
  ct_cu_rgrad_kernel<Tag><<<ct_cu_grid(exec, n, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
      kept, reduced, entry->kind, n, count, ct_cu_tensor_bytes(gx),
      ct_cu_tensor_bytes(call->inputs[0]), ct_cu_tensor_bytes(call->inputs[1]), o);
  return ct_cu_launch_status(entry->name);
}

template <ct_pl_type Tag>
int ct_cu_register_grad_tag() {
  for (const ct_cu_rgrad_entry& entry : ct_cu_rgrads) {
    const ct_pl_type signature[4] = {Tag, Tag, Tag, Tag};
    const int status = ct_cu_register(entry.name, signature, entry.has_out ? 4 : 3,
                                      ct_cu_rgrad_run<Tag>, nullptr, &entry);
    if (status != CT_OK) return status;
  }
  return CT_OK;
}

}  // namespace

int ct_cu_register_reduce_grad(void) {
  int status = ct_cu_register_grad_tag<CT_PL_F16>();
  if (status == CT_OK) status = ct_cu_register_grad_tag<CT_PL_F32>();
  if (status == CT_OK) status = ct_cu_register_grad_tag<CT_PL_F64>();
  return status;
}
