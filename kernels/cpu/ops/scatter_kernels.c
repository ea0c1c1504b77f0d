/* scatter_kernels.c - put_along_axis, gather_nd, scatter_nd, index_select, index_add and their
 * backward ops on the CPU, on the geometry of capi/ops/index_plan.h (positions w of a space W,
 * each addressing one element of x through direct dims and index components).
 *
 * Every kernel first checks every index (an index outside [-n, n) is CT_ERROR_INVALID_ARGUMENT
 * naming the op, the index and the bound; nothing is written). Then:
 * - gathers (gather_nd, index_select, index_add_backward's grad_source) copy one element per
 *   position, in parallel;
 * - scatters (put_along_axis, scatter_nd, index_add; gather_nd_backward and
 *   index_select_backward, which add into zeros) copy x to out and apply the positions, each
 *   element's in row-major order (threads take sets of elements no other thread writes):
 *   repeated indices resolve in that order (the last value wins for "none", sums and products
 *   accumulate in it), whatever the thread count, and in the order the OpenCL and CUDA kernels
 *   use; runs along W's last dim go through per-dtype run functions where the indices do not
 *   vary along them; float16 and bfloat16 instead accumulate each element
 *   in double over the positions landing on it (found as below), rounding once;
 * - the backward ops of the reductions none, multiply, max and min find, for each element of x
 *   (and for each position's element), the positions that land on it by a loop over W's reduced
 *   dims (index_plan.h), in parallel: their cost is x's elements times the reduced extent. */
#include <math.h>
#include <string.h>

#include "engine/int_div.h"
#include "cpu_register.h"
#include "engine/copy_loops.h"
#include "engine/cpu_dtypes.h"
#include "engine/strided_iter.h"
#include "ops/index_plan.h"

/* ----- per-dtype element functions ----- */

/* Runs of n elements (byte steps ds, ss; ds may be 0: every element lands on one): dst =
 * reduce(dst, src) in order for each reduction, and dst += alpha * src (index_add) at index
 * CT_IX_ADD_SCALED. */
#define CT_IX_ADD_SCALED 5
typedef void (*ct_ix_run_fn)(char* d, int64_t ds, const char* s, int64_t ss, int64_t n,
                             double alpha);

typedef struct ct_ix_dtype {
  int64_t size;
  ct_ix_run_fn run[6];
  double (*load)(const char* p); /* float dtypes: the value as a double */
  void (*store)(char* p, double v);
} ct_ix_dtype;

/* A run function from an element expression in a (dst's value), b (src's value), alpha. */
#define CT_IX_RUN(NAME, SFX, T, C, EXPR)                                                      \
  static void ct_ix_##NAME##_##SFX(char* d, int64_t ds, const char* s, int64_t ss, int64_t n, \
                                   double alpha) {                                            \
    (void)alpha;                                                                              \
    for (int64_t i = 0; i < n; ++i) {                                                         \
      T* dp = (T*)(d + i * ds);                                                               \
      const C a = ct_load_##SFX(*dp), b = ct_load_##SFX(*(const T*)(s + i * ss));             \
      (void)a;                                                                                \
      *dp = ct_store_##SFX(EXPR);                                                             \
    }                                                                                         \
  }

/* max and min as torch's scatter_reduce: a nan value wins; on ties the element keeps its value. */
#define CT_IX_COMMON_X(SFX, T, C)                       \
  CT_IX_RUN(none, SFX, T, C, b)                         \
  CT_IX_RUN(max, SFX, T, C, b != b ? b : a < b ? b : a) \
  CT_IX_RUN(min, SFX, T, C, b != b ? b : b < a ? b : a)

/* Integers add and multiply wrapping (in uint64_t: no undefined behaviour). */
#define CT_IX_WRAP(U, v) ((uint64_t)(U)(v))
#define CT_IX_INT_X(A, SFX, T, C, U, ID)                                                          \
  CT_IX_COMMON_X(SFX, T, C)                                                                       \
  CT_IX_RUN(add, SFX, T, C, (C)(U)(CT_IX_WRAP(U, a) + CT_IX_WRAP(U, b)))                          \
  CT_IX_RUN(multiply, SFX, T, C, (C)(U)(CT_IX_WRAP(U, a) * CT_IX_WRAP(U, b)))                     \
  CT_IX_RUN(add_scaled, SFX, T, C,                                                                \
            (C)(U)(CT_IX_WRAP(U, a) + (uint64_t)(int64_t)alpha * CT_IX_WRAP(U, b)))               \
  static const ct_ix_dtype ct_ix_dtype_##SFX = {                                                  \
      sizeof(T),                                                                                  \
      {ct_ix_none_##SFX, ct_ix_add_##SFX, ct_ix_multiply_##SFX, ct_ix_max_##SFX, ct_ix_min_##SFX, \
       ct_ix_add_scaled_##SFX},                                                                   \
      NULL,                                                                                       \
      NULL};
CT_CPU_INT_TYPES(CT_IX_INT_X, _)

