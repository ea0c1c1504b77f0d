/* cu_random.cu - random_uniform, random_normal, random_bernoulli, dropout, dropout_backward and
 * arange: a grid-stride loop over the output's row-major linear indices, each element computed
 * with kernels/common/philox.h (the text the CPU backend and the OpenCL plugin compile; in
 * device code its float operations are the __fmul_rn/__fadd_rn intrinsics, which nvcc never
 * contracts), so every value has the CPU's bits. Float16 values are stored as the bits
 * philox.h rounds. */
#include <string.h>

#include "cu_call.h"
#include "cu_layout.h"
#include "philox.h"

namespace {

enum ct_cu_rand_op {
  CT_CU_UNIFORM,
  CT_CU_NORMAL,
  CT_CU_BERNOULLI,
  CT_CU_DROPOUT,
  CT_CU_DROPOUT_BACKWARD,
  CT_CU_ARANGE
};

/* A call's parameters, passed by value. */
struct ct_cu_rand_params {
  ct_philox_u64 seed, offset;
  float pf0, pf1;   /* uniform's bounds, normal's mean and std, bernoulli's p; dropout's p, scale */
  double pd0, pd1;  /* the same in float64; arange's start and step */
  int64_t pi0, pi1; /* arange's integer start and step; dropout without training */
  int op;
  int out_type; /* ct_pl_type of operand 0 */
  int in_type;  /* ct_pl_type of operand 1 (bernoulli's probs, dropout's x), or -1 */
};

template <typename T>
__device__ __forceinline__ T& ct_cu_at(char* base, int64_t offset) {
  return *reinterpret_cast<T*>(base + offset);
}

__device__ __forceinline__ float ct_cu_load_f32(char* p, int type) {
  if (type == CT_PL_F16) return ct_philox_f16_to_f32(*reinterpret_cast<const ct_philox_u16*>(p));
  if (type == CT_PL_F32) return *reinterpret_cast<const float*>(p);
  return (float)*reinterpret_cast<const double*>(p);
}

/* keep ? x * scale : 0 into operand `dst` of `type` (float16 computed in float32). */
__device__ __forceinline__ void ct_cu_dropout_store(char* dst, char* src, int type, bool keep,
                                                    const ct_cu_rand_params& q) {
  if (type == CT_PL_F16) {
    const float x = ct_philox_f16_to_f32(*reinterpret_cast<const ct_philox_u16*>(src));
    *reinterpret_cast<ct_philox_u16*>(dst) =
        keep ? ct_philox_f32_to_f16(__fmul_rn(x, q.pf1)) : (ct_philox_u16)0;
  } else if (type == CT_PL_F32) {
    *reinterpret_cast<float*>(dst) =
        keep ? __fmul_rn(*reinterpret_cast<const float*>(src), q.pf1) : 0.0f;
  } else {
    *reinterpret_cast<double*>(dst) =
        keep ? __dmul_rn(*reinterpret_cast<const double*>(src), q.pd1) : 0.0;
  }
}

__device__ __forceinline__ void ct_cu_store_bit(char* dst, int type, bool bit) {
  if (type == CT_PL_B8) {
    *reinterpret_cast<unsigned char*>(dst) = bit;
  } else if (type == CT_PL_F16) {
    *reinterpret_cast<ct_philox_u16*>(dst) = bit ? (ct_philox_u16)0x3c00u : (ct_philox_u16)0;
  } else if (type == CT_PL_F32) {
    *reinterpret_cast<float*>(dst) = bit ? 1.0f : 0.0f;
  } else {
    *reinterpret_cast<double*>(dst) = bit ? 1.0 : 0.0;
  }
}

__global__ void ct_cu_rand_kernel(const ct_pl_layout layout, char* o0, char* o1, char* o2,
                                  const ct_cu_rand_params q) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < layout.elements;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t off[3];
    ct_cu_offsets<3>(layout, i, off);
    char* d0 = o0 + off[0];
    const ct_philox4 w = ct_philox_element(q.seed, q.offset, (ct_philox_u64)i);
    switch (q.op) {
      case CT_CU_UNIFORM:
        if (q.out_type == CT_PL_F32) {
          ct_cu_at<float>(d0, 0) = ct_philox_uniform_range_f32(w.x[0], q.pf0, q.pf1);
        } else if (q.out_type == CT_PL_F16) {
          ct_cu_at<ct_philox_u16>(d0, 0) = ct_philox_uniform_range_f16(w.x[0], q.pf0, q.pf1);
        } else {
          ct_cu_at<double>(d0, 0) = ct_philox_uniform_range_f64(w.x[0], w.x[1], q.pd0, q.pd1);
        }
        break;
      case CT_CU_NORMAL:
        if (q.out_type == CT_PL_F32) {
          ct_cu_at<float>(d0, 0) = ct_philox_normal_range_f32(w.x[0], w.x[1], q.pf0, q.pf1);
        } else if (q.out_type == CT_PL_F16) {
          ct_cu_at<ct_philox_u16>(d0, 0) =
              ct_philox_f32_to_f16(ct_philox_normal_range_f32(w.x[0], w.x[1], q.pf0, q.pf1));
        } else {
          ct_cu_at<double>(d0, 0) =
              ct_philox_normal_range_f64(w.x[0], w.x[1], w.x[2], w.x[3], q.pd0, q.pd1);
        }
        break;
      case CT_CU_BERNOULLI: {
        const float p = q.in_type < 0 ? q.pf0 : ct_cu_load_f32(o1 + off[1], q.in_type);
        ct_cu_store_bit(d0, q.out_type, ct_philox_uniform_f32(w.x[0]) < p);
        break;
      }
      case CT_CU_DROPOUT: {
        if (q.pi0) { /* training=False: a copy, mask all true */
          memcpy(d0, o1 + off[1], q.out_type == CT_PL_F64 ? 8 : q.out_type == CT_PL_F32 ? 4 : 2);
          ct_cu_at<unsigned char>(o2, off[2]) = 1;
          break;
        }
        const bool keep = ct_philox_uniform_f32(w.x[0]) >= q.pf0;
        ct_cu_dropout_store(d0, o1 + off[1], q.out_type, keep, q);
        ct_cu_at<unsigned char>(o2, off[2]) = keep;
        break;
      }
      case CT_CU_DROPOUT_BACKWARD:
        ct_cu_dropout_store(d0, o1 + off[1], q.out_type, ct_cu_at<unsigned char>(o2, off[2]) != 0,
                            q);
        break;
      default: /* arange */
        if (q.out_type == CT_PL_I32 || q.out_type == CT_PL_I64) {
          const unsigned long long v =
              (unsigned long long)q.pi0 + (unsigned long long)i * (unsigned long long)q.pi1;
          if (q.out_type == CT_PL_I32) {
            ct_cu_at<int>(d0, 0) = (int)v;
          } else {
            ct_cu_at<long long>(d0, 0) = (long long)v;
          }
        } else {
          const double v = __dadd_rn(q.pd0, __dmul_rn((double)i, q.pd1));
          if (q.out_type == CT_PL_F16) {
            ct_cu_at<ct_philox_u16>(d0, 0) = ct_philox_f32_to_f16(__double2float_rn(v));
          } else if (q.out_type == CT_PL_F32) {
            ct_cu_at<float>(d0, 0) = __double2float_rn(v);
          } else {
            ct_cu_at<double>(d0, 0) = v;
          }
        }
    }
  }
}

