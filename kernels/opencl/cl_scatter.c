/* cl_scatter.c - put_along_axis, gather_nd, scatter_nd, index_select, index_add and their
 * backward ops, on the geometry of capi/ops/index_plan.h, uploaded as one parameter buffer.
 *
 * Every call first scans the indices (a work item per index; an index out of range sets a flag
 * and is reported, naming the op, the index and the bound, before anything is written). Then:
 * - gathers: one work item per output element copies its element of x (index_add_backward's
 *   grad_source scales it by alpha);
 * - scatters (and the backward ops that add into zeros): one work item per element of x walks
 *   the positions that land on it (a loop over the plan's reduced dims, in row-major order) and
 *   applies them in that order to x's element, in the compute type, storing once: no atomics,
 *   and the order of the CPU kernels, so the last value wins for "none" and sums and products
 *   are deterministic. The work is x's elements times the reduced extent (the indices' extent
 *   along the axis, or the number of index tuples): fine for typical scatters, slow for
 *   scatters of hundreds of thousands of tuples into a large array;
 * - the backward ops of the reductions, per element of x (grad_x) and per position
 *   (grad_values), walk the same positions for the group statistics torch's formulas need. */
#include <stddef.h>

#include "cl_layout.h"
#include "cl_types.h"
#include "ops/index_plan.h"

/* The device code: plan accessors, the landing walk and the kernels. Compiled with T (compute
 * type), U (its unsigned type), TAG, ITAG (the index tag), RED (reduction), MAXD (array
 * extent: the most dims of x or W, or components). */
