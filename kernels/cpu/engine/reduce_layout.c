/* reduce_layout.c - planning, looping and threading of reductions (see reduce_layout.h). */
#include "engine/int_div.h"
#include "engine/reduce_layout.h"

#include "engine/cpu_threads.h"
#include "engine/strided_iter.h"

/* Rows mode reads a chunk of each row (CT_REDUCE_ACC_BYTES of accumulators' worth, or up to
 * CT_REDUCE_WIDE_ACC_BYTES), one row after another: short streams in distant pages, which hardware
 * prefetchers pick up late. The chunk CT_REDUCE_PREFETCH_ROWS rows ahead is prefetched, when lanes
 * are at most a cache line apart. */
#define CT_REDUCE_PREFETCH_ROWS 2
#define CT_REDUCE_LINE 64
/* Rows a rows_many call takes: several input streams at once, read without software prefetch
 * (more streams in flight than one row at a time with prefetching). */
#define CT_REDUCE_MANY_ROWS 8
/* Runs shorter than this make rows mode preferable even when they are contiguous. */
#define CT_REDUCE_SHORT_RUN 16
/* Split one task's reduction across threads when there are fewer tasks than this... */
#define CT_REDUCE_FEW_TASKS 4
/* ...into pieces of at least this many elements, at most CT_REDUCE_MAX_PIECES of them, whose
 * partial results (one accumulator vector each) fit CT_REDUCE_PARTIALS_BYTES on the calling
 * thread's stack. */
#define CT_REDUCE_PIECE 32768
#define CT_REDUCE_MAX_PIECES 64
#define CT_REDUCE_PARTIALS_BYTES 32768
/* Split tasks have at most this many bytes of accumulators (lanes x acc_size), so that
 * CT_REDUCE_PARTIALS_BYTES holds at least 4 pieces. As many as a whole task's: a float32
 * (16384, 1024) axis-0 sum, one task of 1024 lanes, reads whole 4 KB rows one after another in
 * each piece at 0.84 of the full sum's bandwidth on 2 threads; split into tasks of 512 lanes
 * (2 KB of every 4 KB row, with an 8 KB buffer) it read at 0.38-0.48. */
#define CT_REDUCE_SPLIT_ACC_BYTES 8192

typedef struct ct_reduce_layout {
  const ct_reduce_vtable* vt;
  const char* xbase;
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
  /* rows mode: the lane dim (run mode: n 1, chunk 1) */
  bool rows_mode;
  ct_cpu_lanes lane;
  int64_t ntasks;
  double param; /* for finalize */
} ct_reduce_layout;

/* An accumulator vector on the stack, aligned for any accumulator type. */
typedef union ct_reduce_accs {
  unsigned char bytes[CT_REDUCE_WIDE_ACC_BYTES];
  double d;
  int64_t i;
} ct_reduce_accs;

/* Accumulates reduced flat indices [rb, re) of the task whose first element is at x into acc
 * (lanes accumulators); part is scratch of the same size for blocked accumulation. */
static void ct_reduce_accumulate(const ct_reduce_layout* p, const char* x, int64_t lanes,
                                 int64_t rb, int64_t re, void* acc, void* part) {
  if (rb >= re) return;
  const ct_reduce_vtable* vt = p->vt;
  void* target = vt->blocked ? part : acc;
  int32_t calls = 0;
  if (vt->blocked) vt->init(part, lanes);
  int64_t index[CT_MAX_NDIM];
  if (!p->rows_mode) {
    const int32_t inner = p->nred - 1;
    const int64_t run = p->red_shape[inner], step = p->red_xs[inner];
    /* (divisions cost more than a short run's loads: skipped when the task starts at 0) */
    int64_t outer = rb == 0 ? 0 : rb / run, offset = rb == 0 ? 0 : rb % run;
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
        if (++index[k] < p->red_shape[k]) {
          ptr += p->red_xs[k];
          break;
        }
        /* back to index 0 without stepping past the last element (stride x extent may leave
         * the address space, and int64, where stride x (extent - 1) does not) */
        ptr -= p->red_xs[k] * (p->red_shape[k] - 1);
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
    if (vt->rows_many != NULL && p->nred == 1) {
      /* several rows a call, never across a block boundary (same sums as row by row) */
      for (int64_t r = rb; r < re;) {
        int64_t rows = re - r < CT_REDUCE_MANY_ROWS ? re - r : CT_REDUCE_MANY_ROWS;
        if (vt->blocked && rows > CT_REDUCE_BLOCK - calls) rows = CT_REDUCE_BLOCK - calls;
        vt->rows_many(ptr, p->red_xs[0], rows, p->lane.xs, lanes, target);
        r += rows;
        if (r < re) ptr += rows * p->red_xs[0]; /* never a stride past the last row */
        calls += (int32_t)rows;
        if (vt->blocked && calls == CT_REDUCE_BLOCK) {
          vt->combine(acc, part, lanes);
          vt->init(part, lanes);
          calls = 0;
        }
      }
      if (vt->blocked && calls > 0) vt->combine(acc, part, lanes);
      return;
    }
    /* prefetch only along a single reduced dim, where the row ahead is one stride away */
    const bool prefetch = p->nred == 1 && p->lane.xs <= CT_REDUCE_LINE;
    /* CT_REDUCE_PREFETCH_ROWS strides, formed only where that many rows follow (so it is
     * inside the view and fits in int64) */
    const int64_t ahead =
        prefetch && re - rb > CT_REDUCE_PREFETCH_ROWS ? CT_REDUCE_PREFETCH_ROWS * p->red_xs[0] : 0;
    const int64_t span = (lanes - 1) * p->lane.xs + 1;
    for (int64_t r = rb; r < re; ++r) {
      if (prefetch && r + CT_REDUCE_PREFETCH_ROWS < re) {
        for (int64_t b = 0; b < span; b += CT_REDUCE_LINE) __builtin_prefetch(ptr + ahead + b);
        __builtin_prefetch(ptr + ahead + span - 1);
      }
      vt->rows(ptr, p->lane.xs, lanes, r, target);
      if (vt->blocked && ++calls == CT_REDUCE_BLOCK) {
        vt->combine(acc, part, lanes);
        vt->init(part, lanes);
        calls = 0;
      }
      for (int32_t k = p->nred - 1; k >= 0; --k) {
        if (++index[k] < p->red_shape[k]) {
          ptr += p->red_xs[k];
          break;
        }
        ptr -= p->red_xs[k] * (p->red_shape[k] - 1); /* as above */
        index[k] = 0;
      }
    }
  }
  if (vt->blocked && calls > 0) vt->combine(acc, part, lanes);
}