/* Launches over the output (operand 0) with up to two more operands. */
int ct_cu_rand_launch(const ct_kernel_call* call, const ct_tensor* const* operands, int count,
                      const ct_cu_rand_params& q) {
  const ct_tensor* out = operands[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  const int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, out->ndim, out->shape);
  char* data[3];
  for (int k = 0; k < 3; ++k) {
    if (k < count) {
      ct_pl_layout_add(&layout, operands[k]);
      data[k] = ct_cu_tensor_bytes(operands[k]);
    } else {
      const int64_t zeros[CT_MAX_NDIM] = {0};
      ct_pl_layout_add_strides(&layout, zeros);
      data[k] = data[0];
    }
  }
  layout.elements = ct_pl_tensor_elements(out);
  ct_pl_layout_collapse(&layout, nullptr); /* keeps the dims' order: the index stays row-major */
  constexpr int threads = 256;
  ct_cu_rand_kernel<<<ct_cu_grid(exec, layout.elements, threads), threads, 0, exec.stream>>>(
      layout, data[0], data[1], data[2], q);
  return ct_cu_launch_status("random");
}

ct_cu_rand_params ct_cu_rand_begin(const ct_kernel_call* call, int op, int seed_attr) {
  ct_cu_rand_params q;
  memset(&q, 0, sizeof q);
  q.op = op;
  q.out_type = ct_pl_type_of(call->outputs[0]->dtype);
  q.in_type = -1;
  if (seed_attr >= 0) {
    q.seed = (ct_philox_u64)call->attrs[seed_attr].value.i;
    q.offset = (ct_philox_u64)call->attrs[seed_attr + 1].value.i;
  }
  return q;
}

int ct_cu_random_uniform_run(const ct_kernel_call* call) {
  ct_cu_rand_params q = ct_cu_rand_begin(call, CT_CU_UNIFORM, 4);
  q.pd0 = call->attrs[2].value.f;
  q.pd1 = call->attrs[3].value.f;
  q.pf0 = (float)q.pd0;
  q.pf1 = (float)q.pd1;
  if (q.out_type == CT_PL_F16) { /* the bounds in float16, as the CPU backend */
    q.pf0 = ct_philox_f16_to_f32(ct_philox_f32_to_f16(q.pf0));
    q.pf1 = ct_philox_f16_to_f32(ct_philox_f32_to_f16(q.pf1));
  }
  return ct_cu_rand_launch(call, call->outputs, 1, q);
}

