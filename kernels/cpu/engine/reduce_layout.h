/* reduce_layout.h - the CPU backend's reduction engine, shared by sum/mean/max and argmax.
 *
 * A reduction kernel is a small table of functions over an accumulator type (ct_reduce_vtable);
 * the engine plans the loops and threads them. Planning:
 *   - unit dims are dropped; kept dims are ordered by input stride and merged where contiguous
 *     for both input and output; reduced dims are ordered innermost by stride (negative strides
 *     flipped) and merged, unless the vtable is `ordered` (argmax: reduced dims keep their
 *     logical row-major order, so a flat reduced index is the NumPy flattened index);
 *   - "run" mode: each output element reduces its sub-space as 1-D runs along the innermost
 *     reduced dim (a contiguous fast path in the kernels);
 *   - "rows" mode, chosen when a kept dim has a smaller input stride than the reduced dims (e.g.
 *     axis 0 of a C-contiguous array) or the reduced runs are very short: up to
 *     CT_REDUCE_ACC_BYTES / acc_size outputs along that kept dim ("lanes") accumulate whole rows
 *     at a time into an accumulator vector (on each thread's stack), so the input is read in
 *     memory order; a vtable with rows_many (float32 sums) takes several rows per call.
 * Work is split into tasks (one output element, or one chunk of lanes). With many tasks they run
 * in parallel; with few tasks and a large reduction, each task's reduction is cut into pieces
 * reduced in parallel and combined in order. Every choice depends on shapes and strides only,
 * never on the thread count, so results are bitwise reproducible across thread counts. The
 * engine never allocates: accumulators live in bounded stack buffers (32 KB a thread, 48 KB on
 * the calling thread of a split reduction, which also holds the pieces' partial results). */
#ifndef CTENSOR_CPU_REDUCE_LAYOUT_H_
#define CTENSOR_CPU_REDUCE_LAYOUT_H_

#include <stdbool.h>

#include "engine/cpu_dtypes.h"
#include "engine/dims.h"
#include "internal.h"

/* Bytes of one rows-mode task's accumulator vector as planned: lanes = CT_REDUCE_ACC_BYTES /
 * acc_size (whole rows up to that length, so that the input streams through memory in order).
 * 1024 double lanes read 4 KB row chunks, a whole page, and 4096 columns still make 4 tasks. */
#define CT_REDUCE_ACC_BYTES 8192
/* Where whole tasks run and wider chunks still give every thread one, rows mode widens them up
 * to this many bytes of accumulators: 2048 double lanes read 8 KB of each row, two pages instead
 * of one (each page read as a new stream costs the prefetchers their start-up). Which lanes a task
 * holds never changes a result. A thread holds two such vectors (total and blocked partial) on
 * its stack. */
#define CT_REDUCE_WIDE_ACC_BYTES 16384
/* With `blocked`, this many run/rows calls go into a partial accumulator before it is added to
 * the total: a two-level sum (error ~ (BLOCK + calls / BLOCK) ulps, not calls ulps). */
#define CT_REDUCE_BLOCK 128

/* The T at byte offset index * step from base. */
#define CT_REDUCE_AT(T, base, index, step) (*(const T*)((base) + (index) * (step)))

/* acc[j] op= x[r * row_step + j * step] for r < rows (in order), j < n (byte steps). */
typedef void (*ct_reduce_rows_many_fn)(const char* x, int64_t row_step, int64_t rows, int64_t step,
                                       int64_t n, void* acc);

/* An accumulator vtable; `acc` points at n accumulators of acc_size bytes. `index` is the flat
 * index (over the reduced dims, in the plan's order) of the first element a call reads. */
