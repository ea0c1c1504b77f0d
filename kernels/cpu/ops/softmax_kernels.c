/* softmax_kernels.c - softmax and log_softmax along one axis: exp(x - max) / sum(exp(x - max))
 * and x - max - log(sum(exp(x - max))), as torch.nn.functional.softmax / log_softmax (one body).
 *
 * float16/bfloat16/float32 compute in float (exp in float), float64 in double; sums accumulate
 * in double. Contiguous float32 lanes run the explicitly vectorised loops of vector_math.h. A nan
 * anywhere in a lane makes the whole lane nan (the maximum propagates nan), and a lane of -inf only
 * gives nan (-inf - -inf), as torch.
 *
 * Plan: the dims other than the axis are "lanes". When some lane dim is finer in memory than the
 * axis (softmax over an outer axis), a task handles up to CT_SOFTMAX_CHUNK lanes along that dim
 * at once, reading whole rows (vector mode); otherwise a task is one lane (scalar mode). Each
 * task makes three passes over its axis range: maximum, sum of exponentials (float32/float64
 * store the exponentials in the output on the way), scaled output. Few large tasks (a long
 * axis) cut the axis into pieces whose maxima and sums are computed in parallel and combined in
 * order. Choices depend on shapes only, so results do not depend on the thread count. Nothing is
 * allocated: per-task maxima, sums and scratch, and the pieces' partial results, live in bounded
 * stack buffers (under 16 KB a thread). */
#include <math.h>
#include <stdint.h>

#include "engine/int_div.h"
#include "engine/cpu_dtypes.h"
#include "cpu_register.h"
#include "engine/reduce_layout.h"
#include "engine/strided_iter.h"
#include "engine/stream_store.h"
#include "math/vector_math.h"

#define CT_SOFTMAX_CHUNK 256      /* most lanes a task: 3 x 2 KB of maxima, sums, scratch */
#define CT_SOFTMAX_SPLIT_CHUNK 64 /* most lanes a split task (8 pieces of partials) */
#define CT_SOFTMAX_BLOCK 128      /* rows summed into a partial before joining the total */
#define CT_SOFTMAX_FEW_TASKS 8
#define CT_SOFTMAX_PIECE 16384
#define CT_SOFTMAX_MAX_PIECES 64
#define CT_SOFTMAX_PARTIALS 512 /* pieces x lanes of partial maxima and sums (8 KB) */
#define CT_SOFTMAX_COST 8       /* an exp costs about this many additions */

/* ----- exponentials ----- */

/* float: the scalar copy of vector_math's exp (vector_math.h), so that strided and low-precision
 * lanes compute what the generic vector set computes. */
static inline float ct_exp_float(float v) {
  return ct_exp_f32(v);
}
static inline double ct_exp_double(double v) {
  return exp(v);
}

/* One block of work: rows [ib, ie) of `lanes` lanes. Byte strides: sx/so between rows (the
 * axis), lx/lo between lanes. Maxima are in the compute type C, sums in double. */
typedef struct ct_softmax_block {
  const char* x;
  char* out;
  int64_t sx, so, lx, lo;
  int64_t lanes;
  double* scratch; /* room for `lanes` doubles */
} ct_softmax_block;

typedef struct ct_softmax_fns {
  int64_t max_size;                       /* sizeof(C) */
  int vector_rows;                        /* float32: 1 + LOG (ct_softmax_row_f32), else 0 */
  void (*lowest)(void* m, int64_t lanes); /* m[j] = -inf */
  void (*max)(const ct_softmax_block* b, int64_t ib, int64_t ie, void* m);
  void (*sum)(const ct_softmax_block* b, int64_t ib, int64_t ie, const void* m, double* s);
  void (*scale)(const ct_softmax_block* b, int64_t ib, int64_t ie, const void* m, const double* s);
  void (*combine_max)(void* m, const void* other, int64_t lanes);
} ct_softmax_fns;

/* Independent double accumulators of a single lane's sum of exponentials (vectorisable, and
 * more accurate than one running sum). */
#define CT_SOFTMAX_WIDTH 16

/* Sum of exponentials along one lane of LEN elements, XAT/OAT the input/output element ct_i;
 * the exponentials are stored when REUSE. Adds the sum to TOTAL. */