#define CT_IX_FLOAT_X(A, SFX, T, C, U, ID)                                                        \
  CT_IX_COMMON_X(SFX, T, C)                                                                       \
  CT_IX_RUN(add, SFX, T, C, a + b)                                                                \
  CT_IX_RUN(multiply, SFX, T, C, a* b)                                                            \
  CT_IX_RUN(add_scaled, SFX, T, C, a + (C)alpha * b)                                              \
  static double ct_ix_load_##SFX(const char* p) {                                                 \
    return (double)ct_load_##SFX(*(const T*)p);                                                   \
  }                                                                                               \
  static void ct_ix_store_##SFX(char* p, double v) {                                              \
    *(T*)p = ct_store_##SFX((C)v);                                                                \
  }                                                                                               \
  static const ct_ix_dtype ct_ix_dtype_##SFX = {                                                  \
      sizeof(T),                                                                                  \
      {ct_ix_none_##SFX, ct_ix_add_##SFX, ct_ix_multiply_##SFX, ct_ix_max_##SFX, ct_ix_min_##SFX, \
       ct_ix_add_scaled_##SFX},                                                                   \
      ct_ix_load_##SFX,                                                                           \
      ct_ix_store_##SFX};
CT_CPU_FLOAT_TYPES(CT_IX_FLOAT_X, _)

/* bool: max is or, min is and (add and multiply are refused by the schema). */
CT_IX_COMMON_X(b8, uint8_t, ct_bool8)
static const ct_ix_dtype ct_ix_dtype_b8 = {
    1,
    {ct_ix_none_b8, ct_ix_max_b8, ct_ix_min_b8, ct_ix_max_b8, ct_ix_min_b8, ct_ix_max_b8},
    NULL,
    NULL};

/* ----- positions and their elements ----- */

/* A call's operands on a plan: the indices, base pointers of the W operands (1 and 2) and of the
 * X operands. */
typedef struct ct_ix_call {
  const ct_index_plan* p;
  const char* indices;
  bool index64;
  char* w[CT_IP_W_OPERANDS];
  char* x[CT_IP_X_OPERANDS];
  const ct_ix_dtype* dtype;
  int reduction;
  double alpha;
} ct_ix_call;

static inline int64_t ct_ix_read(const char* p, bool index64) {
  return index64 ? *(const int64_t*)p : (int64_t)*(const int32_t*)p;
}

static inline int64_t ct_ix_dot(const int64_t* c, const int64_t* s, int64_t n) {
  int64_t offset = 0;
  for (int64_t k = 0; k < n; ++k) offset += c[k] * s[k];
  return offset;
}

/* Coordinates of linear position `i` in row-major order over `shape`. */
static inline void ct_ix_unravel(int64_t i, int64_t ndim, const int64_t* shape, int64_t* c) {
  for (int64_t k = ndim - 1; k >= 0; --k) {
    c[k] = i % shape[k];
    i /= shape[k];
  }
}

/* Advances coordinates `c` over `shape` by one (row-major). */
static inline void ct_ix_next(int64_t ndim, const int64_t* shape, int64_t* c) {
  for (int64_t k = ndim - 1; k >= 0; --k) {
    if (++c[k] < shape[k]) return;
    c[k] = 0;
  }
}

/* The element of x (coordinates xc) that position wc lands on. */
static inline void ct_ix_target(const ct_ix_call* c, const int64_t* wc, int64_t* xc) {
  const ct_index_plan* p = c->p;
  for (int64_t k = 0; k < p->xnd; ++k) xc[k] = 0;
  for (int64_t u = 0; u < p->wnd; ++u) {
    if (p->w_xdim[u] >= 0) xc[p->w_xdim[u]] = wc[u];
  }
  const char* at = c->indices + ct_ix_dot(wc, p->w_strides[0], p->wnd);
  for (int64_t m = 0; m < p->components; ++m) {
    int64_t j = ct_ix_read(at + m * p->component_stride, c->index64);
    if (j < 0) j += p->extent[m];
    xc[p->comp_xdim[m]] = j;
  }
}

/* ----- the index check ----- */

static int ct_ix_check(const char* op, const ct_index_plan* p, ct_index_kind kind,
                       const ct_tensor* indices) {
  const int64_t n = ct_index_numel(indices->ndim, indices->shape);
  const int64_t components = ct_index_check_components(p, kind);
  int64_t strides[CT_MAX_NDIM], c[CT_MAX_NDIM] = {0};
  ct_index_byte_strides(indices, strides);
  const char* base = ct_tensor_base(indices);
  const bool index64 = indices->dtype.bits == 64;
  for (int64_t i = 0; i < n; ++i, ct_ix_next(indices->ndim, indices->shape, c)) {
    const int64_t j = ct_ix_read(base + ct_ix_dot(c, strides, indices->ndim), index64);
    const int64_t m = i % components, e = p->extent[m];
    if (j < -e || j >= e) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "%s: index %lld is out of range [%lld, %lld) for dimension %lld of x", op,
                          (long long)j, (long long)-e, (long long)e, (long long)p->comp_xdim[m]);
    }
  }
  return CT_OK;
}

/* ----- scatters: one thread, row-major order ----- */

/* out = x (any strides). */
static void ct_ix_copy(const ct_tensor* x, const ct_tensor* out) {
  const ct_tensor* operands[2] = {x, out};
  ct_cpu_iterate(2, operands, ct_cpu_copy_entry_of_size(ct_dtype_size(x->dtype))->loop, NULL);
}

