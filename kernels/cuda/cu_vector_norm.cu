/* cu_vector_norm.cu - vector_norm and vector_norm_backward. One thread per output element (per
 * group of the backward) walks its lane in order, in double, with the CPU kernels' state and
 * formulas (vector_norm_kernels.c, reduce_grad_impl.h) and the OpenCL kernels' layout
 * (cl_reduce.c, cl_reduce_grad.c): the moduli's maximum or minimum, their count or sum, or for
 * other orders p a running maximum m and s = sum (a / m)^p (p > 0), s = sum a^p (p < 0); the
 * backward follows torch's linalg_vector_norm_backward. */
#include <math.h>
#include <stdint.h>

#include "cu_call.h"
#include "cu_layout.h"
#include "cu_types.cuh"
#include "plugin_geometry.h"
#include "plugin_grad_geometry.h"

namespace {

constexpr int ct_cu_threads = 256;

template <ct_pl_type Tag>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_vector_norm_kernel(const ct_pl_layout kept, const ct_pl_layout reduced, double p,
                             int64_t n, int64_t count, char* out, const char* x) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[2];
    ct_cu_offsets<2>(kept, i, off);
    double m = p == -INFINITY ? INFINITY : 0.0, s = 0.0;
    for (int64_t j = 0; j < count; ++j) {
      int64_t r[1];
      ct_cu_offsets<1>(reduced, j, r);
      const double a = fabs((double)ct_cu_load<Tag>(x + off[1] + r[0]));
      if (p == INFINITY) {
        if ((a > m || a != a) && m == m) m = a;
      } else if (p == -INFINITY) {
        if ((a < m || a != a) && m == m) m = a;
      } else if (p == 0) {
        s += a != 0;
      } else if (p == 1) {
        s += a;
      } else if (p < 0) {
        s += pow(a, p);
      } else if (!(a <= m)) { /* a larger maximum, or nan (which makes s nan) */
        const double q = m / a;
        s = 1 + s * (p == 2 ? q * q : pow(q, p));
        m = a;
      } else if (a == m) {
        s += 1; /* also inf == inf, where a / m is nan */
      } else {
        const double q = a / m;
        s += p == 2 ? q * q : pow(q, p);
      }
    }
    double result;
    if (isinf(p)) {
      result = m;
    } else if (p == 0 || p == 1) {
      result = s;
    } else if (p < 0) {
      result = pow(s, 1 / p);
    } else {
      result = m == 0 ? 0.0 : m * (p == 2 ? sqrt(s) : pow(s, 1 / p));
    }
    ct_cu_store<Tag>(out + off[0], result);
  }
}

template <ct_pl_type Tag>
int ct_cu_vector_norm_run(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_pl_layout kept, reduced;
  const int64_t count = ct_pl_reduce_layouts(call, false, false, &kept, &reduced);
  ct_cu_vector_norm_kernel<Tag>
      <<<ct_cu_grid(exec, n, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
          kept, reduced, call->attrs[2].value.f, n, count, ct_cu_tensor_bytes(out),
          ct_cu_tensor_bytes(call->inputs[0]));
  return ct_cu_launch_status("vector_norm");
}

__device__ __forceinline__ double ct_cu_sgn(double v) {
  return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; /* torch's sgn: 0 at nan */
}

template <ct_pl_type Tag>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_vector_norm_backward_kernel(const ct_pl_layout kept, const ct_pl_layout reduced, double p,
                                      int64_t n, int64_t count, char* gx, const char* g,
                                      const char* x, const char* o) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[4];
    ct_cu_offsets<4>(kept, i, off);
    const double gv = (double)ct_cu_load<Tag>(g + off[1]);
    const double ov = (double)ct_cu_load<Tag>(o + off[3]);
    int64_t ties = 0;
    if (isinf(p)) {
      for (int64_t j = 0; j < count; ++j) {
        int64_t r[2];
        ct_cu_offsets<2>(reduced, j, r);
        const double a = fabs((double)ct_cu_load<Tag>(x + off[2] + r[0]));
        ties += a == ov || a != a;
      }
    }
    for (int64_t j = 0; j < count; ++j) {
      int64_t r[2];
      ct_cu_offsets<2>(reduced, j, r);
      const double xv = (double)ct_cu_load<Tag>(x + off[2] + r[0]);
      const double a = fabs(xv);
      double v;
      if (p == 0) {
        v = 0.0;
      } else if (p == 1) {
        v = ct_cu_sgn(xv) * gv;
      } else if (p == 2) {
        v = ov == 0 ? 0.0 : gv * (xv / ov);
      } else if (isinf(p)) {
        v = a == ov || a != a ? ct_cu_sgn(xv) * (gv / (double)ties) : 0.0;
      } else if (p < 1) {
        v = (xv == 0 ? 0.0 : ct_cu_sgn(xv) * pow(a, p - 1)) * (gv * pow(ov, 1 - p));
      } else if (p < 2) {
        v = ct_cu_sgn(xv) * pow(a, p - 1) * (ov == 0 ? 0.0 : gv / pow(ov, p - 1));
      } else {
        v = xv * pow(a, p - 2) * (ov == 0 ? 0.0 : gv / pow(ov, p - 1));
      }
      ct_cu_store<Tag>(gx + off[0] + r[1], v);
    }
  }
}

template <ct_pl_type Tag>
int ct_cu_vector_norm_backward_run(const ct_kernel_call* call) {
  const ct_tensor* gx = call->outputs[0];
  if (ct_pl_tensor_elements(gx) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_pl_layout kept, reduced;
  const int64_t count = ct_pl_reduce_grad_layouts(call, &kept, &reduced);
  const int64_t n = kept.elements;
  ct_cu_vector_norm_backward_kernel<Tag>
      <<<ct_cu_grid(exec, n, ct_cu_threads), ct_cu_threads, 0, exec.stream>>>(
          kept, reduced, call->attrs[2].value.f, n, count, ct_cu_tensor_bytes(gx),
          ct_cu_tensor_bytes(call->inputs[0]), ct_cu_tensor_bytes(call->inputs[1]),
          ct_cu_tensor_bytes(call->inputs[2]));
  return ct_cu_launch_status("vector_norm_backward");
}

template <ct_pl_type Tag>
int ct_cu_register_vector_norm_tag() {
  const ct_pl_type signature[4] = {Tag, Tag, Tag, Tag};
  int status =
      ct_cu_register("vector_norm", signature, 2, ct_cu_vector_norm_run<Tag>, nullptr, nullptr);
  if (status == CT_OK) {
    status = ct_cu_register("vector_norm_backward", signature, 4,
                            ct_cu_vector_norm_backward_run<Tag>, nullptr, nullptr);
  }
  return status;
}

}  // namespace

int ct_cu_register_vector_norm(void) {
  int status = ct_cu_register_vector_norm_tag<CT_PL_F16>();
  if (status == CT_OK) status = ct_cu_register_vector_norm_tag<CT_PL_F32>();
  if (status == CT_OK) status = ct_cu_register_vector_norm_tag<CT_PL_F64>();
  return status;
}