static const char ct_cl_scatter_source[] =
    "#define XND P[P_XND]\n#define WND P[P_WND]\n#define NCOMP P[P_NCOMP]\n"
    "#define CSTRIDE P[P_CSTRIDE]\n#define XSHAPE(k) P[P_XSHAPE + (k)]\n"
    "#define XSTR(o, k) P[P_XSTR + (o) * P_ROW + (k)]\n#define WSHAPE(u) P[P_WSHAPE + (u)]\n"
    "#define WXDIM(u) P[P_WXDIM + (u)]\n#define WSTR(o, u) P[P_WSTR + (o) * P_ROW + (u)]\n"
    "#define EXTENT(m) P[P_EXTENT + (m)]\n#define CXDIM(m) P[P_CXDIM + (m)]\n"
    "#define LDI(p, o) CAT(LD_, ITAG)(p, o)\n#define LDT(p, o) CAT(LD_, TAG)(p, o)\n"
    "#define STT(p, o, v) CAT(ST_, TAG)(p, o, v)\n"
    /* coordinates of linear position i over n dims of `shape` */
    "inline void ix_unravel(__global const long* P, long shape, long n, long i, long* c) {\n"
    "  for (long k = n - 1; k >= 0; --k) { const long e = P[shape + k]; c[k] = i %% e; i /= e; "
    "}\n}\n"
    "inline long ix_xoff(__global const long* P, const long* xc, int o) {\n"
    "  long s = 0;\n  for (long k = 0; k < XND; ++k) s += xc[k] * XSTR(o, k);\n  return s;\n}\n"
    "inline long ix_woff(__global const long* P, const long* wc, int o) {\n"
    "  long s = 0;\n  for (long u = 0; u < WND; ++u) s += wc[u] * WSTR(o, u);\n  return s;\n}\n"
    /* the element of x that position wc lands on */
    "inline void ix_target(__global const long* P, __global const char* idx, long off_idx, "
    "const long* wc, long* xc) {\n"
    "  for (long k = 0; k < XND; ++k) xc[k] = 0;\n"
    "  for (long u = 0; u < WND; ++u) if (WXDIM(u) >= 0) xc[WXDIM(u)] = wc[u];\n"
    "  const long at = off_idx + ix_woff(P, wc, 0);\n"
    "  for (long m = 0; m < NCOMP; ++m) {\n"
    "    long j = LDI(idx, at + m * CSTRIDE);\n    if (j < 0) j += EXTENT(m);\n"
    "    xc[CXDIM(m)] = j;\n  }\n}\n"
    /* prepares the walk of the positions landing on xc: direct dims of wc, and the count of
     * reduced positions */
    "inline long ix_walk_begin(__global const long* P, const long* xc, long* wc) {\n"
    "  long total = 1;\n"
    "  for (long u = 0; u < WND; ++u) {\n"
    "    if (WXDIM(u) >= 0) wc[u] = xc[WXDIM(u)]; else { wc[u] = 0; total *= WSHAPE(u); }\n"
    "  }\n  return total;\n}\n"
    /* the first reduced position >= *t landing on xc (its coordinates in wc), or -1 */
    "inline long ix_walk_next(__global const long* P, __global const char* idx, long off_idx, "
    "const long* xc, long* wc, long total, long t) {\n"
    "  for (; t < total; ++t) {\n"
    "    long r = t;\n"
    "    for (long u = WND - 1; u >= 0; --u) if (WXDIM(u) < 0) { wc[u] = r %% WSHAPE(u); r /= "
    "WSHAPE(u); }\n"
    "    const long at = off_idx + ix_woff(P, wc, 0);\n"
    "    int lands = 1;\n"
    "    for (long m = 0; m < NCOMP && lands; ++m) {\n"
    "      long j = LDI(idx, at + m * CSTRIDE);\n      if (j < 0) j += EXTENT(m);\n"
    "      lands = j == xc[CXDIM(m)];\n    }\n"
    "    if (lands) return t;\n  }\n  return -1;\n}\n"
    /* reductions as the CPU's: a nan value wins max and min; ties keep the element */
    "inline T ix_combine(T r, T v, T alpha) {\n"
    "#if RED == 0\n  return v;\n"
    "#elif RED == 1 && ISFLOAT\n  return r + alpha * v;\n"
    "#elif RED == 1\n  return (T)((U)r + (U)alpha * (U)v);\n"
    "#elif RED == 2 && ISFLOAT\n  return r * v;\n"
    "#elif RED == 2\n  return (T)((U)r * (U)v);\n"
    "#elif RED == 3\n  return v != v ? v : r < v ? v : r;\n"
    "#else\n  return v != v ? v : v < r ? v : r;\n#endif\n}\n"
    /* index check: component of index i is i %% comps */
    "__kernel void ct_ix_scan(__global const char* idx, long off_idx, __global const long* meta, "
    "int ndim, long n, long comps, __global const long* P, __global long* found) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n) return;\n  long off0 = off_idx;\n"
    "%s"
    "  const long j = LDI(idx, off0), m = i %% comps, e = EXTENT(m);\n"
    "  if (j < -e || j >= e) { found[0] = 1; found[1] = j; found[2] = m; }\n}\n"
    /* gathers: W operand 1 = X operand 0 at each position (times alpha when SCALE) */
    "__kernel void ct_ix_gather(__global const long* P, __global const char* idx, long off_idx, "
    "__global const char* x, long off_x, __global char* out, long off_out, long n, T alpha) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
    "  long wc[MAXD], xc[MAXD];\n  ix_unravel(P, P_WSHAPE, WND, i, wc);\n"
    "  ix_target(P, idx, off_idx, wc, xc);\n"
    "  const long src = off_x + ix_xoff(P, xc, 0), dst = off_out + ix_woff(P, wc, 1);\n"
    "#if SCALE\n  STT(out, dst, alpha * LDT(x, src));\n"
    "#else\n  *AT(ELEM, out, dst) = *AT(const ELEM, x, src);\n#endif\n}\n"
    /* scatters: X operand 0 = X operand 1 (zeros without INIT) with the positions applied */
    "__kernel void ct_ix_scatter(__global const long* P, __global const char* idx, long "
    "off_idx, __global const char* v, long off_v, __global const char* x, long off_x, __global "
    "char* out, long off_out, long n, T alpha) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
    "  long wc[MAXD], xc[MAXD];\n  ix_unravel(P, P_XSHAPE, XND, i, xc);\n"
    "#if INIT\n  T r = LDT(x, off_x + ix_xoff(P, xc, 1));\n#else\n  T r = (T)0;\n#endif\n"
    "  const long total = ix_walk_begin(P, xc, wc);\n"
    "  for (long t = ix_walk_next(P, idx, off_idx, xc, wc, total, 0); t >= 0;\n"
    "       t = ix_walk_next(P, idx, off_idx, xc, wc, total, t + 1)) {\n"
    "    r = ix_combine(r, LDT(v, off_v + ix_woff(P, wc, 1)), alpha);\n  }\n"
    "  STT(out, off_out + ix_xoff(P, xc, 0), r);\n}\n"
    /* group statistics of the positions landing on xc: count, equal to `match`, zeros, the
     * product but at reduced position `skip`, whether one lies after `after` */
    "inline void ix_group(__global const long* P, __global const char* idx, long off_idx, "
    "__global const char* v, long off_v, const long* xc, T match, long skip, long after, long* "
    "count, long* matches, long* zeros, T* product, int* later) {\n"
    "  long wc[MAXD];\n  *count = 0; *matches = 0; *zeros = 0; *product = (T)1; *later = 0;\n"
    "  const long total = ix_walk_begin(P, xc, wc);\n"
    "  for (long t = ix_walk_next(P, idx, off_idx, xc, wc, total, 0); t >= 0;\n"
    "       t = ix_walk_next(P, idx, off_idx, xc, wc, total, t + 1)) {\n"
    "    const T s = LDT(v, off_v + ix_woff(P, wc, 1));\n"
    "    *count += 1; *matches += s == match; *zeros += s == (T)0;\n"
    "    if (t != skip) *product *= s;\n    if (t > after) *later = 1;\n  }\n}\n"
    "inline long ix_reduced_index(__global const long* P, const long* wc) {\n"
    "  long t = 0;\n  for (long u = 0; u < WND; ++u) if (WXDIM(u) < 0) t = t * WSHAPE(u) + wc[u];\n"
    "  return t;\n}\n"
    /* grad_x: X operands 0 grad_x, 1 grad_out, 2 x, 3 out */
    "__kernel void ct_ix_grad_x(__global const long* P, __global const char* idx, long off_idx, "
    "__global const char* v, long off_v, __global char* gx, long off_gx, __global const char* "
    "g, long off_g, __global const char* x, long off_x, __global const char* out, long off_out, "
    "long n) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
    "  long xc[MAXD];\n  ix_unravel(P, P_XSHAPE, XND, i, xc);\n"
    "  const T gv = LDT(g, off_g + ix_xoff(P, xc, 1));\n  T r = gv;\n"
    "#if RED != 1\n"
    "  const T xv = LDT(x, off_x + ix_xoff(P, xc, 2)), ov = LDT(out, off_out + ix_xoff(P, xc, "
    "3));\n"
    "  long count, matches, zeros; T product; int later;\n"
    "  ix_group(P, idx, off_idx, v, off_v, xc, ov, -1, LONG_MAX, &count, &matches, &zeros, "
    "&product, &later);\n"
    "#if RED == 0\n  r = count ? (T)0 : gv;\n"
    "#elif RED == 2\n  r = xv != (T)0 ? gv * ov / xv : gv * product;\n"
    "#else\n  r = xv == ov ? gv / (T)(1 + matches) : (T)0;\n#endif\n#endif\n"
    "  STT(gx, off_gx + ix_xoff(P, xc, 0), r);\n}\n"
    /* grad_values: W operand 2 */
    "__kernel void ct_ix_grad_values(__global const long* P, __global const char* idx, long "
    "off_idx, __global const char* v, long off_v, __global char* gv, long off_gv, __global const "
    "char* g, long off_g, __global const char* x, long off_x, __global const char* out, long "
    "off_out, long n) {\n"
    "  const long i = get_global_id(0);\n  if (i >= n) return;\n"
    "  long wc[MAXD], xc[MAXD];\n  ix_unravel(P, P_WSHAPE, WND, i, wc);\n"
    "  ix_target(P, idx, off_idx, wc, xc);\n"
    "  const T gd = LDT(g, off_g + ix_xoff(P, xc, 1));\n  T r = gd;\n"
    "#if RED != 1\n"
    "  const T s = LDT(v, off_v + ix_woff(P, wc, 1));\n"
    "  const T xv = LDT(x, off_x + ix_xoff(P, xc, 2)), ov = LDT(out, off_out + ix_xoff(P, xc, "
    "3));\n"
    "  const long t = ix_reduced_index(P, wc);\n"
    "  long count, matches, zeros; T product; int later;\n"
    "  ix_group(P, idx, off_idx, v, off_v, xc, ov, t, t, &count, &matches, &zeros, &product, "
    "&later);\n"
    "#if RED == 0\n  r = later ? (T)0 : gd;\n"
    "#elif RED == 2\n  r = s != (T)0 ? gd * ov / s : zeros == 1 ? gd * xv * product : (T)0;\n"
    "#else\n  r = s == ov ? gd / (T)((xv == ov) + matches) : (T)0;\n#endif\n#endif\n"
    "  STT(gv, off_gv + ix_woff(P, wc, 2), r);\n}\n";