/* Where task t starts in x and out, and how many lanes it has. */
static int64_t ct_reduce_task_at(const ct_reduce_layout* p, int64_t t, const char** x, char** out) {
  const bool one_chunk = p->lane.chunks == 1; /* skips two divisions a task */
  int64_t outer = one_chunk ? t : t / p->lane.chunks;
  const int64_t chunk = one_chunk ? 0 : t % p->lane.chunks;
  const char* xp = p->xbase;
  char* op = p->obase;
  for (int32_t k = p->nkeep - 1; k >= 0; --k) {
    const int64_t i = k == 0 ? outer : outer % p->keep_shape[k]; /* outer < keep_shape[0] */
    outer = k == 0 ? 0 : outer / p->keep_shape[k];
    xp += i * p->keep_xs[k];
    op += i * p->keep_os[k];
  }
  if (!p->rows_mode) {
    *x = xp;
    *out = op;
    return 1;
  }
  const int64_t first = chunk * p->lane.chunk;
  *x = xp + first * p->lane.xs;
  *out = op + first * p->lane.os;
  return p->lane.n - first < p->lane.chunk ? p->lane.n - first : p->lane.chunk;
}

/* Parallel body: whole tasks [begin, end). */
static void ct_reduce_tasks(int64_t begin, int64_t end, void* context) {
  const ct_reduce_layout* p = context;
  ct_reduce_accs acc, part;
  for (int64_t t = begin; t < end; ++t) {
    const char* x;
    char* out;
    const int64_t lanes = ct_reduce_task_at(p, t, &x, &out);
    p->vt->init(acc.bytes, lanes);
    ct_reduce_accumulate(p, x, lanes, 0, p->red_count, acc.bytes, part.bytes);
    p->vt->finalize(acc.bytes, lanes, out, p->lane.os, p->red_count, p->param);
  }
}

/* Tasks [first, first + tasks) cut into `pieces` pieces each, reduced in parallel (item i is
 * piece i % pieces of task first + i / pieces) into slots of chunk accumulators. */
typedef struct ct_reduce_split {
  const ct_reduce_layout* plan;
  int64_t first, pieces;
  int64_t piece;      /* reduced indices per piece */
  unsigned char* acc; /* one slot per item */
} ct_reduce_split;

static void ct_reduce_pieces(int64_t begin, int64_t end, void* context) {
  const ct_reduce_split* s = context;
  const ct_reduce_layout* p = s->plan;
  ct_reduce_accs part;
  for (int64_t i = begin; i < end; ++i) {
    const char* x;
    char* out;
    const int64_t lanes = ct_reduce_task_at(p, s->first + i / s->pieces, &x, &out);
    void* acc = s->acc + i * p->lane.chunk * p->vt->acc_size;
    const int64_t rb = (i % s->pieces) * s->piece;
    const int64_t re = rb + s->piece < p->red_count ? rb + s->piece : p->red_count;
    p->vt->init(acc, lanes);
    ct_reduce_accumulate(p, x, lanes, rb, re, acc, part.bytes);
  }
}

/* Rows mode with whole tasks: chunks of up to CT_REDUCE_WIDE_ACC_BYTES of accumulators where
 * that still makes a task for every thread (`outer`: the tasks per chunk of lanes). The split
 * into tasks and pieces was decided before, on shapes alone, and a task's lanes never change
 * its sums, so results stay the same for every thread count. */