typedef struct ct_reduce_vtable {
  int64_t acc_size;
  bool ordered; /* keep reduced dims in logical order (indices are meaningful) */
  bool blocked; /* two-level accumulation (float sums) */
  /* acc[0..n) = identity */
  void (*init)(void* acc, int64_t n);
  /* acc[0] op= x[0], x[step], ... x[(n-1)*step] (step in bytes) */
  void (*run)(const char* x, int64_t step, int64_t n, int64_t index, void* acc);
  /* acc[j] op= x[j*step] for j < n; all n elements have reduced index `index` */
  void (*rows)(const char* x, int64_t step, int64_t n, int64_t index, void* acc);
  /* acc[j] = acc[j] op later[j] (`later` covers higher indices) */
  void (*combine)(void* acc, const void* later, int64_t n);
  /* out[j*out_step] = result of acc[j]; count = elements reduced per output, param the
   * caller's (var/std: the correction) */
  void (*finalize)(const void* acc, int64_t n, char* out, int64_t out_step, int64_t count,
                   double param);
  /* Optional (NULL: `rows` row by row): `rows` calls at once on consecutive rows of a single
   * reduced dim, row_step bytes apart, bitwise the same result. */
  ct_reduce_rows_many_fn rows_many;
} ct_reduce_vtable;

/* The vtable of a family expanded for (OP, SFX): its functions are named
 * ct_<OP>_<SFX>_{init,run,rows,combine,finalize}; ROWS_MANY is a function or NULL. */
#define CT_REDUCE_VTABLE_MANY(OP, SFX, ACC_SIZE, ORDERED, BLOCKED, ROWS_MANY)       \
  static const ct_reduce_vtable ct_##OP##_##SFX##_vt = {ACC_SIZE,                   \
                                                        ORDERED,                    \
                                                        BLOCKED,                    \
                                                        ct_##OP##_##SFX##_init,     \
                                                        ct_##OP##_##SFX##_run,      \
                                                        ct_##OP##_##SFX##_rows,     \
                                                        ct_##OP##_##SFX##_combine,  \
                                                        ct_##OP##_##SFX##_finalize, \
                                                        ROWS_MANY};
#define CT_REDUCE_VTABLE(OP, SFX, ACC_SIZE, ORDERED, BLOCKED) \
  CT_REDUCE_VTABLE_MANY(OP, SFX, ACC_SIZE, ORDERED, BLOCKED, NULL)

/* Hot loops are also compiled for AVX2 and the variant is picked at load time (GCC, x86-64 ELF:
 * ifunc). Results are bitwise the same on every variant: the loops keep explicit independent
 * accumulators, AVX2 brings no FMA, and nothing is reassociated. Not under ThreadSanitizer
 * (__SANITIZE_THREAD__): it instruments the ifunc resolvers, which the dynamic linker runs before
 * the resolvers' own calls into the TSan runtime are relocated, so the library crashes on load. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__) && \
    !defined(CT_NO_TARGET_CLONES) && !defined(__SANITIZE_THREAD__)
#define CT_CPU_HOT __attribute__((target_clones("avx2", "default")))
#else
#define CT_CPU_HOT
#endif

/* The larger (smaller) of m and v; a nan in either wins (comparisons with nan are false). */
#define CT_NAN_MAX(m, v) ((v) > (m) || (v) != (v) ? (v) : (m))
#define CT_NAN_MIN(m, v) ((v) < (m) || (v) != (v) ? (v) : (m))

/* The larger (smaller) of m and v, v when they are unordered: what MAXPS (MINPS) computes, so
 * that compilers vectorise it into one instruction. A nan in m is lost: callers track nans apart.
 */
#define CT_LANE_MAX(m, v) ((m) > (v) ? (m) : (v))
#define CT_LANE_MIN(m, v) ((m) < (v) ? (m) : (v))

/* M = PICK(M, LOAD) over ct_i in [0, N), LOAD an expression of ct_i, PICK CT_NAN_MAX or
 * CT_NAN_MIN, LANE the matching CT_LANE_MAX or CT_LANE_MIN. Long runs keep CT_NANMAX_WIDTH
 * independent extrema updated with LANE (one vector max/min) and, apart, whether a lane saw a nan;
 * if one did, the run's first nan is looked up again and becomes M (a nan wins, as in NumPy). The
 * result is the same as merging the lanes into M in order (which reduce_f32.c's loops match). */