/* One call's program: its source and the plan buffer. */
typedef struct ct_cl_ix {
  ct_cl_exec exec;
  ct_cl_source source;
  ct_index_plan plan;
  cl_mem plan_buffer;
  ct_pl_type tag;
} ct_cl_ix;

/* Builds the source for dtype `tag`, index dtype of `indices`, reduction and flags. */
static void ct_cl_ix_source(ct_cl_ix* ix, const ct_tensor* indices, int reduction, bool scale,
                            bool init, int32_t element_size) {
  const ct_index_plan* p = &ix->plan;
  const ct_cl_type_info* t = &ct_cl_types[ix->tag];
  int64_t maxd = p->xnd > p->wnd ? p->xnd : p->wnd;
  if (p->components > maxd) maxd = p->components;
  if (maxd < 1) maxd = 1;
  const char* element = element_size == 1   ? "uchar"
                        : element_size == 2 ? "ushort"
                        : element_size == 4 ? "uint"
                                            : "ulong";
  ct_cl_source loop;
  ct_cl_source_begin(&loop, &ix->exec);
  loop.length = 0;
  loop.text[0] = '\0';
  ct_cl_source_index_loop(&loop, 1);
  ct_cl_source_begin(&ix->source, &ix->exec);
  ct_cl_source_add(
      &ix->source,
      "#define T %s\n#define U %s\n#define TAG %s\n#define ITAG %s\n#define RED %d\n"
      "#define SCALE %d\n#define INIT %d\n#define MAXD %lld\n#define ELEM %s\n#define ISFLOAT %d\n",
      t->compute, t->unsigned_type, t->tag, indices->dtype.bits == 64 ? "i64" : "i32", reduction,
      scale ? 1 : 0, init ? 1 : 0, (long long)maxd, element, ct_pl_type_is_float(ix->tag) ? 1 : 0);
  ct_cl_source_add(
      &ix->source,
      "#define P_XND %lld\n#define P_WND %lld\n#define P_NCOMP %lld\n"
      "#define P_CSTRIDE %lld\n#define P_XSHAPE %lld\n#define P_XSTR %lld\n"
      "#define P_WSHAPE %lld\n#define P_WXDIM %lld\n#define P_WSTR %lld\n"
      "#define P_EXTENT %lld\n#define P_CXDIM %lld\n#define P_ROW %d\n",
      (long long)CT_INDEX_PLAN_OFFSET(xnd), (long long)CT_INDEX_PLAN_OFFSET(wnd),
      (long long)CT_INDEX_PLAN_OFFSET(components),
      (long long)CT_INDEX_PLAN_OFFSET(component_stride), (long long)CT_INDEX_PLAN_OFFSET(x_shape),
      (long long)CT_INDEX_PLAN_OFFSET(x_strides), (long long)CT_INDEX_PLAN_OFFSET(w_shape),
      (long long)CT_INDEX_PLAN_OFFSET(w_xdim), (long long)CT_INDEX_PLAN_OFFSET(w_strides),
      (long long)CT_INDEX_PLAN_OFFSET(extent), (long long)CT_INDEX_PLAN_OFFSET(comp_xdim),
      CT_MAX_NDIM);
  ct_cl_source_add(&ix->source, ct_cl_scatter_source, loop.text);
}

