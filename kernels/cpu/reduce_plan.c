/* reduce_plan.c - planning, looping and threading of reductions (see reduce_plan.h). */
#include "reduce_plan.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "strided_iter.h"

/* Runs shorter than this make rows mode preferable even when they are contiguous. */
#define CT_REDUCE_SHORT_RUN 16
/* Split one task's reduction across threads when there are fewer tasks than this... */
#define CT_REDUCE_FEW_TASKS 8
/* ...into pieces of at least this many elements, at most CT_REDUCE_MAX_PIECES of them. */
#define CT_REDUCE_PIECE 32768
#define CT_REDUCE_MAX_PIECES 64
/* Partial results of split tasks take at most about this many bytes (fewer pieces if needed). */
#define CT_REDUCE_PARTIALS_BYTES (4 << 20)

typedef struct ct_reduce_plan {
  const ct_reduce_vtable* vt;
  char* xbase;
  char* obase;
  /* kept dims (without the lane dim in rows mode), outermost first; byte strides */
  int32_t nkeep;
  int64_t keep_shape[CT_MAX_NDIM];
  int64_t keep_xs[CT_MAX_NDIM];
  int64_t keep_os[CT_MAX_NDIM];
  /* reduced dims, innermost last (at least one); byte strides */
  int32_t nred;
  int64_t red_shape[CT_MAX_NDIM];
  int64_t red_xs[CT_MAX_NDIM];
  int64_t red_count; /* elements reduced per output; 0 for an empty reduction */
  /* rows mode: the lane dim */
  bool rows_mode;
  int64_t lane_n, lane_xs, lane_os;
  int64_t chunk;  /* lanes per task: min(lane_n, CT_REDUCE_CHUNK); 1 in run mode */
  int64_t chunks; /* tasks per outer position: ceil(lane_n / chunk) */
  int64_t ntasks;
  atomic_int failed; /* a thread could not allocate its accumulators */
} ct_reduce_plan;

static inline int64_t ct_abs64(int64_t v) {
  return v < 0 ? -v : v;
}

/* Accumulates reduced flat indices [rb, re) of the task whose first element is at x into acc
 * (lanes accumulators); part is scratch of the same size for blocked accumulation. */
static void ct_reduce_accumulate(const ct_reduce_plan* p, const char* x, int64_t lanes, int64_t rb,
                                 int64_t re, void* acc, void* part) {
  if (rb >= re) return;
  const ct_reduce_vtable* vt = p->vt;
  void* target = vt->blocked ? part : acc;
  int32_t calls = 0;
  if (vt->blocked) vt->init(part, lanes);
  int64_t index[CT_MAX_NDIM];
  if (!p->rows_mode) {
    const int32_t inner = p->nred - 1;
    const int64_t run = p->red_shape[inner], step = p->red_xs[inner];
    int64_t outer = rb / run, offset = rb % run;
    const char* ptr = x;
    for (int32_t k = inner - 1; k >= 0; --k) {
      index[k] = outer % p->red_shape[k];
      outer /= p->red_shape[k];
      ptr += index[k] * p->red_xs[k];
    }
    int64_t position = rb;
    while (position < re) {
      const int64_t n = run - offset < re - position ? run - offset : re - position;
      vt->run(ptr + offset * step, step, n, position, target);
      position += n;
      offset = 0;
      if (vt->blocked && ++calls == CT_REDUCE_BLOCK) {
        vt->combine(acc, part, lanes);
        vt->init(part, lanes);
        calls = 0;
      }
      for (int32_t k = inner - 1; k >= 0; --k) {
        ptr += p->red_xs[k];
        if (++index[k] < p->red_shape[k]) break;
        ptr -= p->red_xs[k] * p->red_shape[k];
        index[k] = 0;
      }
    }
  } else {
    int64_t rest = rb;
    const char* ptr = x;
    for (int32_t k = p->nred - 1; k >= 0; --k) {
      index[k] = rest % p->red_shape[k];
      rest /= p->red_shape[k];
      ptr += index[k] * p->red_xs[k];
    }
    for (int64_t r = rb; r < re; ++r) {
      vt->rows(ptr, p->lane_xs, lanes, r, target);
      if (vt->blocked && ++calls == CT_REDUCE_BLOCK) {
        vt->combine(acc, part, lanes);
        vt->init(part, lanes);
        calls = 0;
      }
      for (int32_t k = p->nred - 1; k >= 0; --k) {
        ptr += p->red_xs[k];
        if (++index[k] < p->red_shape[k]) break;
        ptr -= p->red_xs[k] * p->red_shape[k];
        index[k] = 0;
      }
    }
  }
  if (vt->blocked && calls > 0) vt->combine(acc, part, lanes);
}