/* The walk of W as runs along its last dim: per W dim, the byte step of X operand 0 through the
 * direct dims (dx), and the component offset of the indices at one position. */
typedef struct ct_ix_runs {
  int64_t dx[CT_MAX_NDIM];
  int64_t last;   /* W's last dim (a run), or -1 for a 0-d W (one run of one) */
  int64_t length; /* elements per run */
  int64_t count;  /* runs */
} ct_ix_runs;

static void ct_ix_runs_begin(const ct_ix_call* c, int o, ct_ix_runs* r) {
  const ct_index_plan* p = c->p;
  for (int64_t u = 0; u < p->wnd; ++u) {
    r->dx[u] = p->w_xdim[u] >= 0 ? p->x_strides[o][p->w_xdim[u]] : 0;
  }
  r->last = p->wnd - 1;
  r->length = p->wnd ? p->w_shape[r->last] : 1;
  r->count = r->length ? ct_index_numel(p->wnd, p->w_shape) / r->length : 0;
}

/* Byte offset into X operand `o` of the components read at indices byte offset `at`. */
static inline int64_t ct_ix_components(const ct_ix_call* c, int o, const char* at) {
  const ct_index_plan* p = c->p;
  int64_t offset = 0;
  for (int64_t m = 0; m < p->components; ++m) {
    int64_t j = ct_ix_read(at + m * p->component_stride, c->index64);
    if (j < 0) j += p->extent[m];
    offset += j * p->x_strides[o][p->comp_xdim[m]];
  }
  return offset;
}

/* Offsets of run `k`'s first position: X operand `o` through the direct dims, the indices, W
 * operand `w`. */
static void ct_ix_run_offsets(const ct_ix_call* c, const ct_ix_runs* r, int o, int w, int64_t k,
                              int64_t* x_offset, int64_t* index_offset, int64_t* w_offset) {
  const ct_index_plan* p = c->p;
  *x_offset = *index_offset = *w_offset = 0;
  for (int64_t u = r->last - 1; u >= 0; --u) {
    const int64_t q = k % p->w_shape[u];
    k /= p->w_shape[u];
    *x_offset += q * r->dx[u];
    *index_offset += q * p->w_strides[0][u];
    *w_offset += q * p->w_strides[w][u];
  }
}

/* A scatter split into tasks that never write the same element: positions whose direct dims
 * differ land on different elements, so the tasks are the coordinates of the direct dims before
 * the last (times chunks of the last dim when it is direct too); each task walks the reduced
 * dims before the last in row-major order, then its stretch of each run. Every element thus sees
 * the positions landing on it in row-major order, whatever the thread count. */
typedef struct ct_ix_scatter_job {
  const ct_ix_call* call;
  ct_ix_runs runs;
  int64_t direct[CT_MAX_NDIM], reduced[CT_MAX_NDIM]; /* outer W dims of each kind */
  int64_t num_direct, num_reduced, reduced_count;
  int64_t chunks, chunk; /* of the last dim, when it is direct */
} ct_ix_scatter_job;

/* Adds coordinate `k` (row-major over `dims`) to the offsets. */
static void ct_ix_add_offsets(const ct_ix_scatter_job* job, const int64_t* dims, int64_t count,
                              int64_t k, int64_t* xo, int64_t* io, int64_t* wo) {
  const ct_index_plan* p = job->call->p;
  for (int64_t d = count - 1; d >= 0; --d) {
    const int64_t u = dims[d], q = k % p->w_shape[u];
    k /= p->w_shape[u];
    *xo += q * job->runs.dx[u];
    *io += q * p->w_strides[0][u];
    *wo += q * p->w_strides[1][u];
  }
}

static void ct_ix_scatter_tasks(int64_t begin, int64_t end, void* context) {
  const ct_ix_scatter_job* job = context;
  const ct_ix_call* c = job->call;
  const ct_index_plan* p = c->p;
  const ct_ix_runs* r = &job->runs;
  const ct_ix_run_fn run = c->dtype->run[c->reduction < 0 ? CT_IX_ADD_SCALED : c->reduction];
  const int64_t dx = r->last >= 0 ? r->dx[r->last] : 0;
  const int64_t di = r->last >= 0 ? p->w_strides[0][r->last] : 0;
  const int64_t dw = r->last >= 0 ? p->w_strides[1][r->last] : 0;
  for (int64_t task = begin; task < end; ++task) {
    const int64_t outer = task / job->chunks, first = task % job->chunks * job->chunk;
    const int64_t stop = first + job->chunk < r->length ? first + job->chunk : r->length;
    int64_t xd = 0, id = 0, wd = 0;
    ct_ix_add_offsets(job, job->direct, job->num_direct, outer, &xd, &id, &wd);
    for (int64_t k = 0; k < job->reduced_count; ++k) {
      int64_t xo = xd, io = id, wo = wd;
      ct_ix_add_offsets(job, job->reduced, job->num_reduced, k, &xo, &io, &wo);
      if (di == 0) {
        run(c->x[0] + xo + first * dx + ct_ix_components(c, 0, c->indices + io), dx,
            c->w[1] + wo + first * dw, dw, stop - first, c->alpha);
        continue;
      }
      for (int64_t i = first; i < stop; ++i) {
        const int64_t at = xo + i * dx + ct_ix_components(c, 0, c->indices + io + i * di);
        run(c->x[0] + at, 0, c->w[1] + wo + i * dw, 0, 1, c->alpha);
      }
    }
  }
}