#define CT_SOFTMAX_LANE_SUM(SFX, T, C, LEN, XAT, OAT, MX, REUSE, TOTAL)            \
  do {                                                                             \
    double ct_acc[CT_SOFTMAX_WIDTH] = {0.0};                                       \
    int64_t ct_b = 0;                                                              \
    for (; ct_b + CT_SOFTMAX_WIDTH <= (LEN); ct_b += CT_SOFTMAX_WIDTH) {           \
      for (int ct_k = 0; ct_k < CT_SOFTMAX_WIDTH; ++ct_k) {                        \
        const int64_t ct_i = ct_b + ct_k;                                          \
        const C ct_e = ct_exp_##C(ct_load_##SFX(XAT) - (MX));                      \
        if (REUSE) OAT = (T)ct_e;                                                  \
        ct_acc[ct_k] += (double)ct_e;                                              \
      }                                                                            \
    }                                                                              \
    for (int64_t ct_i = ct_b; ct_i < (LEN); ++ct_i) {                              \
      const C ct_e = ct_exp_##C(ct_load_##SFX(XAT) - (MX));                        \
      if (REUSE) OAT = (T)ct_e;                                                    \
      ct_acc[0] += (double)ct_e;                                                   \
    }                                                                              \
    for (int ct_w = CT_SOFTMAX_WIDTH / 2; ct_w > 0; ct_w /= 2) {                   \
      for (int ct_k = 0; ct_k < ct_w; ++ct_k) ct_acc[ct_k] += ct_acc[ct_k + ct_w]; \
    }                                                                              \
    (TOTAL) += ct_acc[0];                                                          \
  } while (0)

/* One row of the vector mode: exponentials of lanes j (XAT/OAT element j) into PART[j]. */
#define CT_SOFTMAX_ROW_SUM(SFX, T, C, LANES, XAT, OAT, MAX, REUSE, PART) \
  for (int64_t j = 0; j < (LANES); ++j) {                                \
    const C ct_e = ct_exp_##C(ct_load_##SFX(XAT) - (MAX)[j]);            \
    if (REUSE) OAT = (T)ct_e;                                            \
    (PART)[j] += (double)ct_e;                                           \
  }