/* Starts a call: exec, plan, index check (before anything is written). */
static int ct_cl_ix_begin(ct_cl_ix* ix, const ct_kernel_call* call, ct_index_kind kind,
                          int64_t param, const ct_tensor* x, const ct_tensor* indices) {
  ix->plan_buffer = NULL;
  int status = ct_cl_exec_for_call(call, &ix->exec);
  if (status != CT_OK) return status;
  ct_index_plan_begin(&ix->plan, kind, x, indices, param);
  ix->tag = (ct_pl_type)ct_pl_type_of(x->dtype);
  return CT_OK;
}

/* Uploads the plan (after the caller added its operands) and checks the indices. */
static int ct_cl_ix_upload_and_check(ct_cl_ix* ix, const char* op, ct_index_kind kind,
                                     const ct_tensor* indices) {
  int status = ct_cl_meta_buffer(&ix->exec, (const int64_t*)&ix->plan,
                                 sizeof ix->plan / sizeof(int64_t), &ix->plan_buffer);
  if (status != CT_OK) return status;
  const int64_t n = ct_pl_tensor_elements(indices);
  if (n == 0) return CT_OK;
  ct_pl_layout layout;
  ct_pl_layout_begin(&layout, indices->ndim, indices->shape);
  ct_pl_layout_add(&layout, indices);
  ct_pl_layout_collapse(&layout, NULL);
  ct_cl_ix_source(ix, indices, 0, false, false, 1);
  cl_mem meta = NULL, found = NULL;
  int64_t result[3] = {0, 0, 0};
  status = ct_cl_layout_meta(&ix->exec, &layout, &meta);
  if (status == CT_OK) status = ct_cl_scratch_buffer(&ix->exec, sizeof result, &found);
  if (status == CT_OK) {
    status = ct_cl_check(ct_cl.clEnqueueWriteBuffer(ix->exec.queue, found, CL_TRUE, 0,
                                                    sizeof result, result, 0, NULL, NULL),
                         "clEnqueueWriteBuffer");
  }
  if (status == CT_OK) {
    CT_CL_TENSOR_ARGS(idx_buffer, off_idx, indices);
    const cl_int ndim = layout.ndim;
    const int64_t comps = ct_index_check_components(&ix->plan, kind);
    const ct_cl_arg args[] = {CT_CL_ARG(idx_buffer),
                              CT_CL_ARG(off_idx),
                              CT_CL_ARG(meta),
                              CT_CL_ARG(ndim),
                              CT_CL_ARG(n),
                              CT_CL_ARG(comps),
                              CT_CL_ARG(ix->plan_buffer),
                              CT_CL_ARG(found)};
    status = ct_cl_launch(&ix->exec, &ix->source, "ct_ix_scan", (size_t)n, args,
                          (int)(sizeof args / sizeof *args));
  }
  if (status == CT_OK) status = ct_cl_read(&ix->exec, found, 0, result, sizeof result);
  if (meta) ct_cl.clReleaseMemObject(meta);
  if (found) ct_cl.clReleaseMemObject(found);
  if (status == CT_OK && result[0]) {
    const int64_t e = ix->plan.extent[result[2]];
    status = ct_cl_error(CT_ERROR_INVALID_ARGUMENT,
                         "%s: index %lld is out of range [%lld, %lld) for dimension %lld of x", op,
                         (long long)result[1], (long long)-e, (long long)e,
                         (long long)ix->plan.comp_xdim[result[2]]);
  }
  return status;
}