#define CT_NANMAX_WIDTH 32
#define CT_NANPICK_LOOP(C, N, LOAD, M, PICK, LANE)                                                \
  do {                                                                                            \
    int64_t ct_b = 0;                                                                             \
    if ((N) >= 2 * CT_NANMAX_WIDTH) {                                                             \
      C ct_r[CT_NANMAX_WIDTH];                                                                    \
      int ct_nan[CT_NANMAX_WIDTH];                                                                \
      for (int ct_k = 0; ct_k < CT_NANMAX_WIDTH; ++ct_k) {                                        \
        const int64_t ct_i = ct_k;                                                                \
        ct_r[ct_k] = (LOAD);                                                                      \
        ct_nan[ct_k] = ct_r[ct_k] != ct_r[ct_k];                                                  \
      }                                                                                           \
      for (ct_b = CT_NANMAX_WIDTH; ct_b + CT_NANMAX_WIDTH <= (N); ct_b += CT_NANMAX_WIDTH) {      \
        for (int ct_k = 0; ct_k < CT_NANMAX_WIDTH; ++ct_k) {                                      \
          const int64_t ct_i = ct_b + ct_k;                                                       \
          const C ct_v = (LOAD);                                                                  \
          ct_r[ct_k] = LANE(ct_r[ct_k], ct_v);                                                    \
          ct_nan[ct_k] |= ct_v != ct_v;                                                           \
        }                                                                                         \
      }                                                                                           \
      int ct_any_nan = 0;                                                                         \
      for (int ct_k = 0; ct_k < CT_NANMAX_WIDTH; ++ct_k) ct_any_nan |= ct_nan[ct_k];              \
      /* The lanes pairwise (vector max/min), which gives what merging them in order gives        \
       * except for which zero wins between -0 and +0 (nans are dealt with below): a zero         \
       * result merges them in order. Merging in order always cost a branch per lane. */          \
      C ct_t[CT_NANMAX_WIDTH / 2];                                                                \
      for (int ct_k = 0; ct_k < CT_NANMAX_WIDTH / 2; ++ct_k) {                                    \
        ct_t[ct_k] = LANE(ct_r[ct_k], ct_r[ct_k + CT_NANMAX_WIDTH / 2]);                          \
      }                                                                                           \
      for (int ct_w = CT_NANMAX_WIDTH / 4; ct_w > 0; ct_w /= 2) {                                 \
        for (int ct_k = 0; ct_k < ct_w; ++ct_k) ct_t[ct_k] = LANE(ct_t[ct_k], ct_t[ct_k + ct_w]); \
      }                                                                                           \
      if (ct_t[0] != (C)0) {                                                                      \
        (M) = PICK((M), ct_t[0]);                                                                 \
      } else {                                                                                    \
        for (int ct_k = 0; ct_k < CT_NANMAX_WIDTH; ++ct_k) (M) = PICK((M), ct_r[ct_k]);           \
      }                                                                                           \
      for (int64_t ct_i = 0; ct_any_nan && ct_i < ct_b; ++ct_i) {                                 \
        const C ct_v = (LOAD);                                                                    \
        if (ct_v != ct_v) {                                                                       \
          (M) = PICK((M), ct_v);                                                                  \
          break;                                                                                  \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
    for (int64_t ct_i = ct_b; ct_i < (N); ++ct_i) {                                               \
      const C ct_v = (LOAD);                                                                      \
      (M) = PICK((M), ct_v);                                                                      \
    }                                                                                             \
  } while (0)
#define CT_NANMAX_LOOP(C, N, LOAD, M) CT_NANPICK_LOOP(C, N, LOAD, M, CT_NAN_MAX, CT_LANE_MAX)
#define CT_NANMIN_LOOP(C, N, LOAD, M) CT_NANPICK_LOOP(C, N, LOAD, M, CT_NAN_MIN, CT_LANE_MIN)

/* Reduces x over the dims where mask[k] into out (keepdims: out keeps them as extent 1); param
 * goes to vt->finalize. */
CT_INTERNAL int ct_cpu_reduce(const ct_tensor* x, const ct_tensor* out, const bool* mask,
                              bool keepdims, const ct_reduce_vtable* vt, double param);

#endif /* CTENSOR_CPU_REDUCE_LAYOUT_H_ */
