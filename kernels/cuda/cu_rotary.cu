/* cu_rotary.cu - rotary_embedding, as the OpenCL kernel (cl_rotary.c): a grid-stride loop over
 * the elements of out; the rows (x.shape[:-1]) are a strided layout with operands (out, x,
 * position), the position operand having position_ids' broadcast byte strides or, without
 * position_ids, stride 1 along the seq axis (its offset is then the seq index). Elements past
 * rot_dim are copied; the others read their pair and the tables' entry (position, i).
 * Positions are scanned first: one outside [0, max_pos) is an error and nothing is written.
 * float16 computes in float. */
#include "cu_call.h"
#include "cu_layout.h"
#include "cu_types.cuh"

namespace {

constexpr int ct_cu_threads = 256;

/* What the element kernel reads besides the layout. */
struct ct_cu_rotary_args {
  char* out;
  const char *x, *cos, *sin, *pos; /* pos null: positions from the seq axis */
  int64_t dim, half, out_step, x_step, c_row, c_col, s_row, s_col;
  bool interleaved;
};

static int ct_cu_rotary_check_positions(const ct_cu_exec& exec, const ct_tensor* pos,
                                        int64_t max_pos) {
  bool found = false;
  int64_t bad = 0;
  int status = ct_cu_find_index_outside(exec, pos, 0, max_pos, "rotary_embedding (position scan)",
                                        &found, &bad);
  if (status == CT_OK && found) {
    status = ct_cu_error(CT_ERROR_INVALID_ARGUMENT,
                         "rotary_embedding: position %lld is out of range [0, %lld) (the rows of "
                         "cos and sin)",
                         (long long)bad, (long long)max_pos);
  }
  return status;
}

template <ct_pl_type Tag, ct_pl_type Index>
__global__ void __launch_bounds__(ct_cu_threads)
    ct_cu_rotary_kernel(const ct_pl_layout rows, const ct_cu_rotary_args a) {
  using C = ct_cu_compute_t<Tag>;
  const int64_t n = rows.elements * a.dim;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < n; g += step) {
    const int64_t i = g / a.dim, j = g % a.dim;
    int64_t off[3];
    ct_cu_offsets<3>(rows, i, off);
    char* y = a.out + off[0];
    const char* x = a.x + off[1];
    if (j >= 2 * a.half) {
      ct_cu_store<Tag>(y + j * a.out_step, ct_cu_load<Tag>(x + j * a.x_step));
      continue;
    }
    const int64_t p = a.pos ? (int64_t)ct_cu_load<Index>(a.pos + off[2]) : off[2];
    const bool second = a.interleaved ? (j & 1) != 0 : j >= a.half;
    const int64_t k = a.interleaved ? j >> 1 : (second ? j - a.half : j);
    const int64_t ia = a.interleaved ? 2 * k : k, ib = a.interleaved ? 2 * k + 1 : k + a.half;
    const C xa = ct_cu_load<Tag>(x + ia * a.x_step), xb = ct_cu_load<Tag>(x + ib * a.x_step);
    const C c = ct_cu_load<Tag>(a.cos + p * a.c_row + k * a.c_col);
    const C s = ct_cu_load<Tag>(a.sin + p * a.s_row + k * a.s_col);
    ct_cu_store<Tag>(y + j * a.out_step, second ? xb * c + xa * s : xa * c - xb * s);
  }
}

template <ct_pl_type Tag>
int ct_cu_rotary_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *cos = call->inputs[1], *sin = call->inputs[2];
  const ct_tensor* pos = call->num_inputs > 3 ? call->inputs[3] : nullptr;
  const ct_tensor* out = call->outputs[0];
  if (ct_pl_tensor_elements(out) == 0) return CT_OK;
  ct_cu_exec exec;
  int status = ct_cu_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  if (pos) {
    status = ct_cu_rotary_check_positions(exec, pos, cos->shape[0]);
    if (status != CT_OK) return status;
  }
  const int32_t nd = x->ndim - 1;
  ct_pl_layout rows;
  ct_pl_layout_begin(&rows, nd, x->shape);
  for (int32_t k = 0; k < 2; ++k) { /* out and x over their leading dims */
    const ct_tensor* t = k == 0 ? out : x;
    int64_t strides[CT_MAX_NDIM];
    for (int32_t d = 0; d < nd; ++d) strides[d] = ct_pl_byte_stride(t, d);
    ct_pl_layout_add_strides(&rows, strides);
  }
  int64_t pos_strides[CT_MAX_NDIM] = {0};
  if (pos) {
    int64_t all[CT_MAX_NDIM];
    ct_pl_tensor_strides(pos, all);
    const int32_t shift = nd - pos->ndim, size = (pos->dtype.bits + 7) / 8;
    for (int32_t d = 0; d < pos->ndim; ++d) {
      pos_strides[shift + d] = pos->shape[d] == 1 ? 0 : all[d] * size;
    }
  } else {
    pos_strides[nd - 1] = 1; /* the offset is the seq index */
  }
  ct_pl_layout_add_strides(&rows, pos_strides);
  ct_pl_layout_collapse(&rows, nullptr);
  ct_cu_rotary_args a;
  a.out = ct_cu_tensor_bytes(out);
  a.x = ct_cu_tensor_bytes(x);
  a.cos = ct_cu_tensor_bytes(cos);
  a.sin = ct_cu_tensor_bytes(sin);
  a.pos = pos ? ct_cu_tensor_bytes(pos) : nullptr;
  a.dim = x->shape[nd];
  a.half = cos->shape[1];
  a.out_step = ct_pl_byte_stride(out, nd);
  a.x_step = ct_pl_byte_stride(x, nd);
  a.c_row = ct_pl_byte_stride(cos, 0);
  a.c_col = ct_pl_byte_stride(cos, 1);
  a.s_row = ct_pl_byte_stride(sin, 0);
  a.s_col = ct_pl_byte_stride(sin, 1);
  a.interleaved = call->attrs[0].value.b != 0;
  const unsigned grid = ct_cu_grid(exec, rows.elements * a.dim, ct_cu_threads);
  if (pos && pos->dtype.bits == 32) {
    ct_cu_rotary_kernel<Tag, CT_PL_I32><<<grid, ct_cu_threads, 0, exec.stream>>>(rows, a);
  } else {
    ct_cu_rotary_kernel<Tag, CT_PL_I64><<<grid, ct_cu_threads, 0, exec.stream>>>(rows, a);
  }
  return ct_cu_launch_status("rotary_embedding");
}

}  // namespace

int ct_cu_register_rotary(void) {
  return ct_cu_for_each_tag(ct_cu_float_tags{}, [](auto tag) -> int {
    constexpr ct_pl_type Tag = decltype(tag)::value;
    for (ct_pl_type index : {CT_PL_I64, CT_PL_I32}) {
      const ct_pl_type signature[5] = {Tag, Tag, Tag, index, Tag};
      const int status =
          ct_cu_register("rotary_embedding", signature, 5, ct_cu_rotary_run<Tag>, nullptr, nullptr);
      if (status != CT_OK) return status;
    }
    return CT_OK;
  });
}