static void ct_cl_ix_end(ct_cl_ix* ix) {
  if (ix->plan_buffer) ct_cl.clReleaseMemObject(ix->plan_buffer);
}

/* alpha as the compute type's kernel argument. */
typedef union ct_cl_scalar {
  cl_int i;
  cl_long l;
  cl_float f;
  cl_double d;
} ct_cl_scalar;

static ct_cl_arg ct_cl_ix_alpha(ct_pl_type tag, double alpha, ct_cl_scalar* s) {
  switch (tag) {
    case CT_PL_I64:
      s->l = (cl_long)alpha;
      return (ct_cl_arg){sizeof(cl_long), s};
    case CT_PL_F64:
      s->d = alpha;
      return (ct_cl_arg){sizeof(cl_double), s};
    case CT_PL_F16:
    case CT_PL_F32:
      s->f = (cl_float)alpha;
      return (ct_cl_arg){sizeof(cl_float), s};
    default:
      s->i = (cl_int)alpha;
      return (ct_cl_arg){sizeof(cl_int), s};
  }
}

/* Launches ct_ix_gather over W: X operand 0 `x` into W operand 1 `out`. */
static int ct_cl_ix_gather(ct_cl_ix* ix, const ct_tensor* indices, const ct_tensor* x,
                           const ct_tensor* out, double alpha) {
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  const bool scale = alpha != 1.0;
  ct_cl_ix_source(ix, indices, 0, scale, false, (x->dtype.bits + 7) / 8);
  ct_cl_scalar a;
  CT_CL_TENSOR_ARGS(idx_buffer, off_idx, indices);
  CT_CL_TENSOR_ARGS(x_buffer, off_x, x);
  CT_CL_TENSOR_ARGS(out_buffer, off_out, out);
  const ct_cl_arg args[] = {
      CT_CL_ARG(ix->plan_buffer), CT_CL_ARG(idx_buffer), CT_CL_ARG(off_idx),
      CT_CL_ARG(x_buffer),        CT_CL_ARG(off_x),      CT_CL_ARG(out_buffer),
      CT_CL_ARG(off_out),         CT_CL_ARG(n),          ct_cl_ix_alpha(ix->tag, alpha, &a)};
  return ct_cl_launch(&ix->exec, &ix->source, "ct_ix_gather", (size_t)n, args,
                      (int)(sizeof args / sizeof *args));
}

/* Launches ct_ix_scatter over x's elements: X operand 0 `out` = X operand 1 `x` (zeros when
 * NULL) with W operand 1 `values` applied. */