/* Applies every position to X operand 0 from W operand 1, each element's in row-major order. */
static void ct_ix_scatter(const ct_ix_call* c) {
  const ct_index_plan* p = c->p;
  ct_ix_scatter_job job;
  memset(&job, 0, sizeof job);
  job.call = c;
  ct_ix_runs_begin(c, 0, &job.runs);
  if (job.runs.count == 0) return;
  int64_t direct_count = 1;
  job.reduced_count = 1;
  for (int64_t u = 0; u < job.runs.last; ++u) {
    if (p->w_xdim[u] >= 0) {
      job.direct[job.num_direct++] = u;
      direct_count *= p->w_shape[u];
    } else {
      job.reduced[job.num_reduced++] = u;
      job.reduced_count *= p->w_shape[u];
    }
  }
  const bool last_direct = job.runs.last >= 0 && p->w_xdim[job.runs.last] >= 0;
  job.chunks = last_direct && job.runs.length >= 1024 ? 8 : 1;
  job.chunk = ct_div_up(job.runs.length, job.chunks);
  ct_cpu_parallel_for(direct_count * job.chunks,
                      ct_size_add(ct_size_mul(job.reduced_count, job.chunk), 8),
                      ct_ix_scatter_tasks, &job);
}

/* ----- gathers: W operand 1 (the output) = X operand 0 at each position, times alpha for
 * float dtypes when alpha != 1 ----- */

/* Copies n elements of `size` bytes with byte steps. */
static void ct_ix_copy_run(char* d, int64_t ds, const char* s, int64_t ss, int64_t n,
                           int64_t size) {
  if (ds == size && ss == size) {
    memcpy(d, s, (size_t)(n * size));
    return;
  }
  switch (size) {
    case 1:
      for (int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
      break;
    case 2:
      for (int64_t i = 0; i < n; ++i) *(uint16_t*)(d + i * ds) = *(const uint16_t*)(s + i * ss);
      break;
    case 4:
      for (int64_t i = 0; i < n; ++i) *(uint32_t*)(d + i * ds) = *(const uint32_t*)(s + i * ss);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) memcpy(d + i * ds, s + i * ss, (size_t)size);
      break;
  }
}

/* Positions [begin, end) in row-major order, run by run. */
static void ct_ix_gather_range(int64_t begin, int64_t end, void* context) {
  const ct_ix_call* c = context;
  const ct_index_plan* p = c->p;
  ct_ix_runs r;
  ct_ix_runs_begin(c, 0, &r);
  const int64_t size = c->dtype->size;
  const int64_t dx = r.last >= 0 ? r.dx[r.last] : 0;
  const int64_t di = r.last >= 0 ? p->w_strides[0][r.last] : 0;
  const int64_t dw = r.last >= 0 ? p->w_strides[1][r.last] : 0;
  for (int64_t position = begin; position < end;) {
    const int64_t k = position / r.length, first = position % r.length;
    const int64_t stop = end - k * r.length < r.length ? end - k * r.length : r.length;
    int64_t xo, io, wo;
    ct_ix_run_offsets(c, &r, 0, 1, k, &xo, &io, &wo);
    for (int64_t i = first; i < stop;) {
      /* a stretch whose indices are constant (the rest of the run when they do not vary) */
      const int64_t n = di == 0 ? stop - i : 1;
      const char* src = c->x[0] + xo + i * dx + ct_ix_components(c, 0, c->indices + io + i * di);
      char* dst = c->w[1] + wo + i * dw;
      if (c->alpha != 1.0) {
        for (int64_t e = 0; e < n; ++e) {
          c->dtype->store(dst + e * dw, c->alpha * c->dtype->load(src + e * dx));
        }
      } else {
        ct_ix_copy_run(dst, dw, src, dx, n, size);
      }
      i += n;
    }
    position = k * r.length + stop;
  }
}

static void ct_ix_gather(ct_ix_call* c) {
  const int64_t n = ct_index_numel(c->p->wnd, c->p->w_shape);
  if (n > 0) ct_cpu_parallel_for(n, 4, ct_ix_gather_range, c);
}

/* ----- the positions landing on one element ----- */

/* Calls visit(state, t, value pointer) for each position landing on element xc of x, in
 * row-major order (t: its index over the reduced dims; the value: W operand 1 there). */
typedef void (*ct_ix_visit_fn)(void* state, int64_t t, const char* value);