static void ct_reduce_widen_lanes(ct_reduce_layout* p, int64_t outer) {
  ct_cpu_lanes wide = p->lane;
  ct_cpu_chunk_lanes(&wide, CT_REDUCE_WIDE_ACC_BYTES / p->vt->acc_size);
  if (wide.chunks < p->lane.chunks && outer * wide.chunks >= ct_cpu_num_threads()) {
    p->lane = wide;
    p->ntasks = outer * wide.chunks;
  }
}

int ct_cpu_reduce(const ct_tensor* x, const ct_tensor* out, const bool* mask, bool keepdims,
                  const ct_reduce_vtable* vt, double param) {
  ct_reduce_layout p;
  p.vt = vt;
  p.param = param;
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
    ct_cpu_sort_dims(p.nred, p.red_shape, red_strides, 1);
  }
  p.nred = ct_cpu_merge_dims(p.nred, p.red_shape, red_strides, 1);
  if (p.nred == 0) {
    p.red_shape[0] = p.red_count; /* 1, or 0 for an empty reduction */
    p.red_xs[0] = 0;
    p.nred = 1;
  }
  /* Kept dims. */
  int64_t* keep_strides[2] = {p.keep_xs, p.keep_os};
  ct_cpu_sort_dims(p.nkeep, p.keep_shape, keep_strides, 2);
  p.nkeep = ct_cpu_merge_dims(p.nkeep, p.keep_shape, keep_strides, 2);
  /* Rows mode: the kept dim with the smallest non-zero input stride becomes the lane dim when
   * it is finer than the reduced runs, or the runs are short. */
  const int32_t lane = ct_cpu_finest_dim(p.nkeep, p.keep_xs);
  const int64_t inner_n = p.red_shape[p.nred - 1], inner_xs = ct_abs64(p.red_xs[p.nred - 1]);
  p.rows_mode = lane >= 0 && p.red_count > 0 &&
                (ct_abs64(p.keep_xs[lane]) < inner_xs || inner_n < CT_REDUCE_SHORT_RUN);
  p.lane = (ct_cpu_lanes){1, 0, 0, 1, 1};
  if (p.rows_mode) {
    ct_cpu_take_lanes(&p.nkeep, p.keep_shape, p.keep_xs, p.keep_os, lane, &p.xbase, &p.obase,
                      CT_REDUCE_ACC_BYTES / vt->acc_size, &p.lane);
  }
  int64_t outer = 1;
  for (int32_t k = 0; k < p.nkeep; ++k) outer *= p.keep_shape[k];
  p.ntasks = outer * p.lane.chunks;
  int64_t task_cost = p.lane.chunk * (p.red_count > 0 ? p.red_count : 1);

  if (p.ntasks >= CT_REDUCE_FEW_TASKS || task_cost < 2 * CT_REDUCE_PIECE) {
    if (p.rows_mode) ct_reduce_widen_lanes(&p, outer);
    task_cost = p.lane.chunk * (p.red_count > 0 ? p.red_count : 1);
    ct_cpu_parallel_for(p.ntasks, task_cost, ct_reduce_tasks, &p);
    return CT_OK;
  }
  /* Few tasks, each large: cut every task's reduction into pieces reduced in parallel. Their
   * partial results share one stack buffer, so split tasks take no more than its quarter. */
  ct_cpu_chunk_lanes(&p.lane, CT_REDUCE_SPLIT_ACC_BYTES / vt->acc_size);
  p.ntasks = outer * p.lane.chunks;
  const int64_t chunk = p.lane.chunk;
  task_cost = chunk * p.red_count;
  union {
    unsigned char bytes[CT_REDUCE_PARTIALS_BYTES];
    double d;
    int64_t i;
  } accs;
  const int64_t slots = CT_REDUCE_PARTIALS_BYTES / (chunk * vt->acc_size);
  int64_t pieces = task_cost / CT_REDUCE_PIECE;
  if (pieces > CT_REDUCE_MAX_PIECES) pieces = CT_REDUCE_MAX_PIECES;
  if (pieces > slots) pieces = slots;
  if (pieces > p.red_count) pieces = p.red_count;
  if (pieces < 1) pieces = 1;
  const int64_t piece = ct_div_up(p.red_count, pieces);
  pieces = ct_div_up(p.red_count, piece);
  const int64_t batch = slots / pieces; /* tasks reduced at once */
  const size_t slot_bytes = (size_t)(chunk * vt->acc_size);
  for (int64_t t0 = 0; t0 < p.ntasks; t0 += batch) {
    const int64_t tasks = p.ntasks - t0 < batch ? p.ntasks - t0 : batch;
    ct_reduce_split s = {&p, t0, pieces, piece, accs.bytes};
    ct_cpu_parallel_for(tasks * pieces, piece * chunk, ct_reduce_pieces, &s);
    for (int64_t t = 0; t < tasks; ++t) {
      const char* x;
      char* out;
      const int64_t lanes = ct_reduce_task_at(&p, t0 + t, &x, &out);
      unsigned char* acc = accs.bytes + t * pieces * slot_bytes;
      for (int64_t i = 1; i < pieces; ++i) vt->combine(acc, acc + i * slot_bytes, lanes);
      vt->finalize(acc, lanes, out, p.lane.os, p.red_count, param);
    }
  }
  return CT_OK;
}