static int ct_cl_ix_scatter(ct_cl_ix* ix, const ct_tensor* indices, const ct_tensor* values,
                            const ct_tensor* x, const ct_tensor* out, int reduction, double alpha) {
  const int64_t n = ct_pl_tensor_elements(out);
  if (n == 0) return CT_OK;
  ct_cl_ix_source(ix, indices, reduction, false, x != NULL, 1);
  ct_cl_scalar a;
  const ct_tensor* init = x ? x : out;
  CT_CL_TENSOR_ARGS(idx_buffer, off_idx, indices);
  CT_CL_TENSOR_ARGS(v_buffer, off_v, values);
  CT_CL_TENSOR_ARGS(x_buffer, off_x, init);
  CT_CL_TENSOR_ARGS(out_buffer, off_out, out);
  const ct_cl_arg args[] = {CT_CL_ARG(ix->plan_buffer),
                            CT_CL_ARG(idx_buffer),
                            CT_CL_ARG(off_idx),
                            CT_CL_ARG(v_buffer),
                            CT_CL_ARG(off_v),
                            CT_CL_ARG(x_buffer),
                            CT_CL_ARG(off_x),
                            CT_CL_ARG(out_buffer),
                            CT_CL_ARG(off_out),
                            CT_CL_ARG(n),
                            ct_cl_ix_alpha(ix->tag, alpha, &a)};
  return ct_cl_launch(&ix->exec, &ix->source, "ct_ix_scatter", (size_t)n, args,
                      (int)(sizeof args / sizeof *args));
}

/* ----- run functions ----- */

static int ct_cl_ix_scatter_run(const ct_kernel_call* call, ct_index_kind kind, int64_t param,
                                int reduction, double alpha) {
  const ct_tensor *x = call->inputs[0], *indices = call->inputs[1], *values = call->inputs[2];
  const ct_tensor* out = call->outputs[0];
  ct_cl_ix ix;
  int status = ct_cl_ix_begin(&ix, call, kind, param, x, indices);
  if (status != CT_OK) return status;
  ct_index_plan_x(&ix.plan, 0, out);
  ct_index_plan_x(&ix.plan, 1, x);
  ct_index_plan_w(&ix.plan, 1, values);
  status = ct_cl_ix_upload_and_check(&ix, call->schema->name, kind, indices);
  if (status == CT_OK) status = ct_cl_ix_scatter(&ix, indices, values, x, out, reduction, alpha);
  ct_cl_ix_end(&ix);
  return status;
}

static int ct_cl_put_along_axis_run(const ct_kernel_call* call) {
  return ct_cl_ix_scatter_run(call, CT_IP_ALONG_AXIS, call->attrs[0].value.i,
                              ct_index_reduction_of(call->attrs[1].value.s), 1.0);
}

static int ct_cl_scatter_nd_run(const ct_kernel_call* call) {
  return ct_cl_ix_scatter_run(call, CT_IP_ND, 0, ct_index_reduction_of(call->attrs[0].value.s),
                              1.0);
}

static int ct_cl_index_add_run(const ct_kernel_call* call) {
  return ct_cl_ix_scatter_run(call, CT_IP_SELECT, call->attrs[0].value.i, CT_IP_ADD,
                              call->attrs[1].value.f);
}

static int ct_cl_ix_gather_run(const ct_kernel_call* call, ct_index_kind kind, int64_t param) {
  const ct_tensor *x = call->inputs[0], *indices = call->inputs[1], *out = call->outputs[0];
  ct_cl_ix ix;
  int status = ct_cl_ix_begin(&ix, call, kind, param, x, indices);
  if (status != CT_OK) return status;
  ct_index_plan_x(&ix.plan, 0, x);
  ct_index_plan_w(&ix.plan, 1, out);
  status = ct_cl_ix_upload_and_check(&ix, call->schema->name, kind, indices);
  if (status == CT_OK) status = ct_cl_ix_gather(&ix, indices, x, out, 1.0);
  ct_cl_ix_end(&ix);
  return status;
}

static int ct_cl_gather_nd_run(const ct_kernel_call* call) {
  return ct_cl_ix_gather_run(call, CT_IP_ND, call->attrs[0].value.i);
}

static int ct_cl_index_select_run(const ct_kernel_call* call) {
  return ct_cl_ix_gather_run(call, CT_IP_SELECT, call->attrs[0].value.i);
}

/* gather_nd_backward, index_select_backward: grad_out added into zeros. */
static int ct_cl_ix_gather_backward_run(const ct_kernel_call* call, ct_index_kind kind,
                                        int64_t param) {
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1], *indices = call->inputs[2];
  const ct_tensor* grad_x = call->outputs[0];
  ct_cl_ix ix;
  int status = ct_cl_ix_begin(&ix, call, kind, param, x, indices);
  if (status != CT_OK) return status;
  ct_index_plan_x(&ix.plan, 0, grad_x);
  ct_index_plan_w(&ix.plan, 1, grad);
  status = ct_cl_ix_upload_and_check(&ix, call->schema->name, kind, indices);
  if (status == CT_OK) status = ct_cl_ix_scatter(&ix, indices, grad, NULL, grad_x, CT_IP_ADD, 1.0);
  ct_cl_ix_end(&ix);
  return status;
}

