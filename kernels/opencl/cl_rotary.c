/* cl_rotary.c - rotary_embedding: one work item per element of out. Rows (x.shape[:-1]) are a
 * strided layout with operands (out, x, position): the position operand has position_ids'
 * broadcast byte strides or, without position_ids, stride 1 along the seq axis and 0 elsewhere,
 * so that its "offset" is the row's seq index. An element past rot_dim is copied; one of the
 * first rot_dim reads its pair (i, i + half) or (2i, 2i + 1) and the tables' entry (position,
 * i). Positions are scanned first: one outside [0, max_pos) is an error and nothing is written.
 * float16 computes in float. */
#include "cl_layout.h"
#include "cl_types.h"

/* Positions outside [0, max_pos) are an error, found before anything is written. */
static int ct_cl_rotary_check_positions(const ct_cl_exec* exec, const ct_tensor* pos,
                                        int64_t max_pos) {
  bool found = false;
  int64_t bad = 0;
  int status = ct_cl_find_index_outside(exec, pos, 0, max_pos, &found, &bad);
  if (status == CT_OK && found) {
    status = ct_cl_error(CT_ERROR_INVALID_ARGUMENT,
                         "rotary_embedding: position %lld is out of range [0, %lld) (the rows of "
                         "cos and sin)",
                         (long long)bad, (long long)max_pos);
  }
  return status;
}

static const char ct_cl_rotary_source[] =
    "__kernel void ct_rotary(__global char* out, long off_out, __global const char* x, long "
    "off_x, __global const char* cs, long off_c, __global const char* sn, long off_s, "
    "__global const char* pos, long off_pos, int has_pos, __global const long* meta, int ndim, "
    "long n, long dim, long hd, int interleaved, long out_step, long x_step, long c_row, long "
    "c_col, long s_row, long s_col) {\n"
    "  const long gid = get_global_id(0);\n  if (gid >= n) return;\n"
    "  const long i = gid / dim, j = gid %% dim;\n"
    "  long off0 = off_out, off1 = off_x, off2 = 0;\n"
    "%s"
    "  if (j >= 2 * hd) {\n"
    "    CAT(ST_, TAG)(out, off0 + j * out_step, CAT(LD_, TAG)(x, off1 + j * x_step));\n"
    "    return;\n  }\n"
    "  const long p = has_pos ? (long)CAT(LD_, ITAG)(pos, off_pos + off2) : off2;\n"
    "  const int second = interleaved ? (int)(j & 1) : j >= hd;\n"
    "  const long k = interleaved ? j >> 1 : (second ? j - hd : j);\n"
    "  const long ia = interleaved ? 2 * k : k, ib = interleaved ? 2 * k + 1 : k + hd;\n"
    "  const T a = CAT(LD_, TAG)(x, off1 + ia * x_step), b = CAT(LD_, TAG)(x, off1 + ib * "
    "x_step);\n"
    "  const T c = CAT(LD_, TAG)(cs, off_c + p * c_row + k * c_col);\n"
    "  const T s = CAT(LD_, TAG)(sn, off_s + p * s_row + k * s_col);\n"
    "  CAT(ST_, TAG)(out, off0 + j * out_step, second ? b * c + a * s : a * c - b * s);\n}\n";

static int ct_cl_rotary_run(const ct_kernel_call* call) {
  const ct_tensor *x = call->inputs[0], *cos = call->inputs[1], *sin = call->inputs[2];
  const ct_tensor* pos = call->num_inputs > 3 ? call->inputs[3] : NULL;
  const ct_tensor* out = call->outputs[0];
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cl_exec exec;
  int status = ct_cl_exec_for_call(call, &exec);
  if (status != CT_OK) return status;
  if (pos) {
    status = ct_cl_rotary_check_positions(&exec, pos, cos->shape[0]);
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
  ct_pl_layout_collapse(&rows, NULL);

  const ct_cl_type_info* t = &ct_cl_types[ct_pl_type_of(x->dtype)];
  ct_cl_source loop, source;
  ct_cl_source_begin(&loop, &exec);
  loop.length = 0;
  loop.text[0] = '\0';
  ct_cl_source_index_loop(&loop, 3);
  ct_cl_source_begin(&source, &exec);
  ct_cl_source_add(&source, "#define T %s\n#define TAG %s\n#define ITAG %s\n", t->compute, t->tag,
                   pos && pos->dtype.bits == 32 ? "i32" : "i64");
  ct_cl_source_add(&source, ct_cl_rotary_source, loop.text);

  cl_mem meta = NULL;
  status = ct_cl_layout_meta(&exec, &rows, &meta);
  if (status == CT_OK) {
    CT_CL_TENSOR_ARGS(out_buffer, off_out, out);
    CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
    CT_CL_TENSOR_ARGS(c_buffer, off_c, cos);
    CT_CL_TENSOR_ARGS(s_buffer, off_s, sin);
    /* without position_ids, x's buffer stands in (never read: has_pos is 0) */
    cl_mem pos_buffer = pos ? (cl_mem)pos->data : x_buffer;
    const int64_t off_pos = pos ? (int64_t)pos->byte_offset : 0;
    const cl_int has_pos = pos != NULL, ndim = rows.ndim;
    const cl_int interleaved = call->attrs[0].value.b != 0;
    const int64_t dim = x->shape[nd], hd = cos->shape[1];
    const int64_t out_step = ct_pl_byte_stride(out, nd), x_step = ct_pl_byte_stride(x, nd);
    const int64_t c_row = ct_pl_byte_stride(cos, 0), c_col = ct_pl_byte_stride(cos, 1);
    const int64_t s_row = ct_pl_byte_stride(sin, 0), s_col = ct_pl_byte_stride(sin, 1);
    const ct_cl_arg args[] = {
        CT_CL_ARG(out_buffer),  CT_CL_ARG(off_out),  CT_CL_ARG(x_buffer), CT_CL_ARG(off_x),
        CT_CL_ARG(c_buffer),    CT_CL_ARG(off_c),    CT_CL_ARG(s_buffer), CT_CL_ARG(off_s),
        CT_CL_ARG(pos_buffer),  CT_CL_ARG(off_pos),  CT_CL_ARG(has_pos),  CT_CL_ARG(meta),
        CT_CL_ARG(ndim),        CT_CL_ARG(n),        CT_CL_ARG(dim),      CT_CL_ARG(hd),
        CT_CL_ARG(interleaved), CT_CL_ARG(out_step), CT_CL_ARG(x_step),   CT_CL_ARG(c_row),
        CT_CL_ARG(c_col),       CT_CL_ARG(s_row),    CT_CL_ARG(s_col)};
    status = ct_cl_launch(&exec, &source, "ct_rotary", (size_t)n, args,
                          (int)(sizeof args / sizeof *args));
  }
  if (meta) ct_cl.clReleaseMemObject(meta);
  return status;
}

int ct_cl_register_rotary(void) {
  static const ct_pl_type floats[] = {CT_PL_F16, CT_PL_F32, CT_PL_F64};
  static const ct_pl_type indices[] = {CT_PL_I64, CT_PL_I32};
  for (int f = 0; f < 3; ++f) {
    for (int i = 0; i < 2; ++i) {
      const ct_pl_type signature[5] = {floats[f], floats[f], floats[f], indices[i], floats[f]};
      const int status =
          ct_cl_register("rotary_embedding", signature, 5, ct_cl_rotary_run, NULL, NULL);
      if (status != CT_OK) return status;
    }
  }
  return CT_OK;
}