static void ct_ix_landing(const ct_ix_call* c, const int64_t* xc, ct_ix_visit_fn visit,
                          void* state) {
  const ct_index_plan* p = c->p;
  int64_t rdim[CT_MAX_NDIM], rshape[CT_MAX_NDIM], rc[CT_MAX_NDIM] = {0}, wc[CT_MAX_NDIM];
  int64_t nr = 0, total = 1;
  for (int64_t u = 0; u < p->wnd; ++u) {
    if (p->w_xdim[u] >= 0) {
      wc[u] = xc[p->w_xdim[u]];
    } else {
      rdim[nr] = u;
      rshape[nr++] = p->w_shape[u];
      total *= p->w_shape[u];
      wc[u] = 0;
    }
  }
  for (int64_t t = 0; t < total; ++t, ct_ix_next(nr, rshape, rc)) {
    for (int64_t r = 0; r < nr; ++r) wc[rdim[r]] = rc[r];
    const char* at = c->indices + ct_ix_dot(wc, p->w_strides[0], p->wnd);
    bool lands = true;
    for (int64_t m = 0; m < p->components && lands; ++m) {
      int64_t j = ct_ix_read(at + m * p->component_stride, c->index64);
      if (j < 0) j += p->extent[m];
      lands = j == xc[p->comp_xdim[m]];
    }
    if (lands) visit(state, t, c->w[1] + ct_ix_dot(wc, p->w_strides[1], p->wnd));
  }
}

/* Statistics of the positions landing on one element: how many, how many equal `match`, how
 * many are zero, the product of the values but the one at reduced position `skip` (-1: none),
 * and whether one comes after reduced position `after`. */
typedef struct ct_ix_group {
  const ct_ix_dtype* dtype;
  double match;
  int64_t skip, after;
  int64_t count, matches, zeros;
  double product;
  bool later;
} ct_ix_group;

static void ct_ix_group_visit(void* state, int64_t t, const char* value) {
  ct_ix_group* g = state;
  const double v = g->dtype->load(value);
  ++g->count;
  g->later |= t > g->after;
  g->matches += v == g->match;
  g->zeros += v == 0.0;
  if (t != g->skip) g->product *= v;
}

static void ct_ix_group_of(const ct_ix_call* c, const int64_t* xc, double match, int64_t skip,
                           int64_t after, ct_ix_group* g) {
  memset(g, 0, sizeof *g);
  g->dtype = c->dtype;
  g->match = match;
  g->skip = skip;
  g->after = after;
  g->product = 1.0;
  ct_ix_landing(c, xc, ct_ix_group_visit, g);
}

/* A scatter's result at one element, accumulated in double (float16 and bfloat16: rounded once,
 * as the OpenCL and CUDA kernels do, instead of at every step). */
typedef struct ct_ix_accumulator {
  const ct_ix_call* call;
  double value;
} ct_ix_accumulator;

static void ct_ix_accumulate_visit(void* state, int64_t t, const char* value) {
  (void)t;
  ct_ix_accumulator* a = state;
  const double v = a->call->dtype->load(value), r = a->value;
  switch (a->call->reduction) {
    case CT_IP_NONE:
      a->value = v;
      break;
    case CT_IP_ADD:
      a->value = r + a->call->alpha * v;
      break;
    case CT_IP_MULTIPLY:
      a->value = r * v;
      break;
    case CT_IP_MAX:
      a->value = v != v ? v : r < v ? v : r;
      break;
    default:
      a->value = v != v ? v : v < r ? v : r;
      break;
  }
}

/* X operand 0 = X operand 1 (zeros when absent) with the positions applied, per element. */
static void ct_ix_scatter_elements_range(int64_t begin, int64_t end, void* context) {
  const ct_ix_call* c = context;
  const ct_index_plan* p = c->p;
  int64_t xc[CT_MAX_NDIM];
  ct_ix_unravel(begin, p->xnd, p->x_shape, xc);
  for (int64_t i = begin; i < end; ++i, ct_ix_next(p->xnd, p->x_shape, xc)) {
    ct_ix_accumulator a = {c, 0.0};
    if (c->x[1]) a.value = c->dtype->load(c->x[1] + ct_ix_dot(xc, p->x_strides[1], p->xnd));
    ct_ix_landing(c, xc, ct_ix_accumulate_visit, &a);
    c->dtype->store(c->x[0] + ct_ix_dot(xc, p->x_strides[0], p->xnd), a.value);
  }
}

/* Scatters a float16 or bfloat16 call element by element (see ct_ix_scatter_elements_range);
 * false for other dtypes, which take ct_ix_scatter. */
static bool ct_ix_scatter_half(ct_ix_call* c) {
  if (!c->dtype->load || c->dtype->size != 2) return false;
  if (c->reduction < 0) c->reduction = CT_IP_ADD;
  const ct_index_plan* p = c->p;
  int64_t reduced = 1;
  for (int64_t u = 0; u < p->wnd; ++u) reduced *= p->w_xdim[u] < 0 ? p->w_shape[u] : 1;
  const int64_t n = ct_index_numel(p->xnd, p->x_shape);
  if (n > 0)
    ct_cpu_parallel_for(n, ct_size_add(16, ct_size_mul(8, reduced)), ct_ix_scatter_elements_range,
                        c);
  return true;
}

/* Reduced position (row-major over the reduced dims) of position wc. */
static int64_t ct_ix_reduced_index(const ct_index_plan* p, const int64_t* wc) {
  int64_t t = 0;
  for (int64_t u = 0; u < p->wnd; ++u) {
    if (p->w_xdim[u] < 0) t = t * p->w_shape[u] + wc[u];
  }
  return t;
}