int ct_cu_random_normal_run(const ct_kernel_call* call) {
  ct_cu_rand_params q = ct_cu_rand_begin(call, CT_CU_NORMAL, 4);
  q.pd0 = call->attrs[2].value.f;
  q.pd1 = call->attrs[3].value.f;
  q.pf0 = (float)q.pd0;
  q.pf1 = (float)q.pd1;
  return ct_cu_rand_launch(call, call->outputs, 1, q);
}

int ct_cu_random_bernoulli_run(const ct_kernel_call* call) {
  ct_cu_rand_params q = ct_cu_rand_begin(call, CT_CU_BERNOULLI, 3);
  q.pf0 = call->attrs[1].type == CT_ATTR_NONE ? 0.5f : (float)call->attrs[1].value.f;
  const ct_tensor* operands[2] = {call->outputs[0], call->inputs[0]};
  if (call->inputs[0]) q.in_type = ct_pl_type_of(call->inputs[0]->dtype);
  return ct_cu_rand_launch(call, operands, call->inputs[0] ? 2 : 1, q);
}

/* dropout's scale: 1 / (1 - p) in float64, 0 for p = 1, 1 without training. */
void ct_cu_dropout_scale(double p, bool training, ct_cu_rand_params* q) {
  q->pd1 = !training ? 1.0 : p >= 1 ? 0.0 : 1.0 / (1.0 - p);
  q->pf1 = (float)q->pd1;
}

int ct_cu_dropout_run(const ct_kernel_call* call) {
  ct_cu_rand_params q = ct_cu_rand_begin(call, CT_CU_DROPOUT, 1);
  const double p = call->attrs[0].value.f;
  q.pf0 = (float)p;
  ct_cu_dropout_scale(p, true, &q);
  q.pi0 = !call->attrs[3].value.b;
  const ct_tensor* operands[3] = {call->outputs[0], call->inputs[0], call->outputs[1]};
  return ct_cu_rand_launch(call, operands, 3, q);
}

int ct_cu_dropout_backward_run(const ct_kernel_call* call) {
  ct_cu_rand_params q = ct_cu_rand_begin(call, CT_CU_DROPOUT_BACKWARD, -1);
  ct_cu_dropout_scale(call->attrs[0].value.f, call->attrs[1].value.b, &q);
  const ct_tensor* operands[3] = {call->outputs[0], call->inputs[0], call->inputs[1]};
  return ct_cu_rand_launch(call, operands, 3, q);
}

int ct_cu_arange_run(const ct_kernel_call* call) {
  ct_cu_rand_params q = ct_cu_rand_begin(call, CT_CU_ARANGE, -1);
  const bool no_stop = call->attrs[1].type == CT_ATTR_NONE;
  q.pd0 = no_stop ? 0.0 : call->attrs[0].value.f;
  q.pd1 = call->attrs[2].value.f;
  q.pi0 = (int64_t)q.pd0;
  q.pi1 = (int64_t)q.pd1;
  return ct_cu_rand_launch(call, call->outputs, 1, q);
}

}  // namespace

int ct_cu_register_random(void) {
  static const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  static const ct_pl_type outs[] = {CT_PL_B8, CT_PL_F16, CT_PL_F32, CT_PL_F64};
  int status = CT_OK;
  for (int t = 0; t < 3 && status == CT_OK; ++t) {
    const ct_pl_type f = floats[t];
    status = ct_cu_register("random_uniform", &f, 1, ct_cu_random_uniform_run, nullptr, nullptr);
    if (status == CT_OK) {
      status = ct_cu_register("random_normal", &f, 1, ct_cu_random_normal_run, nullptr, nullptr);
    }
    const ct_pl_type dropout[3] = {f, f, CT_PL_B8}, backward[3] = {f, CT_PL_B8, f};
    if (status == CT_OK) {
      status = ct_cu_register("dropout", dropout, 3, ct_cu_dropout_run, nullptr, nullptr);
    }
    if (status == CT_OK) {
      status = ct_cu_register("dropout_backward", backward, 3, ct_cu_dropout_backward_run, nullptr,
                              nullptr);
    }
    for (int o = 0; o < 4 && status == CT_OK; ++o) {
      const ct_pl_type bernoulli[2] = {f, outs[o]};
      status = ct_cu_register("random_bernoulli", bernoulli, 2, ct_cu_random_bernoulli_run, nullptr,
                              nullptr);
    }
    if (status == CT_OK)
      status = ct_cu_register("arange", &f, 1, ct_cu_arange_run, nullptr, nullptr);
  }
  static const ct_pl_type ints[] = {CT_PL_I32, CT_PL_I64};
  for (int t = 0; t < 2 && status == CT_OK; ++t) {
    status = ct_cu_register("arange", &ints[t], 1, ct_cu_arange_run, nullptr, nullptr);
  }
  return status;
}