/* Output elements: OAT = e * inv, e read back from the output when REUSE, else recomputed. */
#define CT_SOFTMAX_SCALE(SFX, T, C, FIRST, END, XAT, OAT, MX, INV, REUSE, LOG) \
  for (int64_t ct_i = (FIRST); ct_i < (END); ++ct_i) {                         \
    C ct_r;                                                                    \
    if (LOG) {                                                                 \
      ct_r = (ct_load_##SFX(XAT) - (MX)) - (INV);                              \
    } else {                                                                   \
      const C ct_e = (REUSE) ? (C)OAT : ct_exp_##C(ct_load_##SFX(XAT) - (MX)); \
      ct_r = ct_e * (INV);                                                     \
    }                                                                          \
    OAT = ct_store_##SFX(ct_r);                                                \
  }

/* Whether a dtype's contiguous single lanes take the vector_math loops (float32 only). */
#define CT_SOFTMAX_VECTOR_f16 0
#define CT_SOFTMAX_VECTOR_bf16 0
#define CT_SOFTMAX_VECTOR_f32 1
#define CT_SOFTMAX_VECTOR_f64 0

/* One body for softmax (LOG 0: out = exp(x - max) / sum) and log_softmax (LOG 1: out =
 * x - max - log(sum)); only the final step differs.
 * REUSE (softmax only): the output holds the compute type exactly (float32, float64), so pass 2
 * leaves exp(x - max) there and pass 3 rescales it; float16/bfloat16 recompute it in pass 3. */
#define CT_SOFTMAX_FAMILY(OP, SFX, T, C, LOG)                                                     \
  static void ct_##OP##_##SFX##_lowest(void* m, int64_t lanes) {                                  \
    C* a = m;                                                                                     \
    for (int64_t j = 0; j < lanes; ++j) a[j] = (C) - INFINITY;                                    \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_max(const ct_softmax_block* b, int64_t ib, int64_t ie, \
                                               void* m) {                                         \
    C* a = m;                                                                                     \
    if (b->lanes == 1) {                                                                          \
      C r = a[0];                                                                                 \
      const char* base = b->x + ib * b->sx;                                                       \
      if (CT_SOFTMAX_VECTOR_##SFX && b->sx == (int64_t)sizeof(T)) {                               \
        const C v = (C)ct_vector_math_get()->max_f32((const float*)base, ie - ib);                \
        r = CT_NAN_MAX(r, v);                                                                     \
      } else if (b->sx == (int64_t)sizeof(T)) {                                                   \
        const T* p = (const T*)base;                                                              \
        CT_NANMAX_LOOP(C, ie - ib, ct_load_##SFX(p[ct_i]), r);                                    \
      } else {                                                                                    \
        CT_NANMAX_LOOP(C, ie - ib, ct_load_##SFX(*(const T*)(base + ct_i * b->sx)), r);           \
      }                                                                                           \
      a[0] = r;                                                                                   \
      return;                                                                                     \
    }                                                                                             \
    for (int64_t i = ib; i < ie; ++i) {                                                           \
      const char* row = b->x + i * b->sx;                                                         \
      if (b->lx == (int64_t)sizeof(T)) {                                                          \
        const T* p = (const T*)row;                                                               \
        for (int64_t j = 0; j < b->lanes; ++j) {                                                  \
          const C v = ct_load_##SFX(p[j]);                                                        \
          a[j] = CT_NAN_MAX(a[j], v);                                                             \
        }                                                                                         \
      } else {                                                                                    \
        for (int64_t j = 0; j < b->lanes; ++j) {                                                  \
          const C v = ct_load_##SFX(*(const T*)(row + j * b->lx));                                \
          a[j] = CT_NAN_MAX(a[j], v);                                                             \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_sum(const ct_softmax_block* b, int64_t ib, int64_t ie, \
                                               const void* m, double* s) {                        \
    const C* a = m;                                                                               \
    const int reuse = !(LOG) && sizeof(T) == sizeof(C);                                           \
    if (b->lanes == 1) {                                                                          \
      const C mx = a[0];                                                                          \
      const int64_t sx = b->sx, so = b->so, len = ie - ib;                                        \
      const char* xb = b->x + ib * sx;                                                            \
      char* ob = b->out + ib * so;                                                                \
      if (CT_SOFTMAX_VECTOR_##SFX && sx == (int64_t)sizeof(T) && so == (int64_t)sizeof(T)) {      \
        s[0] += ct_vector_math_get()->exp_sum_f32((const float*)xb, reuse ? (float*)ob : NULL,    \
                                                  len, (float)mx);                                \
      } else if (sx == (int64_t)sizeof(T) && so == (int64_t)sizeof(T)) {                          \
        const T* xp = (const T*)xb;                                                               \
        T* op = (T*)ob;                                                                           \
        CT_SOFTMAX_LANE_SUM(SFX, T, C, len, xp[ct_i], op[ct_i], mx, reuse, s[0]);                 \
      } else {                                                                                    \
        CT_SOFTMAX_LANE_SUM(SFX, T, C, len, *(const T*)(xb + ct_i * sx), *(T*)(ob + ct_i * so),   \
                            mx, reuse, s[0]);                                                     \
      }                                                                                           \
      return;                                                                                     \
    }                                                                                             \
    double* part = b->scratch;                                                                    \
    for (int64_t i0 = ib; i0 < ie; i0 += CT_SOFTMAX_BLOCK) {                                      \
      const int64_t i1 = ie - i0 < CT_SOFTMAX_BLOCK ? ie : i0 + CT_SOFTMAX_BLOCK;                 \
      for (int64_t j = 0; j < b->lanes; ++j) part[j] = 0.0;                                       \
      for (int64_t i = i0; i < i1; ++i) {                                                         \
        const char* xr = b->x + i * b->sx;                                                        \
        char* orow = b->out + i * b->so;                                                          \
        if (b->lx == (int64_t)sizeof(T) && b->lo == (int64_t)sizeof(T)) {                         \
          const T* xp = (const T*)xr;                                                             \
          T* op = (T*)orow;                                                                       \
          CT_SOFTMAX_ROW_SUM(SFX, T, C, b->lanes, xp[j], op[j], a, reuse, part)                   \
        } else {                                                                                  \
          CT_SOFTMAX_ROW_SUM(SFX, T, C, b->lanes, *(const T*)(xr + j * b->lx),                    \
                             *(T*)(orow + j * b->lo), a, reuse, part)                             \
        }                                                                                         \
      }                                                                                           \
      for (int64_t j = 0; j < b->lanes; ++j) s[j] += part[j];                                     \
    }                                                                                             \
  }                                                                                               \
  CT_CPU_HOT static void ct_##OP##_##SFX##_scale(const ct_softmax_block* b, int64_t ib,           \
                                                 int64_t ie, const void* m, const double* s) {    \
    const C* a = m;                                                                               \
    const int reuse = !(LOG) && sizeof(T) == sizeof(C);                                           \
    C* inv = (C*)b->scratch;                                                                      \
    for (int64_t j = 0; j < b->lanes; ++j) inv[j] = (C)((LOG) ? log(s[j]) : 1.0 / s[j]);          \
    if (b->lanes == 1) {                                                                          \
      const int64_t sx = b->sx, so = b->so;                                                       \
      if (CT_SOFTMAX_VECTOR_##SFX && sx == (int64_t)sizeof(T) && so == (int64_t)sizeof(T)) {      \
        const ct_vector_math* vm = ct_vector_math_get();                                          \
        float* op = (float*)b->out + ib;                                                          \
        if (LOG) {                                                                                \
          vm->subtract2_f32((const float*)b->x + ib, op, ie - ib, (float)a[0], (float)inv[0], 0); \
        } else {                                                                                  \
          vm->scale_f32(op, op, ie - ib, (float)inv[0], 0);                                       \
        }                                                                                         \
      } else if (sx == (int64_t)sizeof(T) && so == (int64_t)sizeof(T)) {                          \
        const T* xp = (const T*)b->x;                                                             \
        T* op = (T*)b->out;                                                                       \
        CT_SOFTMAX_SCALE(SFX, T, C, ib, ie, xp[ct_i], op[ct_i], a[0], inv[0], reuse, LOG)         \
      } else {                                                                                    \
        CT_SOFTMAX_SCALE(SFX, T, C, ib, ie, *(const T*)(b->x + ct_i * sx),                        \
                         *(T*)(b->out + ct_i * so), a[0], inv[0], reuse, LOG)                     \
      }                                                                                           \
      return;                                                                                     \
    }                                                                                             \
    for (int64_t i = ib; i < ie; ++i) {                                                           \
      const char* xr = b->x + i * b->sx;                                                          \
      char* orow = b->out + i * b->so;                                                            \
      if (b->lx == (int64_t)sizeof(T) && b->lo == (int64_t)sizeof(T)) {                           \
        const T* xp = (const T*)xr;                                                               \
        T* op = (T*)orow;                                                                         \
        CT_SOFTMAX_SCALE(SFX, T, C, 0, b->lanes, xp[ct_i], op[ct_i], a[ct_i], inv[ct_i], reuse,   \
                         LOG)                                                                     \
      } else {                                                                                    \
        CT_SOFTMAX_SCALE(SFX, T, C, 0, b->lanes, *(const T*)(xr + ct_i * b->lx),                  \
                         *(T*)(orow + ct_i * b->lo), a[ct_i], inv[ct_i], reuse, LOG)              \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
  static void ct_##OP##_##SFX##_combine_max(void* m, const void* other, int64_t lanes) {          \
    C* a = m;                                                                                     \
    const C* o = other;                                                                           \
    for (int64_t j = 0; j < lanes; ++j) a[j] = CT_NAN_MAX(a[j], o[j]);                            \
  }                                                                                               \
  static const ct_softmax_fns ct_##OP##_##SFX##_fns = {sizeof(C),                                 \
                                                       CT_SOFTMAX_VECTOR_##SFX ? 1 + (LOG) : 0,   \
                                                       ct_##OP##_##SFX##_lowest,                  \
                                                       ct_##OP##_##SFX##_max,                     \
                                                       ct_##OP##_##SFX##_sum,                     \
                                                       ct_##OP##_##SFX##_scale,                   \
                                                       ct_##OP##_##SFX##_combine_max};

/* ----- planning and threading ----- */

typedef struct ct_softmax_layout {
  const ct_softmax_fns* fns;
  const char* xbase;
  char* obase;
  int64_t n, sx, so; /* the axis */
  int32_t nouter;    /* lane dims other than the vector dim */
  int64_t outer_shape[CT_MAX_NDIM], outer_xs[CT_MAX_NDIM], outer_os[CT_MAX_NDIM];
  bool vector_mode;
  ct_cpu_lanes vec; /* the vector dim (scalar mode: n 1, chunk 1) */
  int64_t ntasks;
  bool vector_rows; /* tasks are contiguous float32 rows: ct_softmax_row_f32 */
} ct_softmax_layout;

/* Rows of at most this many float32 elements keep their exponentials in a buffer on the stack
 * (in L1) when the output is streamed (ct_softmax_row_f32). */
#define CT_SOFTMAX_ROW_BUFFER 4096

/* One contiguous float32 row (n >= 1), whole: max, exp(x - max) with their sum, then the output
 * (x - max - log(sum) for log_softmax). With stream (stream_store.h: the caller fences), the
 * output's whole lines are written once, with non-temporal stores, from exponentials kept in a
 * buffer: exp into the output and rescaling it in place read every output line for ownership
 * and wrote it back later, 1.5 times the traffic of reading the input and writing the output.
 * Rows too long for the buffer, and rows not streamed, rescale the output in place. */
static void ct_softmax_row_f32(const ct_vector_math* vm, const float* x, float* out, int64_t n,
                               bool log_softmax, int stream) {
  const float mx = vm->max_f32(x, n);
  if (log_softmax) {
    const double sum = vm->exp_sum_f32(x, NULL, n, mx);
    vm->subtract2_f32(x, out, n, mx, (float)log(sum), stream);
    return;
  }
  if (stream && n <= CT_SOFTMAX_ROW_BUFFER) {
    _Alignas(64) float exps[CT_SOFTMAX_ROW_BUFFER];
    const double sum = vm->exp_sum_f32(x, exps, n, mx);
    vm->scale_f32(exps, out, n, (float)(1.0 / sum), stream);
    return;
  }
  const double sum = vm->exp_sum_f32(x, out, n, mx);
  vm->scale_f32(out, out, n, (float)(1.0 / sum), 0);
}

static void ct_softmax_task_at(const ct_softmax_layout* p, int64_t t, ct_softmax_block* b) {
  int64_t outer = t / p->vec.chunks;
  const int64_t chunk = t % p->vec.chunks;
  const char* x = p->xbase;
  char* out = p->obase;
  for (int32_t k = p->nouter - 1; k >= 0; --k) {
    const int64_t i = outer % p->outer_shape[k];
    outer /= p->outer_shape[k];
    x += i * p->outer_xs[k];
    out += i * p->outer_os[k];
  }
  const int64_t first = chunk * p->vec.chunk;
  b->x = x + first * p->vec.xs;
  b->out = out + first * p->vec.os;
  b->sx = p->sx;
  b->so = p->so;
  b->lx = p->vec.xs;
  b->lo = p->vec.os;
  b->lanes = p->vec.n - first < p->vec.chunk ? p->vec.n - first : p->vec.chunk;
  b->scratch = NULL;
}

static void ct_softmax_tasks(int64_t begin, int64_t end, void* context) {
  const ct_softmax_layout* p = context;
  if (p->vector_rows) {
    const ct_vector_math* vm = ct_vector_math_get();
    /* a huge share of the output skips the caches (stream_store.h) */
    const int stream = ct_stream_worth((end - begin) * p->n * (int64_t)sizeof(float));
    for (int64_t t = begin; t < end; ++t) {
      ct_softmax_block b;
      ct_softmax_task_at(p, t, &b);
      ct_softmax_row_f32(vm, (const float*)b.x, (float*)b.out, p->n, p->fns->vector_rows == 2,
                         stream);
    }
    if (stream) ct_stream_fence(); /* the rows' non-temporal stores, once */
    return;
  }
  double m[CT_SOFTMAX_CHUNK], s[CT_SOFTMAX_CHUNK], scratch[CT_SOFTMAX_CHUNK];
  for (int64_t t = begin; t < end; ++t) {
    ct_softmax_block b;
    ct_softmax_task_at(p, t, &b);
    b.scratch = scratch;
    p->fns->lowest(m, b.lanes);
    p->fns->max(&b, 0, p->n, m);
    for (int64_t j = 0; j < b.lanes; ++j) s[j] = 0.0;
    p->fns->sum(&b, 0, p->n, m, s);
    p->fns->scale(&b, 0, p->n, m, s);
  }
}

/* One task cut into pieces along the axis. */
typedef struct ct_softmax_split {
  const ct_softmax_layout* plan;
  ct_softmax_block block;
  int64_t piece;
  unsigned char* maxima; /* pieces x lanes, compute type */
  double* sums;          /* pieces x lanes */
  const void* max;       /* the combined maxima */
  const double* sum;     /* the combined sums */
} ct_softmax_split;

static void ct_softmax_piece_range(const ct_softmax_split* s, int64_t i, int64_t* ib, int64_t* ie) {
  *ib = i * s->piece;
  *ie = *ib + s->piece < s->plan->n ? *ib + s->piece : s->plan->n;
}

static void ct_softmax_pieces_max(int64_t begin, int64_t end, void* context) {
  const ct_softmax_split* s = context;
  const ct_softmax_fns* f = s->plan->fns;
  for (int64_t i = begin; i < end; ++i) {
    int64_t ib, ie;
    ct_softmax_piece_range(s, i, &ib, &ie);
    void* m = s->maxima + i * s->block.lanes * f->max_size;
    f->lowest(m, s->block.lanes);
    f->max(&s->block, ib, ie, m);
  }
}

static void ct_softmax_pieces_sum(int64_t begin, int64_t end, void* context) {
  const ct_softmax_split* s = context;
  double scratch[CT_SOFTMAX_CHUNK];
  ct_softmax_block b = s->block;
  b.scratch = scratch;
  for (int64_t i = begin; i < end; ++i) {
    int64_t ib, ie;
    ct_softmax_piece_range(s, i, &ib, &ie);
    double* sum = s->sums + i * b.lanes;
    for (int64_t j = 0; j < b.lanes; ++j) sum[j] = 0.0;
    s->plan->fns->sum(&b, ib, ie, s->max, sum);
  }
}

static void ct_softmax_pieces_scale(int64_t begin, int64_t end, void* context) {
  const ct_softmax_split* s = context;
  double scratch[CT_SOFTMAX_CHUNK];
  ct_softmax_block b = s->block;
  b.scratch = scratch;
  for (int64_t i = begin; i < end; ++i) {
    int64_t ib, ie;
    ct_softmax_piece_range(s, i, &ib, &ie);
    s->plan->fns->scale(&b, ib, ie, s->max, s->sum);
  }
}

static int ct_cpu_softmax_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const int64_t size = ct_dtype_size(x->dtype);
  ct_softmax_layout p;
  p.fns = call->kernel_data;
  p.xbase = ct_tensor_base(x);
  p.obase = ct_tensor_base(out);
  p.n = 1;
  p.sx = p.so = 0;
  p.nouter = 0;
  int64_t axis = call->attrs[0].value.i;
  const int32_t ndim = x->ndim > 0 ? x->ndim : 1;
  if (axis < 0) axis += ndim;
  if (axis < 0 || axis >= ndim) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "%s: axis %lld is out of range",
                        call->schema->name, (long long)call->attrs[0].value.i);
  }
  for (int32_t k = 0; k < x->ndim; ++k) {
    const int64_t xs = ct_tensor_stride(x, k) * size, os = ct_tensor_stride(out, k) * size;
    if (k == axis) {
      p.n = x->shape[k];
      p.sx = xs;
      p.so = os;
    } else if (x->shape[k] == 0) {
      return CT_OK;
    } else if (x->shape[k] > 1) {
      p.outer_shape[p.nouter] = x->shape[k];
      p.outer_xs[p.nouter] = xs;
      p.outer_os[p.nouter++] = os;
    }
  }
  if (p.n == 0) return CT_OK;
  /* Order lane dims by input stride, merge those contiguous for input and output. */
  int64_t* strides[2] = {p.outer_xs, p.outer_os};
  ct_cpu_sort_dims(p.nouter, p.outer_shape, strides, 2);
  p.nouter = ct_cpu_merge_dims(p.nouter, p.outer_shape, strides, 2);
  /* Vector mode: the finest lane dim, when finer than the axis. */
  const int32_t vec = ct_cpu_finest_dim(p.nouter, p.outer_xs);
  p.vector_mode = vec >= 0 && p.n > 1 && ct_abs64(p.outer_xs[vec]) < ct_abs64(p.sx);
  p.vec = (ct_cpu_lanes){1, 0, 0, 1, 1};
  if (p.vector_mode) {
    ct_cpu_take_lanes(&p.nouter, p.outer_shape, p.outer_xs, p.outer_os, vec, &p.xbase, &p.obase,
                      CT_SOFTMAX_CHUNK, &p.vec);
  }
  int64_t outer = 1;
  for (int32_t k = 0; k < p.nouter; ++k) outer *= p.outer_shape[k];
  p.ntasks = outer * p.vec.chunks;
  const int64_t task_cost = p.n * p.vec.chunk * CT_SOFTMAX_COST;
  p.vector_rows = p.fns->vector_rows && !p.vector_mode && p.sx == (int64_t)sizeof(float) &&
                  p.so == (int64_t)sizeof(float);
  if (p.ntasks >= CT_SOFTMAX_FEW_TASKS || task_cost < 2 * CT_SOFTMAX_PIECE * CT_SOFTMAX_COST) {
    ct_cpu_parallel_for(p.ntasks, task_cost, ct_softmax_tasks, &p);
    return CT_OK;
  }
  /* A few long lanes: cut the axis into pieces; their partials share one stack buffer, so split
   * tasks take fewer lanes. */
  ct_cpu_chunk_lanes(&p.vec, CT_SOFTMAX_SPLIT_CHUNK);
  p.ntasks = outer * p.vec.chunks;
  const int64_t lanes = p.vec.chunk;
  double sums[CT_SOFTMAX_PARTIALS], maxima[CT_SOFTMAX_PARTIALS];
  int64_t pieces = p.n * lanes / CT_SOFTMAX_PIECE;
  if (pieces > CT_SOFTMAX_MAX_PIECES) pieces = CT_SOFTMAX_MAX_PIECES;
  if (pieces > CT_SOFTMAX_PARTIALS / lanes) pieces = CT_SOFTMAX_PARTIALS / lanes;
  if (pieces > p.n) pieces = p.n;
  if (pieces < 1) pieces = 1;
  const int64_t piece = ct_div_up(p.n, pieces);
  pieces = ct_div_up(p.n, piece);
  const int64_t piece_cost = piece * lanes * CT_SOFTMAX_COST;
  unsigned char* max_bytes = (unsigned char*)maxima;
  for (int64_t t = 0; t < p.ntasks; ++t) {
    ct_softmax_split s;
    s.plan = &p;
    ct_softmax_task_at(&p, t, &s.block);
    s.piece = piece;
    s.maxima = max_bytes;
    s.sums = sums;
    const int64_t nl = s.block.lanes;
    ct_cpu_parallel_for(pieces, piece_cost, ct_softmax_pieces_max, &s);
    for (int64_t i = 1; i < pieces; ++i) {
      p.fns->combine_max(max_bytes, max_bytes + i * nl * p.fns->max_size, nl);
    }
    s.max = max_bytes;
    ct_cpu_parallel_for(pieces, piece_cost, ct_softmax_pieces_sum, &s);
    for (int64_t i = 1; i < pieces; ++i) {
      for (int64_t j = 0; j < nl; ++j) sums[j] += sums[i * nl + j];
    }
    s.sum = sums;
    ct_cpu_parallel_for(pieces, piece_cost, ct_softmax_pieces_scale, &s);
  }
  return CT_OK;
}

/* ----- the kernel list: (op, dtypes), the only place to edit ----- */

#define CT_SOFTMAX_KERNELS(K)    \
  K(softmax, CT_CPU_FLOAT_TYPES) \
  K(log_softmax, CT_CPU_FLOAT_TYPES)

/* The final step of each op: 1 = log. */
#define CT_SOFTMAX_LOG_softmax 0
#define CT_SOFTMAX_LOG_log_softmax 1

#define CT_SOFTMAX_DEF_X(A, SFX, T, C, U, ID) CT_SOFTMAX_FAMILY(A, SFX, T, C, CT_SOFTMAX_LOG_##A)
#define CT_SOFTMAX_REG_X(A, SFX, T, C, U, ID) \
  {#A, 2, {ID, ID}, ct_cpu_softmax_run, NULL, &ct_##A##_##SFX##_fns},

#define K(OP, TYPES) TYPES(CT_SOFTMAX_DEF_X, OP)
CT_SOFTMAX_KERNELS(K)
#undef K

static const ct_cpu_kernel ct_cpu_softmax_kernels[] = {
#define K(OP, TYPES) TYPES(CT_SOFTMAX_REG_X, OP)
    CT_SOFTMAX_KERNELS(K)
#undef K
};

int ct_cpu_register_softmax(void) {
  return ct_cpu_register_all(ct_cpu_softmax_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_softmax_kernels));
}