/* Backward of put_along_axis / scatter_nd. X operands: 0 grad_x, 1 grad_out, 2 x, 3 out; W
 * operands: 1 the values, 2 grad_values. */
static void ct_ix_grad_x_range(int64_t begin, int64_t end, void* context) {
  const ct_ix_call* c = context;
  const ct_index_plan* p = c->p;
  const ct_ix_dtype* d = c->dtype;
  int64_t xc[CT_MAX_NDIM];
  ct_ix_unravel(begin, p->xnd, p->x_shape, xc);
  for (int64_t i = begin; i < end; ++i, ct_ix_next(p->xnd, p->x_shape, xc)) {
    const double g = d->load(c->x[1] + ct_ix_dot(xc, p->x_strides[1], p->xnd));
    const double xv = d->load(c->x[2] + ct_ix_dot(xc, p->x_strides[2], p->xnd));
    const double ov = d->load(c->x[3] + ct_ix_dot(xc, p->x_strides[3], p->xnd));
    double r = g;
    if (c->reduction != CT_IP_ADD) {
      ct_ix_group group;
      ct_ix_group_of(c, xc, ov, -1, INT64_MAX, &group);
      switch (c->reduction) {
        case CT_IP_NONE:
          r = group.count ? 0.0 : g;
          break;
        case CT_IP_MULTIPLY:
          r = xv != 0.0 ? g * ov / xv : g * group.product;
          break;
        default:
          r = xv == ov ? g / (double)(1 + group.matches) : 0.0;
          break;
      }
    }
    d->store(c->x[0] + ct_ix_dot(xc, p->x_strides[0], p->xnd), r);
  }
}

static void ct_ix_grad_values_range(int64_t begin, int64_t end, void* context) {
  const ct_ix_call* c = context;
  const ct_index_plan* p = c->p;
  const ct_ix_dtype* d = c->dtype;
  int64_t wc[CT_MAX_NDIM], xc[CT_MAX_NDIM];
  ct_ix_unravel(begin, p->wnd, p->w_shape, wc);
  for (int64_t i = begin; i < end; ++i, ct_ix_next(p->wnd, p->w_shape, wc)) {
    ct_ix_target(c, wc, xc);
    const double g = d->load(c->x[1] + ct_ix_dot(xc, p->x_strides[1], p->xnd));
    const double v = d->load(c->w[1] + ct_ix_dot(wc, p->w_strides[1], p->wnd));
    double r = g;
    if (c->reduction != CT_IP_ADD) {
      const double xv = d->load(c->x[2] + ct_ix_dot(xc, p->x_strides[2], p->xnd));
      const double ov = d->load(c->x[3] + ct_ix_dot(xc, p->x_strides[3], p->xnd));
      const int64_t t = ct_ix_reduced_index(p, wc);
      ct_ix_group group;
      ct_ix_group_of(c, xc, ov, t, t, &group);
      switch (c->reduction) {
        case CT_IP_NONE:
          r = group.later ? 0.0 : g;
          break;
        case CT_IP_MULTIPLY:
          r = v != 0.0 ? g * ov / v : group.zeros == 1 ? g * xv * group.product : 0.0;
          break;
        default:
          r = v == ov ? g / (double)((xv == ov) + group.matches) : 0.0;
          break;
      }
    }
    d->store(c->w[2] + ct_ix_dot(wc, p->w_strides[2], p->wnd), r);
  }
}

/* ----- run functions ----- */

static void ct_ix_call_begin(ct_ix_call* c, const ct_index_plan* p, const ct_kernel_call* call,
                             const ct_tensor* indices) {
  memset(c, 0, sizeof *c);
  c->p = p;
  c->indices = ct_tensor_base(indices);
  c->index64 = indices->dtype.bits == 64;
  c->dtype = call->kernel_data;
  c->alpha = 1.0;
}

static bool ct_ix_empty(const ct_tensor* t) {
  return ct_index_numel(t->ndim, t->shape) == 0;
}

/* Forward scatters: inputs x, indices, values; out. */
static int ct_ix_scatter_run(const ct_kernel_call* call, ct_index_kind kind, int64_t param,
                             int reduction, double alpha) {
  const ct_tensor *x = call->inputs[0], *indices = call->inputs[1], *values = call->inputs[2];
  const ct_tensor* out = call->outputs[0];
  ct_index_plan p;
  ct_index_plan_begin(&p, kind, x, indices, param);
  int status = ct_ix_check(call->schema->name, &p, kind, indices);
  if (status != CT_OK) return status;
  if (ct_ix_empty(out)) return CT_OK;
  ct_index_plan_x(&p, 0, out);
  ct_index_plan_x(&p, 1, x);
  ct_index_plan_w(&p, 1, values);
  ct_ix_call c;
  ct_ix_call_begin(&c, &p, call, indices);
  c.x[0] = ct_tensor_base(out);
  c.x[1] = ct_tensor_base(x);
  c.w[1] = ct_tensor_base(values);
  c.reduction = reduction;
  c.alpha = alpha;
  if (ct_ix_scatter_half(&c)) return CT_OK;
  ct_ix_copy(x, out);
  ct_ix_scatter(&c);
  return CT_OK;
}