/* Where task t starts in x and out, and how many lanes it has. */
static int64_t ct_reduce_task_at(const ct_reduce_plan* p, int64_t t, const char** x, char** out) {
  int64_t outer = t / p->chunks;
  const int64_t chunk = t % p->chunks;
  const char* xp = p->xbase;
  char* op = p->obase;
  for (int32_t k = p->nkeep - 1; k >= 0; --k) {
    const int64_t i = outer % p->keep_shape[k];
    outer /= p->keep_shape[k];
    xp += i * p->keep_xs[k];
    op += i * p->keep_os[k];
  }
  if (!p->rows_mode) {
    *x = xp;
    *out = op;
    return 1;
  }
  const int64_t first = chunk * p->chunk;
  *x = xp + first * p->lane_xs;
  *out = op + first * p->lane_os;
  return p->lane_n - first < p->chunk ? p->lane_n - first : p->chunk;
}

/* Parallel body: whole tasks [begin, end). */
static void ct_reduce_tasks(int64_t begin, int64_t end, void* context) {
  ct_reduce_plan* p = context;
  const size_t bytes = (size_t)(p->chunk * p->vt->acc_size);
  unsigned char* acc = malloc(2 * bytes);
  if (!acc) {
    atomic_store(&p->failed, 1);
    return;
  }
  unsigned char* part = acc + bytes;
  for (int64_t t = begin; t < end; ++t) {
    const char* x;
    char* out;
    const int64_t lanes = ct_reduce_task_at(p, t, &x, &out);
    p->vt->init(acc, lanes);
    ct_reduce_accumulate(p, x, lanes, 0, p->red_count, acc, part);
    p->vt->finalize(acc, lanes, out, p->lane_os, p->red_count);
  }
  free(acc);
}

/* One task whose reduction is cut into pieces. */
typedef struct ct_reduce_split {
  ct_reduce_plan* plan;
  const char* x;
  int64_t lanes;
  int64_t piece;      /* reduced indices per piece */
  unsigned char* acc; /* pieces x lanes accumulators */
} ct_reduce_split;

static void ct_reduce_pieces(int64_t begin, int64_t end, void* context) {
  const ct_reduce_split* s = context;
  ct_reduce_plan* p = s->plan;
  unsigned char* part = malloc((size_t)(s->lanes * p->vt->acc_size));
  if (!part) {
    atomic_store(&p->failed, 1);
    return;
  }
  for (int64_t i = begin; i < end; ++i) {
    void* acc = s->acc + i * s->lanes * p->vt->acc_size;
    const int64_t rb = i * s->piece;
    const int64_t re = rb + s->piece < p->red_count ? rb + s->piece : p->red_count;
    p->vt->init(acc, s->lanes);
    ct_reduce_accumulate(p, s->x, s->lanes, rb, re, acc, part);
  }
  free(part);
}

/* Sorts dims [0, n) by |strides[0][k]| descending (stable), permuting every stride array. */
static void ct_sort_dims(int32_t n, int64_t* shape, int64_t** strides, int32_t nstrides) {
  for (int32_t k = 1; k < n; ++k) {
    for (int32_t j = k; j > 0; --j) {
      if (ct_abs64(strides[0][j - 1]) >= ct_abs64(strides[0][j])) break;
      int64_t t = shape[j];
      shape[j] = shape[j - 1];
      shape[j - 1] = t;
      for (int32_t i = 0; i < nstrides; ++i) {
        t = strides[i][j];
        strides[i][j] = strides[i][j - 1];
        strides[i][j - 1] = t;
      }
    }
  }
}