static int ct_cl_gather_nd_backward_run(const ct_kernel_call* call) {
  return ct_cl_ix_gather_backward_run(call, CT_IP_ND, call->attrs[0].value.i);
}

static int ct_cl_index_select_backward_run(const ct_kernel_call* call) {
  return ct_cl_ix_gather_backward_run(call, CT_IP_SELECT, call->attrs[0].value.i);
}

/* Launches ct_ix_grad_x (over x's elements) and, when grad_values is given, ct_ix_grad_values
 * (over W). X operands: grad_x, grad_out, x, out; W operand 1 the values, 2 grad_values. */
static int ct_cl_ix_grads(ct_cl_ix* ix, const ct_tensor* indices, const ct_tensor* values,
                          const ct_tensor* const xs[4], const ct_tensor* grad_values,
                          int reduction) {
  ct_cl_ix_source(ix, indices, reduction, false, false, 1);
  CT_CL_TENSOR_ARGS(idx_buffer, off_idx, indices);
  CT_CL_TENSOR_ARGS(v_buffer, off_v, values);
  CT_CL_TENSOR_ARGS(b0, o0, xs[0]);
  CT_CL_TENSOR_ARGS(b1, o1, xs[1]);
  CT_CL_TENSOR_ARGS(b2, o2, xs[2]);
  CT_CL_TENSOR_ARGS(b3, o3, xs[3]);
  int status = CT_OK;
  const int64_t nx = ct_pl_tensor_elements(xs[0]);
  if (nx > 0) {
    const ct_cl_arg args[] = {CT_CL_ARG(ix->plan_buffer),
                              CT_CL_ARG(idx_buffer),
                              CT_CL_ARG(off_idx),
                              CT_CL_ARG(v_buffer),
                              CT_CL_ARG(off_v),
                              CT_CL_ARG(b0),
                              CT_CL_ARG(o0),
                              CT_CL_ARG(b1),
                              CT_CL_ARG(o1),
                              CT_CL_ARG(b2),
                              CT_CL_ARG(o2),
                              CT_CL_ARG(b3),
                              CT_CL_ARG(o3),
                              CT_CL_ARG(nx)};
    status = ct_cl_launch(&ix->exec, &ix->source, "ct_ix_grad_x", (size_t)nx, args,
                          (int)(sizeof args / sizeof *args));
  }
  const int64_t nw = grad_values ? ct_pl_tensor_elements(grad_values) : 0;
  if (status == CT_OK && nw > 0) {
    CT_CL_TENSOR_ARGS(gv_buffer, off_gv, grad_values);
    const ct_cl_arg args[] = {CT_CL_ARG(ix->plan_buffer),
                              CT_CL_ARG(idx_buffer),
                              CT_CL_ARG(off_idx),
                              CT_CL_ARG(v_buffer),
                              CT_CL_ARG(off_v),
                              CT_CL_ARG(gv_buffer),
                              CT_CL_ARG(off_gv),
                              CT_CL_ARG(b1),
                              CT_CL_ARG(o1),
                              CT_CL_ARG(b2),
                              CT_CL_ARG(o2),
                              CT_CL_ARG(b3),
                              CT_CL_ARG(o3),
                              CT_CL_ARG(nw)};
    status = ct_cl_launch(&ix->exec, &ix->source, "ct_ix_grad_values", (size_t)nw, args,
                          (int)(sizeof args / sizeof *args));
  }
  return status;
}

/* put_along_axis_backward, scatter_nd_backward: inputs grad_out, x, indices, values, out. */
static int ct_cl_ix_scatter_backward_run(const ct_kernel_call* call, ct_index_kind kind,
                                         int64_t param, int reduction) {
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1], *indices = call->inputs[2];
  const ct_tensor* values = call->inputs[3];
  const ct_tensor* xs[4] = {call->outputs[0], grad, x, call->inputs[4]};
  ct_cl_ix ix;
  int status = ct_cl_ix_begin(&ix, call, kind, param, x, indices);
  if (status != CT_OK) return status;
  for (int o = 0; o < 4; ++o) ct_index_plan_x(&ix.plan, o, xs[o]);
  ct_index_plan_w(&ix.plan, 1, values);
  ct_index_plan_w(&ix.plan, 2, call->outputs[1]);
  status = ct_cl_ix_upload_and_check(&ix, call->schema->name, kind, indices);
  if (status == CT_OK) {
    status = ct_cl_ix_grads(&ix, indices, values, xs, call->outputs[1], reduction);
  }
  ct_cl_ix_end(&ix);
  return status;
}