static int ct_cpu_put_along_axis_run(const ct_kernel_call* call) {
  return ct_ix_scatter_run(call, CT_IP_ALONG_AXIS, call->attrs[0].value.i,
                           ct_index_reduction_of(call->attrs[1].value.s), 1.0);
}

static int ct_cpu_scatter_nd_run(const ct_kernel_call* call) {
  return ct_ix_scatter_run(call, CT_IP_ND, 0, ct_index_reduction_of(call->attrs[0].value.s), 1.0);
}

static int ct_cpu_index_add_run(const ct_kernel_call* call) {
  return ct_ix_scatter_run(call, CT_IP_SELECT, call->attrs[0].value.i, -1, call->attrs[1].value.f);
}

/* Forward gathers: inputs x, indices; out. */
static int ct_ix_gather_run(const ct_kernel_call* call, ct_index_kind kind, int64_t param) {
  const ct_tensor *x = call->inputs[0], *indices = call->inputs[1], *out = call->outputs[0];
  ct_index_plan p;
  ct_index_plan_begin(&p, kind, x, indices, param);
  int status = ct_ix_check(call->schema->name, &p, kind, indices);
  if (status != CT_OK) return status;
  ct_index_plan_x(&p, 0, x);
  ct_index_plan_w(&p, 1, out);
  ct_ix_call c;
  ct_ix_call_begin(&c, &p, call, indices);
  c.x[0] = ct_tensor_base(x);
  c.w[1] = ct_tensor_base(out);
  ct_ix_gather(&c);
  return CT_OK;
}

static int ct_cpu_gather_nd_run(const ct_kernel_call* call) {
  return ct_ix_gather_run(call, CT_IP_ND, call->attrs[0].value.i);
}

static int ct_cpu_index_select_run(const ct_kernel_call* call) {
  return ct_ix_gather_run(call, CT_IP_SELECT, call->attrs[0].value.i);
}

/* Writes zeros into t. */
static void ct_ix_zero(const ct_tensor* t, const ct_ix_dtype* d) {
  int64_t c[CT_MAX_NDIM] = {0}, s[CT_MAX_NDIM];
  ct_index_byte_strides(t, s);
  const int64_t n = ct_index_numel(t->ndim, t->shape);
  char* base = ct_tensor_base(t);
  for (int64_t i = 0; i < n; ++i, ct_ix_next(t->ndim, t->shape, c)) {
    d->store(base + ct_ix_dot(c, s, t->ndim), 0.0);
  }
}

/* gather_nd_backward, index_select_backward: inputs grad_out, x, indices; grad_out added into
 * zeros (one thread, row-major order). */
static int ct_ix_gather_backward_run(const ct_kernel_call* call, ct_index_kind kind,
                                     int64_t param) {
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1], *indices = call->inputs[2];
  const ct_tensor* grad_x = call->outputs[0];
  ct_index_plan p;
  ct_index_plan_begin(&p, kind, x, indices, param);
  int status = ct_ix_check(call->schema->name, &p, kind, indices);
  if (status != CT_OK) return status;
  ct_ix_call c;
  ct_ix_call_begin(&c, &p, call, indices);
  ct_index_plan_x(&p, 0, grad_x);
  ct_index_plan_w(&p, 1, grad);
  c.x[0] = ct_tensor_base(grad_x);
  c.w[1] = ct_tensor_base(grad);
  c.reduction = CT_IP_ADD;
  if (ct_ix_scatter_half(&c)) return CT_OK;
  ct_ix_zero(grad_x, c.dtype);
  ct_ix_scatter(&c);
  return CT_OK;
}

static int ct_cpu_gather_nd_backward_run(const ct_kernel_call* call) {
  return ct_ix_gather_backward_run(call, CT_IP_ND, call->attrs[0].value.i);
}

static int ct_cpu_index_select_backward_run(const ct_kernel_call* call) {
  return ct_ix_gather_backward_run(call, CT_IP_SELECT, call->attrs[0].value.i);
}

/* index_add_backward: inputs grad_out, x, indices, source; grad_x = grad_out, grad_source =
 * alpha * grad_out at the indices. */
static int ct_cpu_index_add_backward_run(const ct_kernel_call* call) {
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1], *indices = call->inputs[2];
  ct_index_plan p;
  ct_index_plan_begin(&p, CT_IP_SELECT, x, indices, call->attrs[0].value.i);
  int status = ct_ix_check(call->schema->name, &p, CT_IP_SELECT, indices);
  if (status != CT_OK) return status;
  if (!ct_ix_empty(grad)) ct_ix_copy(grad, call->outputs[0]);
  ct_index_plan_x(&p, 0, grad);
  ct_index_plan_w(&p, 1, call->outputs[1]);
  ct_ix_call c;
  ct_ix_call_begin(&c, &p, call, indices);
  c.x[0] = ct_tensor_base(grad);
  c.w[1] = ct_tensor_base(call->outputs[1]);
  c.alpha = call->attrs[1].value.f;
  ct_ix_gather(&c);
  return CT_OK;
}

/* put_along_axis_backward, scatter_nd_backward: inputs grad_out, x, indices, values, out;
 * outputs grad_x, grad_values. */