/* Merges dim k into k-1 where every stride array steps over k's whole extent to reach k-1. */
static int32_t ct_merge_dims(int32_t n, int64_t* shape, int64_t** strides, int32_t nstrides) {
  if (n == 0) return 0;
  int32_t m = 0;
  for (int32_t k = 1; k < n; ++k) {
    bool mergeable = true;
    for (int32_t i = 0; i < nstrides && mergeable; ++i) {
      mergeable = strides[i][m] == strides[i][k] * shape[k];
    }
    if (mergeable) {
      shape[m] *= shape[k];
    } else {
      ++m;
      shape[m] = shape[k];
    }
    for (int32_t i = 0; i < nstrides; ++i) strides[i][m] = strides[i][k];
  }
  return m + 1;
}

int ct_cpu_reduce(const ct_tensor* x, const ct_tensor* out, const bool* mask, bool keepdims,
                  const ct_reduce_vtable* vt) {
  ct_reduce_plan p;
  p.vt = vt;
  p.xbase = ct_tensor_base(x);
  p.obase = ct_tensor_base(out);
  const int64_t xsize = ct_dtype_size(x->dtype), osize = ct_dtype_size(out->dtype);
  p.nkeep = 0;
  p.nred = 0;
  p.red_count = 1;
  int32_t j = 0; /* output dim of x's dim k */
  for (int32_t k = 0; k < x->ndim; ++k) {
    const int64_t n = x->shape[k], xs = ct_tensor_stride(x, k) * xsize;
    if (mask[k]) {
      p.red_count *= n;
      if (n > 1) {
        p.red_shape[p.nred] = n;
        p.red_xs[p.nred++] = xs;
      }
      if (keepdims) ++j;
      continue;
    }
    if (n == 0) return CT_OK; /* no outputs */
    if (n > 1) {
      p.keep_shape[p.nkeep] = n;
      p.keep_xs[p.nkeep] = xs;
      p.keep_os[p.nkeep++] = ct_tensor_stride(out, j) * osize;
    }
    ++j;
  }
  if (p.red_count == 0) p.nred = 0;
  /* Reduced dims. */
  int64_t* red_strides[1] = {p.red_xs};
  if (!vt->ordered) {
    for (int32_t k = 0; k < p.nred; ++k) {
      if (p.red_xs[k] < 0) {
        p.xbase += (p.red_shape[k] - 1) * p.red_xs[k];
        p.red_xs[k] = -p.red_xs[k];
      }
    }
    ct_sort_dims(p.nred, p.red_shape, red_strides, 1);
  }
  p.nred = ct_merge_dims(p.nred, p.red_shape, red_strides, 1);
  if (p.nred == 0) {
    p.red_shape[0] = p.red_count; /* 1, or 0 for an empty reduction */
    p.red_xs[0] = 0;
    p.nred = 1;
  }
  /* Kept dims. */
  int64_t* keep_strides[2] = {p.keep_xs, p.keep_os};
  ct_sort_dims(p.nkeep, p.keep_shape, keep_strides, 2);
  p.nkeep = ct_merge_dims(p.nkeep, p.keep_shape, keep_strides, 2);
  /* Rows mode: the kept dim with the smallest non-zero input stride becomes the lane dim when
   * it is finer than the reduced runs, or the runs are short. */
  int32_t lane = -1;
  for (int32_t k = 0; k < p.nkeep; ++k) {
    if (p.keep_xs[k] != 0 && (lane < 0 || ct_abs64(p.keep_xs[k]) <= ct_abs64(p.keep_xs[lane]))) {
      lane = k;
    }
  }
  const int64_t inner_n = p.red_shape[p.nred - 1], inner_xs = ct_abs64(p.red_xs[p.nred - 1]);
  p.rows_mode = lane >= 0 && p.red_count > 0 &&
                (ct_abs64(p.keep_xs[lane]) < inner_xs || inner_n < CT_REDUCE_SHORT_RUN);
  p.lane_n = 1;
  p.lane_xs = 0;
  p.lane_os = 0;
  p.chunk = 1;
  p.chunks = 1;
  atomic_init(&p.failed, 0);
  if (p.rows_mode) {
    p.lane_n = p.keep_shape[lane];
    p.lane_xs = p.keep_xs[lane];
    p.lane_os = p.keep_os[lane];
    if (p.lane_xs < 0) {
      p.xbase += (p.lane_n - 1) * p.lane_xs;
      p.obase += (p.lane_n - 1) * p.lane_os;
      p.lane_xs = -p.lane_xs;
      p.lane_os = -p.lane_os;
    }
    for (int32_t k = lane + 1; k < p.nkeep; ++k) {
      p.keep_shape[k - 1] = p.keep_shape[k];
      p.keep_xs[k - 1] = p.keep_xs[k];
      p.keep_os[k - 1] = p.keep_os[k];
    }
    --p.nkeep;
    p.chunk = p.lane_n < CT_REDUCE_CHUNK ? p.lane_n : CT_REDUCE_CHUNK;
    p.chunks = (p.lane_n + p.chunk - 1) / p.chunk;
  }
  int64_t outer = 1;
  for (int32_t k = 0; k < p.nkeep; ++k) outer *= p.keep_shape[k];
  p.ntasks = outer * p.chunks;
  const int64_t task_cost = p.chunk * (p.red_count > 0 ? p.red_count : 1);
  const char* oom = "reduction: cannot allocate %lld bytes of accumulators";

  if (p.ntasks >= CT_REDUCE_FEW_TASKS || task_cost < 2 * CT_REDUCE_PIECE) {
    ct_cpu_parallel_for(p.ntasks, task_cost, ct_reduce_tasks, &p);
    if (atomic_load(&p.failed)) {
      return ct_set_error(CT_ERROR_OUT_OF_MEMORY, oom, (long long)(2 * p.chunk * vt->acc_size));
    }
    return CT_OK;
  }
  /* Few tasks, each large: cut every task's reduction into pieces reduced in parallel. */
  int64_t pieces = task_cost / CT_REDUCE_PIECE;
  int64_t max_pieces = CT_REDUCE_PARTIALS_BYTES / (p.chunk * vt->acc_size);
  if (max_pieces > CT_REDUCE_MAX_PIECES) max_pieces = CT_REDUCE_MAX_PIECES;
  if (max_pieces < 2) max_pieces = 2;
  if (pieces > max_pieces) pieces = max_pieces;
  if (pieces > p.red_count) pieces = p.red_count;
  const int64_t piece = (p.red_count + pieces - 1) / pieces;
  pieces = (p.red_count + piece - 1) / piece;
  const int64_t bytes = pieces * p.chunk * vt->acc_size;
  unsigned char* accs = malloc((size_t)bytes);
  if (!accs) return ct_set_error(CT_ERROR_OUT_OF_MEMORY, oom, (long long)bytes);
  for (int64_t t = 0; t < p.ntasks; ++t) {
    ct_reduce_split s;
    char* out;
    s.plan = &p;
    s.lanes = ct_reduce_task_at(&p, t, &s.x, &out);
    s.piece = piece;
    s.acc = accs;
    ct_cpu_parallel_for(pieces, piece * s.lanes, ct_reduce_pieces, &s);
    if (atomic_load(&p.failed)) break;
    for (int64_t i = 1; i < pieces; ++i) {
      vt->combine(accs, accs + i * s.lanes * vt->acc_size, s.lanes);
    }
    vt->finalize(accs, s.lanes, out, p.lane_os, p.red_count);
  }
  free(accs);
  if (atomic_load(&p.failed)) {
    return ct_set_error(CT_ERROR_OUT_OF_MEMORY, oom, (long long)(p.chunk * vt->acc_size));
  }
  return CT_OK;
}