static int ct_cl_put_along_axis_backward_run(const ct_kernel_call* call) {
  return ct_cl_ix_scatter_backward_run(call, CT_IP_ALONG_AXIS, call->attrs[0].value.i,
                                       ct_index_reduction_of(call->attrs[1].value.s));
}

static int ct_cl_scatter_nd_backward_run(const ct_kernel_call* call) {
  return ct_cl_ix_scatter_backward_run(call, CT_IP_ND, 0,
                                       ct_index_reduction_of(call->attrs[0].value.s));
}

/* index_add_backward: grad_source = alpha * grad_out at the indices (a gather from X operand 0
 * = grad_out), then grad_x = grad_out (ct_ix_grad_x with "add", on a plan whose X operand 0 is
 * grad_x and 1 grad_out). */
static int ct_cl_index_add_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1], *indices = call->inputs[2];
  const ct_tensor* grad_source = call->outputs[1];
  const ct_tensor* xs[4] = {call->outputs[0], grad, grad, grad};
  ct_cl_ix ix;
  int status = ct_cl_ix_begin(&ix, call, CT_IP_SELECT, call->attrs[0].value.i, x, indices);
  if (status != CT_OK) return status;
  ct_index_plan_x(&ix.plan, 0, grad);
  ct_index_plan_w(&ix.plan, 1, grad_source);
  status = ct_cl_ix_upload_and_check(&ix, call->schema->name, CT_IP_SELECT, indices);
  if (status == CT_OK)
    status = ct_cl_ix_gather(&ix, indices, grad, grad_source, call->attrs[1].value.f);
  ct_cl_ix_end(&ix);
  if (status != CT_OK) return status;
  for (int o = 0; o < 4; ++o) ct_index_plan_x(&ix.plan, o, xs[o]);
  ix.plan_buffer = NULL;
  status = ct_cl_meta_buffer(&ix.exec, (const int64_t*)&ix.plan, sizeof ix.plan / sizeof(int64_t),
                             &ix.plan_buffer);
  if (status == CT_OK) status = ct_cl_ix_grads(&ix, indices, grad_source, xs, NULL, CT_IP_ADD);
  ct_cl_ix_end(&ix);
  return status;
}

/* ----- registration ----- */

int ct_cl_register_scatter(void) {
  static const ct_pl_type indices[2] = {CT_PL_I32, CT_PL_I64};
  int status = CT_OK;
  for (int i = 0; i < 2 && status == CT_OK; ++i) {
    const ct_pl_type I = indices[i];
    for (int t = 0; t < CT_PL_TYPE_COUNT && status == CT_OK; ++t) {
      const ct_pl_type T = (ct_pl_type)t;
      const ct_pl_type scatter[4] = {T, I, T, T}, gather[3] = {T, I, T};
      status = ct_cl_register("put_along_axis", scatter, 4, ct_cl_put_along_axis_run, NULL, NULL);
      if (status == CT_OK) {
        status = ct_cl_register("scatter_nd", scatter, 4, ct_cl_scatter_nd_run, NULL, NULL);
      }
      if (status == CT_OK) {
        status = ct_cl_register("gather_nd", gather, 3, ct_cl_gather_nd_run, NULL, NULL);
      }
      if (status == CT_OK) {
        status = ct_cl_register("index_select", gather, 3, ct_cl_index_select_run, NULL, NULL);
      }
      if (status == CT_OK && T != CT_PL_B8) {
        status = ct_cl_register("index_add", scatter, 4, ct_cl_index_add_run, NULL, NULL);
      }
      if (status != CT_OK || !ct_pl_type_is_float(T)) continue;
      const ct_pl_type backward[7] = {T, T, I, T, T, T, T};
      const ct_pl_type gather_backward[4] = {T, T, I, T};
      const ct_pl_type add_backward[6] = {T, T, I, T, T, T};
      status = ct_cl_register("put_along_axis_backward", backward, 7,
                              ct_cl_put_along_axis_backward_run, NULL, NULL);
      if (status == CT_OK) {
        status = ct_cl_register("scatter_nd_backward", backward, 7, ct_cl_scatter_nd_backward_run,
                                NULL, NULL);
      }
      if (status == CT_OK) {
        status = ct_cl_register("gather_nd_backward", gather_backward, 4,
                                ct_cl_gather_nd_backward_run, NULL, NULL);
      }
      if (status == CT_OK) {
        status = ct_cl_register("index_select_backward", gather_backward, 4,
                                ct_cl_index_select_backward_run, NULL, NULL);
      }
      if (status == CT_OK) {
        status = ct_cl_register("index_add_backward", add_backward, 6, ct_cl_index_add_backward_run,
                                NULL, NULL);
      }
    }
  }
  return status;
}