static int ct_ix_scatter_backward_run(const ct_kernel_call* call, ct_index_kind kind, int64_t param,
                                      int reduction) {
  const ct_tensor *grad = call->inputs[0], *x = call->inputs[1], *indices = call->inputs[2];
  ct_index_plan p;
  ct_index_plan_begin(&p, kind, x, indices, param);
  int status = ct_ix_check(call->schema->name, &p, kind, indices);
  if (status != CT_OK) return status;
  const ct_tensor* xs[4] = {call->outputs[0], grad, x, call->inputs[4]};
  ct_ix_call c;
  ct_ix_call_begin(&c, &p, call, indices);
  for (int o = 0; o < 4; ++o) {
    ct_index_plan_x(&p, o, xs[o]);
    c.x[o] = ct_tensor_base(xs[o]);
  }
  ct_index_plan_w(&p, 1, call->inputs[3]);
  ct_index_plan_w(&p, 2, call->outputs[1]);
  c.w[1] = ct_tensor_base(call->inputs[3]);
  c.w[2] = ct_tensor_base(call->outputs[1]);
  c.reduction = reduction;
  const int64_t nx = ct_index_numel(p.xnd, p.x_shape), nw = ct_index_numel(p.wnd, p.w_shape);
  int64_t reduced = 1;
  for (int64_t u = 0; u < p.wnd; ++u) reduced *= p.w_xdim[u] < 0 ? p.w_shape[u] : 1;
  const int64_t cost = reduction == CT_IP_ADD ? 16 : 16 + 8 * reduced;
  if (nx > 0) ct_cpu_parallel_for(nx, cost, ct_ix_grad_x_range, &c);
  if (nw > 0) ct_cpu_parallel_for(nw, cost, ct_ix_grad_values_range, &c);
  return CT_OK;
}

static int ct_cpu_put_along_axis_backward_run(const ct_kernel_call* call) {
  return ct_ix_scatter_backward_run(call, CT_IP_ALONG_AXIS, call->attrs[0].value.i,
                                    ct_index_reduction_of(call->attrs[1].value.s));
}

static int ct_cpu_scatter_nd_backward_run(const ct_kernel_call* call) {
  return ct_ix_scatter_backward_run(call, CT_IP_ND, 0,
                                    ct_index_reduction_of(call->attrs[0].value.s));
}

/* ----- registration ----- */

#define CT_IX_FORWARD_REG(SFX, ID, I)                                                          \
  {"put_along_axis", 4, {ID, I, ID, ID}, ct_cpu_put_along_axis_run, NULL, &ct_ix_dtype_##SFX}, \
      {"scatter_nd", 4, {ID, I, ID, ID}, ct_cpu_scatter_nd_run, NULL, &ct_ix_dtype_##SFX},     \
      {"gather_nd", 3, {ID, I, ID}, ct_cpu_gather_nd_run, NULL, &ct_ix_dtype_##SFX},           \
      {"index_select", 3, {ID, I, ID}, ct_cpu_index_select_run, NULL, &ct_ix_dtype_##SFX},
#define CT_IX_ALL_X(A, SFX, T, C, U, ID) CT_IX_FORWARD_REG(SFX, ID, A)
#define CT_IX_ADD_X(A, SFX, T, C, U, ID) \
  {"index_add", 4, {ID, A, ID, ID}, ct_cpu_index_add_run, NULL, &ct_ix_dtype_##SFX},
#define CT_IX_GRAD_X(A, SFX, T, C, U, ID)                                 \
  {"put_along_axis_backward",          7,    {ID, ID, A, ID, ID, ID, ID}, \
   ct_cpu_put_along_axis_backward_run, NULL, &ct_ix_dtype_##SFX},         \
      {"scatter_nd_backward",          7,    {ID, ID, A, ID, ID, ID, ID}, \
       ct_cpu_scatter_nd_backward_run, NULL, &ct_ix_dtype_##SFX},         \
      {"gather_nd_backward",          4,    {ID, ID, A, ID},              \
       ct_cpu_gather_nd_backward_run, NULL, &ct_ix_dtype_##SFX},          \
      {"index_select_backward",          4,    {ID, ID, A, ID},           \
       ct_cpu_index_select_backward_run, NULL, &ct_ix_dtype_##SFX},       \
      {"index_add_backward",          6,    {ID, ID, A, ID, ID, ID},      \
       ct_cpu_index_add_backward_run, NULL, &ct_ix_dtype_##SFX},

static const ct_cpu_kernel ct_cpu_scatter_kernels[] = {
    CT_CPU_ALL_TYPES(CT_IX_ALL_X, CT_DT_I32) CT_CPU_ALL_TYPES(CT_IX_ALL_X, CT_DT_I64)
        CT_CPU_NUMERIC_TYPES(CT_IX_ADD_X, CT_DT_I32) CT_CPU_NUMERIC_TYPES(CT_IX_ADD_X, CT_DT_I64)
            CT_CPU_FLOAT_TYPES(CT_IX_GRAD_X, CT_DT_I32)
                CT_CPU_FLOAT_TYPES(CT_IX_GRAD_X, CT_DT_I64)};

int ct_cpu_register_scatter(void) {
  return ct_cpu_register_all(ct_cpu_scatter_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_scatter_kernels));
}
