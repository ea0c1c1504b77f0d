/* gemm_packed.c - the blocked, packed GEMM of the floating-point instances (Goto/BLIS
 * structure), in the caller's workspace. Interface in gemm.h; micro-kernels in gemm_ukernel.h.
 *
 * Loops, outermost first, over one work item (a batch entry × a chunk of columns × a chunk of
 * rows):
 *   jc: NC columns  -> kc × nc panel of B packed (converted to the accumulator type) into L3,
 *   pc: KC depth       in micro-panels of NR columns (zero-padded);
 *   ic: MC rows     -> mc × kc block of A packed into L2, in micro-panels of MR rows;
 *   jr, ir: one MR × NR micro-kernel call per tile (edge tiles through a scratch tile).
 * An item of at most MC rows (a conv2d's output channels) packs its A once per k block and B in
 * panels small enough to stay in L2. Packing reads the operands through their strides, whatever
 * they are (transposed, negative, zero), so layouts cost nothing beyond the packing itself; an
 * implicit operand (conv2d's input read as an im2col matrix) supplies its own B packer, and a
 * prepacked A or B (the Winograd path's transformed input and weights, written in the panels'
 * layout) is read where it lies, with nothing packed. Trailing
 * batch dims over which B does not move are folded into the rows; an A that no batch dim moves
 * (a conv2d's weight) is packed once, for every batch entry, at the start of the workspace.
 *
 * Small products (at most the set's unpacked_max elements of A and B per batch entry, depth up to
 * CT_GEMM_UNPACKED_MAX_K) whose A, B and C have unit column strides and the accumulator's type
 * skip the packing: the unpacked micro-kernels read A and B where they lie and mask the edge
 * tiles instead of going through the scratch tile. Where the threads would share such products
 * (few of them), each product's rows are cut into one chunk per thread instead.
 *
 * Where C has the accumulator's type and unit column stride, the micro-kernels write C in place
 * and add the later KC blocks to it ("direct"). Otherwise (float16/bfloat16 outputs, strided C)
 * an item is at most MC × CT_GEMM_STAGED_NC and its C is accumulated in an accumulator-typed
 * buffer and stored once at the end ("staged"), so that every output element is rounded once. A
 * C with unit row stride only (a transposed output) is computed as C^T = B^T · A^T, directly.
 *
 * Threads (OpenMP): a problem under CT_GEMM_PARALLEL_FMAS multiply-adds runs on the calling
 * thread. Few, large direct products are shared: all threads pack each B panel together, then
 * take (row block, column group) tiles dynamically, the row blocks a multiple of the thread
 * count and of near-equal micro-row counts. Otherwise items (whole batch entries, or the
 * staged blocks) are shared out dynamically.
 *
 * Workspace: the prepacked A where there is one, then one slot per thread, each holding an A
 * block, a B panel and a staging buffer, sized by the problem (never more than MC × KC, KC × NC
 * and MC × CT_GEMM_STAGED_NC elements) but not by the layout of C, so a size asked for with
 * compact outputs serves any. With fewer slots than
 * threads, fewer threads run; with none, the caller falls back to the simple path. */
#include "gemm/gemm.h"

#include <string.h>

#include "engine/cpu_isa.h"
#include "engine/cpu_threads.h"
#include "gemm/gemm_ukernel.h"
#include "engine/int_div.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define CT_GEMM_ALIGN 64
/* Below this many multiply-adds a product runs on one thread. */
#define CT_GEMM_PARALLEL_FMAS (1 << 20)
/* Fewer batch entries than this many per thread: the threads share out the rows and columns of
 * each product instead of whole products, so that a thread slowed by other work does not hold
 * the rest. */
#define CT_GEMM_ITEMS_PER_THREAD 4
/* A B panel this small stays in L2 (512 KB or more on current x86) beside the A block. */
#define CT_GEMM_L2_PANEL_BYTES (160 * 1024)
/* Largest A packed once for all batch entries. */
#define CT_GEMM_PREPACK_BYTES (64 << 20)
/* Rows of B that packing reads at once, across the whole panel (see ct_gemm_pack_b_rows). */
#define CT_GEMM_PACK_B_ROWS 8
/* Widest C block of a staged item (float16/bfloat16 or strided outputs). */
#define CT_GEMM_STAGED_NC 512

/* float32 B into micro-panels of NR = 16 or 32 columns, as ct_gemm_pack_b_rows_<NAME> does, with
 * the widest moves the CPU has: the packing functions below are compiled for the baseline, whose
 * 16-byte moves make packing B store-bound. */
static CT_CPU_ISA_BODY void ct_gemm_pack_b_wide_f32_body(const float* b, int64_t rs, int64_t kc,
                                                         int64_t panels, int64_t nr,
                                                         float* restrict dst) {
  for (int64_t p0 = 0; p0 < kc; p0 += CT_GEMM_PACK_B_ROWS) {
    const int64_t rows = kc - p0 < CT_GEMM_PACK_B_ROWS ? kc - p0 : CT_GEMM_PACK_B_ROWS;
    for (int64_t j = 0; j < panels; ++j) {
      const float* src = b + p0 * rs + j * nr;
      float* out = dst + j * kc * nr + p0 * nr;
      if (nr == 32) {
        for (int64_t r = 0; r < rows; ++r) memcpy(out + r * 32, src + r * rs, 32 * sizeof(float));
      } else {
        for (int64_t r = 0; r < rows; ++r) memcpy(out + r * 16, src + r * rs, 16 * sizeof(float));
      }
    }
  }
}
CT_CPU_ISA_LOOP(ct_gemm_pack_b_wide_f32,
                (const float* b, int64_t rs, int64_t kc, int64_t panels, int64_t nr,
                 float* restrict dst),
                (b, rs, kc, panels, nr, dst))
/* Whether an instance packs float32 into float32 (ct_gemm_pack_b_wide_f32 then packs its B). */
#define CT_GEMM_IS_F32_COPY(TIN, ACC) \
  _Generic((TIN)0, float: _Generic((ACC)0, float: 1, default: 0), default: 0)

static inline int64_t ct_gemm_min(int64_t a, int64_t b) {
  return a < b ? a : b;
}
static inline int64_t ct_gemm_abs(int64_t a) {
  return a < 0 ? -a : a;
}

/* How one product is cut up. */
typedef struct ct_gemm_schedule {
  ct_gemm_blocking bk; /* mc, kc, nc clipped to the problem */
  bool staged;         /* C accumulated in a buffer per item, stored once */
  bool shared; /* threads share each packed B panel and split its rows (few, large products) */
  int64_t batch;
  int64_t m_chunk, n_chunk, m_chunks, n_chunks, items;
  int64_t l2_nc; /* columns of a B panel that stays in L2 next to one A block (few-rows items) */
  /* A that every batch entry shares (a conv2d's weight) is packed once, for all entries, into
   * prepack_bytes at the start of the workspace: block (pc, ic) at pc · m_padded + ic · kc. */
  int64_t prepack_bytes, m_padded;
  int64_t n_padded; /* columns of a prepacked B's depth blocks (ct_gemm_prepacked_b_layout) */
  bool prepacked;
  bool unpacked; /* small products: A and B read in place (ct_gemm_unpacked_fits) */
  void* prepack; /* set by the driver */
  int threads;   /* slots asked for: threads worth using */
  int64_t a_bytes, b_bytes, c_bytes; /* per slot, each a multiple of CT_GEMM_ALIGN */
  int64_t slot_bytes;
} ct_gemm_schedule;

/* Swaps A and B (and m and n) so that C^T = B^T · A^T is computed: for a C whose rows are
 * strided but whose columns are contiguous. */
static void ct_gemm_transpose_desc(ct_gemm_desc* d) {
  int64_t t = d->m;
  d->m = d->n;
  d->n = t;
  const void* p = d->a;
  d->a = d->b;
  d->b = p;
  t = d->a_rs;
  d->a_rs = d->b_cs;
  d->b_cs = t;
  t = d->a_cs;
  d->a_cs = d->b_rs;
  d->b_rs = t;
  t = d->c_rs;
  d->c_rs = d->c_cs;
  d->c_cs = t;
  const int64_t* s = d->a_bs;
  d->a_bs = d->b_bs;
  d->b_bs = s;
}

/* Rows of each depth block for a depth of k and blocking kc: equal blocks (576 = 288 + 288, not
 * 512 + 64), as a short last block costs a whole pass over C for little work. */
static int64_t ct_gemm_depth_block(int64_t k, int64_t kc) {
  const int64_t depth = k > 0 ? k : 1;
  return ct_div_up(depth, ct_div_up(depth, kc));
}

/* Whether descriptor `w` (as computed, C written directly) is small enough for the unpacked
 * micro-kernels (unpacked_max elements of A and B, ct_gemm_blocking: packing would cost a good
 * part of its multiply-adds) and laid out for them to read in place: unit column strides,
 * nothing supplied packed. */
#define CT_GEMM_UNPACKED_MAX_K 512
static bool ct_gemm_unpacked_fits(const ct_gemm_desc* w, int64_t unpacked_max) {
  return !w->pack_b && !w->a_prepacked && !w->b_prepacked && w->a_cs == 1 && w->b_cs == 1 &&
         w->c_cs == 1 && w->k > 0 && w->k <= CT_GEMM_UNPACKED_MAX_K &&
         w->m * w->k + w->k * w->n <= unpacked_max;
}

/* The descriptor the packed path works on (possibly transposed) and its plan. `out_is_acc`:
 * C has the accumulator's type. Returns false where the packed path does not apply (a GEMV or
 * an empty depth without an implicit B, which the simple path does better).
 *
 * The slot size and the slot count depend only on (m, n, k, batch), not on the layout of C or
 * on which way round the product is computed, so a workspace asked for with compact outputs
 * serves strided ones too. */
static bool ct_gemm_make_schedule(const ct_gemm_desc* d, const ct_gemm_blocking* blocking,
                                  int64_t acc_size, bool in_is_acc, bool out_is_acc,
                                  ct_gemm_desc* work, ct_gemm_schedule* plan) {
  *work = *d;
  /* An operand supplied by a packer or prepacked: the packed path must run, as it is, without
   * transposing or folding the product. */
  const bool given = d->pack_b || d->b_prepacked || d->a_prepacked;
  if (!given && (d->m == 1 || d->n == 1 || d->k == 0)) return false;
  int64_t batch = 1;
  for (int32_t q = 0; q < d->batch_ndim; ++q) batch *= d->batch_shape[q];
  if (batch == 0) return false; /* an empty batch: nothing to schedule (or divide by) */
  plan->batch = batch;
  /* Sizes, symmetric in m and n, and large enough for the batch folded into rows. */
  const int64_t mn = (d->m > d->n ? d->m : d->n) * (batch > 0 ? batch : 1);
  ct_gemm_blocking bk = *blocking;
  /* Equal k blocks (576 = 288 + 288, not 512 + 64): a short last block costs a whole pass over
   * C for little work. */
  bk.kc = (int32_t)ct_gemm_depth_block(d->k, bk.kc);
  bk.mc = (int32_t)ct_gemm_min(bk.mc, ct_round_up(mn, bk.mr));
  bk.nc = (int32_t)ct_gemm_min(bk.nc, ct_round_up(mn, bk.nr));
  const int64_t staged_nc = ct_gemm_min(bk.nc, ct_round_up(CT_GEMM_STAGED_NC, bk.nr));
  plan->a_bytes =
      d->a_prepacked ? 0 : ct_round_up((int64_t)bk.mc * bk.kc * acc_size, CT_GEMM_ALIGN);
  plan->b_bytes =
      d->b_prepacked ? 0 : ct_round_up((int64_t)bk.kc * bk.nc * acc_size, CT_GEMM_ALIGN);
  plan->c_bytes = ct_round_up((int64_t)bk.mc * staged_nc * acc_size, CT_GEMM_ALIGN);
  plan->slot_bytes = plan->a_bytes + plan->b_bytes + plan->c_bytes;
  bool a_shared = batch > 1 && d->k > 0 && !d->a_prepacked;
  for (int32_t q = 0; q < d->batch_ndim; ++q) {
    if (d->batch_shape[q] > 1 && d->a_bs[q] != 0) a_shared = false;
  }
  plan->m_padded = ct_round_up(d->m, bk.mr);
  const int64_t prepack = plan->m_padded * d->k * acc_size;
  plan->prepack_bytes =
      a_shared && prepack <= CT_GEMM_PREPACK_BYTES ? ct_round_up(prepack, CT_GEMM_ALIGN) : 0;
  plan->prepack = NULL;
  const int threads = ct_cpu_num_threads();
  const double fmas = (double)batch * (double)d->m * (double)d->n * (double)(d->k > 0 ? d->k : 1);
  const bool parallel = threads > 1 && fmas >= CT_GEMM_PARALLEL_FMAS;
  plan->threads = parallel ? threads : 1;
  /* Trailing batch dims over which B does not move and A and C continue their rows are more
   * rows (x (batch, m, k) times a shared weight): one larger product packs B once. */
  while (!given && work->batch_ndim > 0) {
    const int32_t q = work->batch_ndim - 1;
    if (work->b_bs[q] != 0 || work->a_bs[q] != work->m * work->a_rs ||
        work->c_bs[q] != work->m * work->c_rs) {
      break;
    }
    work->m *= work->batch_shape[q];
    work->batch_ndim = q;
  }
  plan->batch = 1;
  for (int32_t q = 0; q < work->batch_ndim; ++q) plan->batch *= work->batch_shape[q];
  batch = plan->batch;
  /* Orientation and chunks. */
  const bool transposed = !given && out_is_acc && d->c_cs != 1 && d->c_rs == 1;
  if (transposed) ct_gemm_transpose_desc(work);
  plan->prepacked = plan->prepack_bytes > 0 && !transposed && work->batch_ndim == d->batch_ndim;
  const int64_t m = work->m, n = work->n;
  plan->staged = !(out_is_acc && work->c_cs == 1);
  plan->shared = !plan->staged && parallel && batch < (int64_t)threads * CT_GEMM_ITEMS_PER_THREAD;
  plan->unpacked = in_is_acc && !plan->staged && ct_gemm_unpacked_fits(work, bk.unpacked_max);
  if (plan->staged) {
    bk.nc = (int32_t)staged_nc;
    plan->m_chunk = bk.mc;
    plan->n_chunk = bk.nc;
  } else {
    plan->m_chunk = m;
    plan->n_chunk = n;
  }
  if (plan->unpacked) {
    /* Nothing is packed. Where the threads would have shared each product (few of them), each
     * product's rows are cut into one chunk of whole micro-panels per thread instead, which
     * beats packing and sharing on such small products. */
    plan->prepacked = false;
    if (plan->shared) {
      plan->shared = false;
      plan->m_chunk = ct_round_up(ct_div_up(m, plan->threads), bk.mr);
    }
  }
  plan->bk = bk;
  plan->n_padded = ct_round_up(n, bk.nr);
  plan->l2_nc = CT_GEMM_L2_PANEL_BYTES / ((int64_t)bk.kc * acc_size) / bk.nr * bk.nr;
  if (plan->l2_nc < bk.nr) plan->l2_nc = bk.nr;
  plan->m_chunks = ct_div_up(m, plan->m_chunk);
  plan->n_chunks = ct_div_up(n, plan->n_chunk);
  plan->items = batch * plan->m_chunks * plan->n_chunks;
  return true;
}

/* Offsets (in elements) of batch entry `index` in A, B and C. */
static void ct_gemm_batch_offsets(const ct_gemm_desc* d, int64_t index, int64_t* a_off,
                                  int64_t* b_off, int64_t* c_off) {
  *a_off = *b_off = *c_off = 0;
  for (int32_t q = d->batch_ndim - 1; q >= 0 && index > 0; --q) {
    const int64_t i = index % d->batch_shape[q];
    index /= d->batch_shape[q];
    *a_off += i * d->a_bs[q];
    *b_off += i * d->b_bs[q];
    *c_off += i * d->c_bs[q];
  }
}

/* ----- the template: packers, macro-kernel, item, driver; per instance ----- */

#define CT_GEMM_PACKED_DEFINE(NAME, TIN, TOUT, ACC, PREC, IN, OUT, OUT_IS_ACC)                     \
  /* One whole micro-panel of MR rows of unit column stride: dst[p][i] = a[i · rs + p]; inlined   \
   * with a constant MR. */                                                                        \
  static inline __attribute__((always_inline)) void ct_gemm_pack_a_rows_##NAME(                    \
      const TIN* a, int64_t rs, int64_t kc, const int MR, ACC* restrict dst) {                     \
    for (int64_t p = 0; p < kc; ++p, dst += MR) {                                                  \
      _Pragma("GCC unroll 12") for (int i = 0; i < MR; ++i) dst[i] = ct_load_##IN(a[i * rs + p]);  \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* `panels` whole micro-panels of B with unit column stride, side by side, rows [0, kc):         \
   * CT_GEMM_PACK_B_ROWS rows at a time across every panel, so that B is read a few rows at a      \
   * time from start to end (sequential streams the prefetchers follow) rather than a column       \
   * strip at a time (a cache line per row, each on another page once rows are 4 KB apart);        \
   * inlined with a constant NR. */                                                                \
  static inline __attribute__((always_inline)) void ct_gemm_pack_b_rows_##NAME(                    \
      const TIN* b, int64_t rs, int64_t kc, int64_t panels, const int NR, ACC* restrict dst) {     \
    for (int64_t p0 = 0; p0 < kc; p0 += CT_GEMM_PACK_B_ROWS) {                                     \
      const int64_t rows = ct_gemm_min(CT_GEMM_PACK_B_ROWS, kc - p0);                              \
      for (int64_t j = 0; j < panels; ++j) {                                                       \
        const TIN* src = b + p0 * rs + j * NR;                                                     \
        ACC* out = dst + j * kc * NR + p0 * NR;                                                    \
        for (int64_t r = 0; r < rows; ++r) {                                                       \
          _Pragma("GCC unroll 32") for (int c = 0; c < NR; ++c) {                                  \
            out[r * NR + c] = ct_load_##IN(src[r * rs + c]);                                       \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* A[0:mb, 0:kc] -> micro-panels of mr rows: dst[panel][p][i], zero rows past mb. */             \
  static void ct_gemm_pack_a_##NAME(const TIN* a, int64_t rs, int64_t cs, int64_t mb, int64_t kc,  \
                                    int64_t mr, ACC* restrict dst) {                               \
    for (int64_t i0 = 0; i0 < mb; i0 += mr, dst += mr * kc) {                                      \
      const int64_t rows = ct_gemm_min(mr, mb - i0);                                               \
      const TIN* src = a + i0 * rs;                                                                \
      if (cs == 1 && rows == mr && (mr == 4 || mr == 6 || mr == 12)) {                             \
        /* Rows of unit stride, a whole micro-panel: column after column, a constant count of      \
         * rows each (unrolled), so the stores are contiguous and the loads stream mr rows. */     \
        if (mr == 6) {                                                                             \
          ct_gemm_pack_a_rows_##NAME(src, rs, kc, 6, dst);                                         \
        } else if (mr == 4) {                                                                      \
          ct_gemm_pack_a_rows_##NAME(src, rs, kc, 4, dst);                                         \
        } else {                                                                                   \
          ct_gemm_pack_a_rows_##NAME(src, rs, kc, 12, dst);                                        \
        }                                                                                          \
      } else if (ct_gemm_abs(cs) <= ct_gemm_abs(rs)) {                                             \
        for (int64_t i = 0; i < rows; ++i) {                                                       \
          const TIN* row = src + i * rs;                                                           \
          for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = ct_load_##IN(row[p * cs]);            \
        }                                                                                          \
      } else {                                                                                     \
        for (int64_t p = 0; p < kc; ++p) {                                                         \
          const TIN* col = src + p * cs;                                                           \
          for (int64_t i = 0; i < rows; ++i) dst[p * mr + i] = ct_load_##IN(col[i * rs]);          \
        }                                                                                          \
      }                                                                                            \
      for (int64_t i = rows; i < mr; ++i) {                                                        \
        for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = (ACC)0;                                 \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* B[0:kc, 0:nb] -> micro-panels of nr columns: dst[panel][p][j], zero columns past nb. */       \
  static void ct_gemm_pack_b_##NAME(const TIN* b, int64_t rs, int64_t cs, int64_t kc, int64_t nb,  \
                                    int64_t nr, ACC* restrict dst) {                               \
    int64_t j0 = 0;                                                                                \
    if (cs == 1 && (nr == 8 || nr == 16 || nr == 32)) { /* the whole panels, together */           \
      const int64_t whole = nb / nr;                                                               \
      if (nr != 8 && CT_GEMM_IS_F32_COPY(TIN, ACC)) {                                              \
        ct_gemm_pack_b_wide_f32((const float*)(const void*)b, rs, kc, whole, nr,                   \
                                (float*)(void*)dst);                                               \
      } else if (nr == 16) {                                                                       \
        ct_gemm_pack_b_rows_##NAME(b, rs, kc, whole, 16, dst);                                     \
      } else if (nr == 8) {                                                                        \
        ct_gemm_pack_b_rows_##NAME(b, rs, kc, whole, 8, dst);                                      \
      } else {                                                                                     \
        ct_gemm_pack_b_rows_##NAME(b, rs, kc, whole, 32, dst);                                     \
      }                                                                                            \
      j0 = whole * nr;                                                                             \
      dst += whole * nr * kc;                                                                      \
    }                                                                                              \
    for (; j0 < nb; j0 += nr, dst += nr * kc) {                                                    \
      const int64_t cols = ct_gemm_min(nr, nb - j0);                                               \
      const TIN* src = b + j0 * cs;                                                                \
      if (cs == 1) {                                                                               \
        for (int64_t p = 0; p < kc; ++p) {                                                         \
          const TIN* row = src + p * rs;                                                           \
          ACC* out = dst + p * nr;                                                                 \
          for (int64_t j = 0; j < cols; ++j) out[j] = ct_load_##IN(row[j]);                        \
        }                                                                                          \
      } else if (ct_gemm_abs(cs) <= ct_gemm_abs(rs)) {                                             \
        for (int64_t p = 0; p < kc; ++p) {                                                         \
          const TIN* row = src + p * rs;                                                           \
          for (int64_t j = 0; j < cols; ++j) dst[p * nr + j] = ct_load_##IN(row[j * cs]);          \
        }                                                                                          \
      } else {                                                                                     \
        for (int64_t j = 0; j < cols; ++j) {                                                       \
          const TIN* col = src + j * cs;                                                           \
          for (int64_t p = 0; p < kc; ++p) dst[p * nr + j] = ct_load_##IN(col[p * rs]);            \
        }                                                                                          \
      }                                                                                            \
      if (cols < nr) {                                                                             \
        for (int64_t p = 0; p < kc; ++p) {                                                         \
          for (int64_t j = cols; j < nr; ++j) dst[p * nr + j] = (ACC)0;                            \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* C[0:mb, panels [p0, p1) of nb columns] (=|+=) packed A · packed B, tile by tile. */           \
  static void ct_gemm_macro_##NAME(const ct_gemm_ukernels* uk, const ct_gemm_blocking* bk,         \
                                   int64_t mb, int64_t nb, int64_t p0, int64_t p1, int64_t kc,     \
                                   const ACC* abuf, const ACC* bbuf, ACC* target, int64_t ldt,     \
                                   int add) {                                                      \
    const int64_t mr = bk->mr, nr = bk->nr;                                                        \
    _Alignas(CT_GEMM_ALIGN) ACC tile[CT_GEMM_MAX_TILE];                                            \
    for (int64_t jr = p0 * nr; jr < nb && jr < p1 * nr; jr += nr) {                                \
      const int64_t cols = ct_gemm_min(nr, nb - jr);                                               \
      const ACC* bp = bbuf + jr * kc;                                                              \
      for (int64_t ir = 0; ir < mb; ir += mr) {                                                    \
        const int64_t rows = ct_gemm_min(mr, mb - ir);                                             \
        const ACC* ap = abuf + ir * kc;                                                            \
        ACC* ct = target + ir * ldt + jr;                                                          \
        if (rows == mr && cols == nr) {                                                            \
          uk->PREC(kc, ap, bp, ct, ldt, add);                                                      \
          continue;                                                                                \
        }                                                                                          \
        uk->PREC(kc, ap, bp, tile, nr, 0);                                                         \
        for (int64_t i = 0; i < rows; ++i) {                                                       \
          ACC* dst = ct + i * ldt;                                                                 \
          const ACC* src = tile + i * nr;                                                          \
          if (add) {                                                                               \
            for (int64_t j = 0; j < cols; ++j) dst[j] += src[j];                                   \
          } else {                                                                                 \
            for (int64_t j = 0; j < cols; ++j) dst[j] = src[j];                                    \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* The packed A block of rows [ic, ic + mb), depth [pc, pc + kc): where a prepacked A holds it   \
   * (a_off: its batch entry's offset, in accumulator elements), the shared one packed once, or    \
   * packed now into abuf. */                                                                      \
  static const ACC* ct_gemm_a_block_##NAME(const ct_gemm_desc* d, const ct_gemm_schedule* plan,    \
                                           const TIN* a, int64_t a_off, int64_t ic, int64_t mb,    \
                                           int64_t pc, int64_t kc, ACC* abuf) {                    \
    if (d->a_prepacked) return (const ACC*)d->a + a_off + pc * plan->m_padded + ic * kc;           \
    if (plan->prepacked) return (const ACC*)plan->prepack + pc * plan->m_padded + ic * kc;         \
    if (kc > 0) {                                                                                  \
      ct_gemm_pack_a_##NAME(a + ic * d->a_rs + pc * d->a_cs, d->a_rs, d->a_cs, mb, kc,             \
                            plan->bk.mr, abuf);                                                    \
    }                                                                                              \
    return abuf;                                                                                   \
  }                                                                                                \
                                                                                                   \
  /* Packs all of a shared A, block by block; with `threads` > 1, called by every thread of a      \
   * parallel region (the blocks are shared out; the region's next construct waits). */            \
  static void ct_gemm_prepack_##NAME(const ct_gemm_desc* d, const ct_gemm_schedule* plan) {        \
    const int64_t kc_max = plan->bk.kc, mc = plan->bk.mc;                                          \
    const int64_t row_blocks = ct_div_up(d->m, mc);                                                \
    const int64_t blocks = ct_div_up(d->k, kc_max) * row_blocks;                                   \
    _Pragma("omp for schedule(dynamic, 1)") for (int64_t t = 0; t < blocks; ++t) {                 \
      const int64_t pc = t / row_blocks * kc_max, ic = t % row_blocks * mc;                        \
      const int64_t kc = ct_gemm_min(kc_max, d->k - pc), mb = ct_gemm_min(mc, d->m - ic);          \
      ct_gemm_pack_a_##NAME((const TIN*)d->a + ic * d->a_rs + pc * d->a_cs, d->a_rs, d->a_cs, mb,  \
                            kc, plan->bk.mr, (ACC*)plan->prepack + pc * plan->m_padded + ic * kc); \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* B[pc : pc + kc, jc + panels [p0, p1) · nr] of batch entry bi into its place in bbuf. */       \
  static void ct_gemm_pack_b_panels_##NAME(const ct_gemm_desc* d, int64_t bi, const TIN* b,        \
                                           int64_t pc, int64_t kc, int64_t jc, int64_t nb,         \
                                           int64_t nr, int64_t p0, int64_t p1, ACC* bbuf) {        \
    const int64_t j0 = p0 * nr, j1 = ct_gemm_min(nb, p1 * nr);                                     \
    if (j1 <= j0 || d->b_prepacked) return;                                                        \
    if (d->pack_b) {                                                                               \
      d->pack_b(d->pack_b_context, bi, pc, kc, jc + j0, j1 - j0, nr, bbuf + j0 * kc);              \
    } else if (kc > 0) {                                                                           \
      ct_gemm_pack_b_##NAME(b + pc * d->b_rs + (jc + j0) * d->b_cs, d->b_rs, d->b_cs, kc, j1 - j0, \
                            nr, bbuf + j0 * kc);                                                   \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* The panels of B[pc : pc + kc, jc : jc + nb] as the macro-kernel reads them: where a prepacked \
   * B holds them (b_off: its batch entry's offset, in accumulator elements), else bbuf, once      \
   * packed. */                                                                                    \
  static const ACC* ct_gemm_b_panels_##NAME(const ct_gemm_desc* d, const ct_gemm_schedule* plan,   \
                                            int64_t b_off, int64_t pc, int64_t kc, int64_t jc,     \
                                            const ACC* bbuf) {                                     \
    if (!d->b_prepacked) return bbuf;                                                              \
    return (const ACC*)d->b + b_off + pc * plan->n_padded + jc * kc;                               \
  }                                                                                                \
                                                                                                   \
  /* C[i_begin:i_end, j_begin:j_end] (=|+=) A · B read in place, tile by tile (plan->unpacked;    \
   * only instances whose inputs have the accumulator's type get there). */                        \
  static void ct_gemm_unpacked_tiles_##NAME(const ct_gemm_desc* d, const ct_gemm_ukernels* uk,     \
                                            const ACC* a, const ACC* b, ACC* c, int64_t i_begin,   \
                                            int64_t i_end, int64_t j_begin, int64_t j_end) {       \
    const int64_t mr = uk->PREC##_blocking.mr, nr = uk->PREC##_blocking.nr;                        \
    for (int64_t j = j_begin; j < j_end; j += nr) {                                                \
      const int64_t cols = ct_gemm_min(nr, j_end - j);                                             \
      const ct_gemm_unpacked_##PREC kernel = uk->PREC##_unpacked[cols > nr / 2];                   \
      for (int64_t i = i_begin; i < i_end; i += mr) {                                              \
        kernel(d->k, a + i * d->a_rs, d->a_rs, b + j, d->b_rs, c + i * d->c_rs + j, d->c_rs,       \
               ct_gemm_min(mr, i_end - i), cols, d->accumulate);                                   \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* Work item `item` of the plan (one thread): C[rows, cols] of one batch entry. */               \
  static void ct_gemm_item_##NAME(const ct_gemm_desc* d, const ct_gemm_schedule* plan,             \
                                  const ct_gemm_ukernels* uk, int64_t item, char* slot) {          \
    const ct_gemm_blocking* bk = &plan->bk;                                                        \
    const int64_t nr = bk->nr;                                                                     \
    ACC* abuf = (ACC*)slot;                                                                        \
    ACC* bbuf = (ACC*)(slot + plan->a_bytes);                                                      \
    ACC* cbuf = (ACC*)(slot + plan->a_bytes + plan->b_bytes);                                      \
    const int64_t it = item % plan->m_chunks;                                                      \
    const int64_t jt = (item / plan->m_chunks) % plan->n_chunks;                                   \
    const int64_t bi = item / plan->m_chunks / plan->n_chunks;                                     \
    int64_t a_off, b_off, c_off;                                                                   \
    ct_gemm_batch_offsets(d, bi, &a_off, &b_off, &c_off);                                          \
    const TIN* a = (const TIN*)d->a + a_off;                                                       \
    const TIN* b = (const TIN*)d->b + b_off;                                                       \
    TOUT* c = (TOUT*)d->c + c_off;                                                                 \
    const int64_t i_begin = it * plan->m_chunk;                                                    \
    const int64_t i_end = ct_gemm_min(d->m, i_begin + plan->m_chunk);                              \
    const int64_t j_begin = jt * plan->n_chunk;                                                    \
    const int64_t j_end = ct_gemm_min(d->n, j_begin + plan->n_chunk);                              \
    const int64_t k = d->k;                                                                        \
    if (plan->unpacked) {                                                                          \
      ct_gemm_unpacked_tiles_##NAME(d, uk, (const ACC*)(const void*)a, (const ACC*)(const void*)b, \
                                    (ACC*)(void*)c, i_begin, i_end, j_begin, j_end);               \
      return;                                                                                      \
    }                                                                                              \
    if (!plan->staged && i_end - i_begin <= bk->mc) {                                              \
      /* One row block (a conv2d's output channels, say): A packed once per k block, then B in     \
       * panels small enough to stay in L2 from packing to use. */                                 \
      const int64_t mb = i_end - i_begin;                                                          \
      for (int64_t pc = 0; pc == 0 || pc < k; pc += bk->kc) {                                      \
        const int64_t kc = ct_gemm_min(bk->kc, k - pc);                                            \
        const ACC* ablock = ct_gemm_a_block_##NAME(d, plan, a, a_off, i_begin, mb, pc, kc, abuf);  \
        for (int64_t jc = j_begin; jc < j_end; jc += plan->l2_nc) {                                \
          const int64_t nb = ct_gemm_min(plan->l2_nc, j_end - jc);                                 \
          const int64_t panels = ct_div_up(nb, nr);                                                \
          ct_gemm_pack_b_panels_##NAME(d, bi, b, pc, kc, jc, nb, nr, 0, panels, bbuf);             \
          const ACC* bpanels = ct_gemm_b_panels_##NAME(d, plan, b_off, pc, kc, jc, bbuf);          \
          ct_gemm_macro_##NAME(uk, bk, mb, nb, 0, panels, kc, ablock, bpanels,                     \
                               (ACC*)(void*)c + i_begin * d->c_rs + jc, d->c_rs,                   \
                               pc > 0 || d->accumulate);                                           \
        }                                                                                          \
      }                                                                                            \
      return;                                                                                      \
    }                                                                                              \
    for (int64_t jc = j_begin; jc < j_end; jc += bk->nc) {                                         \
      const int64_t nb = ct_gemm_min(bk->nc, j_end - jc);                                          \
      const int64_t panels = ct_div_up(nb, nr);                                                    \
      /* k == 0 still runs one (empty) block, which writes the zeros. */                           \
      for (int64_t pc = 0; pc == 0 || pc < k; pc += bk->kc) {                                      \
        const int64_t kc = ct_gemm_min(bk->kc, k - pc);                                            \
        ct_gemm_pack_b_panels_##NAME(d, bi, b, pc, kc, jc, nb, nr, 0, panels, bbuf);               \
        const ACC* bpanels = ct_gemm_b_panels_##NAME(d, plan, b_off, pc, kc, jc, bbuf);            \
        for (int64_t ic = i_begin; ic < i_end; ic += bk->mc) {                                     \
          const int64_t mb = ct_gemm_min(bk->mc, i_end - ic);                                      \
          const ACC* ablock = ct_gemm_a_block_##NAME(d, plan, a, a_off, ic, mb, pc, kc, abuf);     \
          if (plan->staged) { /* the item is this one block */                                     \
            ct_gemm_macro_##NAME(uk, bk, mb, nb, 0, panels, kc, ablock, bpanels, cbuf, bk->nc,     \
                                 pc > 0);                                                          \
          } else {                                                                                 \
            ct_gemm_macro_##NAME(uk, bk, mb, nb, 0, panels, kc, ablock, bpanels,                   \
                                 (ACC*)(void*)c + ic * d->c_rs + jc, d->c_rs,                      \
                                 pc > 0 || d->accumulate);                                         \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
      if (plan->staged) {                                                                          \
        /* One block: rows [i_begin, i_end) and columns [jc, jc + nb). */                          \
        for (int64_t i = 0; i < i_end - i_begin; ++i) {                                            \
          TOUT* dst = c + (i_begin + i) * d->c_rs + jc * d->c_cs;                                  \
          const ACC* src = cbuf + i * bk->nc;                                                      \
          for (int64_t j = 0; j < nb; ++j) {                                                       \
            const ACC v = d->accumulate ? ct_load_##OUT(dst[j * d->c_cs]) + src[j] : src[j];       \
            dst[j * d->c_cs] = ct_store_##OUT(v);                                                  \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* Direct mode, all `threads` threads on each product in turn: the B panel is packed once,       \
   * each thread packing a share of its micro-panels, then the threads take (row block, column     \
   * group) tiles, packing A blocks into their own slots (again only when the row block            \
   * changes). Called by every thread of a parallel region. */                                     \
  static void ct_gemm_shared_##NAME(const ct_gemm_desc* d, const ct_gemm_schedule* plan,           \
                                    const ct_gemm_ukernels* uk, char* workspace, int threads,      \
                                    int thread) {                                                  \
    const ct_gemm_blocking* bk = &plan->bk;                                                        \
    const int64_t nr = bk->nr, k = d->k;                                                           \
    ACC* abuf = (ACC*)(workspace + (int64_t)thread * plan->slot_bytes);                            \
    ACC* bbuf = (ACC*)(workspace + plan->a_bytes); /* slot 0's */                                  \
    for (int64_t bi = 0; bi < plan->batch; ++bi) {                                                 \
      int64_t a_off, b_off, c_off;                                                                 \
      ct_gemm_batch_offsets(d, bi, &a_off, &b_off, &c_off);                                        \
      const TIN* a = (const TIN*)d->a + a_off;                                                     \
      const TIN* b = (const TIN*)d->b + b_off;                                                     \
      ACC* c = (ACC*)(void*)((TOUT*)d->c + c_off);                                                 \
      for (int64_t jc = 0; jc < d->n; jc += bk->nc) {                                              \
        const int64_t nb = ct_gemm_min(bk->nc, d->n - jc);                                         \
        const int64_t panels = ct_div_up(nb, nr);                                                  \
        /* Row blocks: a multiple of the thread count, of near-equal micro-row counts (never more  \
         * than mc rows), so that the threads finish together. */                                  \
        const int64_t units = ct_div_up(d->m, bk->mr);                                             \
        const int64_t blocks = ct_round_up(ct_div_up(d->m, bk->mc), threads);                      \
        /* Column groups so that there are a few tiles per thread. */                              \
        int64_t groups = ct_div_up((int64_t)threads * CT_GEMM_ITEMS_PER_THREAD, blocks);           \
        if (groups > panels) groups = panels;                                                      \
        const int64_t per_group = ct_div_up(panels, groups);                                       \
        groups = ct_div_up(panels, per_group);                                                     \
        for (int64_t pc = 0; pc == 0 || pc < k; pc += bk->kc) {                                    \
          const int64_t kc = ct_gemm_min(bk->kc, k - pc);                                          \
          if (!d->b_prepacked) { /* the same on every thread: all meet the loop, or none */        \
            _Pragma("omp for schedule(static)") for (int q = 0; q < threads; ++q) {                \
              ct_gemm_pack_b_panels_##NAME(d, bi, b, pc, kc, jc, nb, nr, panels * q / threads,     \
                                           panels * (q + 1) / threads, bbuf);                      \
            }                                                                                      \
          }                                                                                        \
          const ACC* bpanels = ct_gemm_b_panels_##NAME(d, plan, b_off, pc, kc, jc, bbuf);          \
          int64_t packed = -1; /* the row block in abuf */                                         \
          _Pragma("omp for schedule(dynamic, 1)") for (int64_t t = 0; t < blocks * groups; ++t) {  \
            const int64_t block = t / groups, group = t % groups;                                  \
            const int64_t ic = units * block / blocks * bk->mr;                                    \
            const int64_t mb = ct_gemm_min(units * (block + 1) / blocks * bk->mr, d->m) - ic;      \
            const ACC* ablock = abuf;                                                              \
            if (plan->prepacked || d->a_prepacked || block != packed) {                            \
              ablock = ct_gemm_a_block_##NAME(d, plan, a, a_off, ic, mb, pc, kc, abuf);            \
            }                                                                                      \
            packed = block;                                                                        \
            ct_gemm_macro_##NAME(uk, bk, mb, nb, group * per_group, (group + 1) * per_group, kc,   \
                                 ablock, bpanels, c + ic * d->c_rs + jc, d->c_rs,                  \
                                 pc > 0 || d->accumulate);                                         \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  void ct_gemm_prepacked_b_layout_##NAME(int64_t k, int64_t* kc, int64_t* nr) {                    \
    const ct_gemm_blocking* bk = &ct_gemm_ukernels_get()->PREC##_blocking;                         \
    *kc = ct_gemm_depth_block(k, bk->kc);                                                          \
    *nr = bk->nr;                                                                                  \
  }                                                                                                \
  void ct_gemm_prepacked_a_layout_##NAME(int64_t k, int64_t* kc, int64_t* mr) {                    \
    const ct_gemm_blocking* bk = &ct_gemm_ukernels_get()->PREC##_blocking;                         \
    *kc = ct_gemm_depth_block(k, bk->kc);                                                          \
    *mr = bk->mr;                                                                                  \
  }                                                                                                \
                                                                                                   \
  uint64_t ct_gemm_packed_workspace_##NAME(const ct_gemm_desc* d) {                                \
    const ct_gemm_ukernels* uk = ct_gemm_ukernels_get();                                           \
    ct_gemm_desc work;                                                                             \
    ct_gemm_schedule plan;                                                                         \
    if (d->m <= 0 || d->n <= 0) return 0;                                                          \
    if (!ct_gemm_make_schedule(d, &uk->PREC##_blocking, (int64_t)sizeof(ACC),                      \
                               CT_GEMM_IN_IS_ACC(TIN, ACC), OUT_IS_ACC, &work, &plan)) {           \
      return 0;                                                                                    \
    }                                                                                              \
    return (uint64_t)plan.prepack_bytes + (uint64_t)plan.threads * (uint64_t)plan.slot_bytes;      \
  }                                                                                                \
                                                                                                   \
  bool ct_gemm_packed_##NAME(const ct_gemm_desc* d) {                                              \
    const ct_gemm_ukernels* uk = ct_gemm_ukernels_get();                                           \
    ct_gemm_desc work;                                                                             \
    ct_gemm_schedule plan;                                                                         \
    if (!d->workspace) return false;                                                               \
    if (!ct_gemm_make_schedule(d, &uk->PREC##_blocking, (int64_t)sizeof(ACC),                      \
                               CT_GEMM_IN_IS_ACC(TIN, ACC), OUT_IS_ACC, &work, &plan)) {           \
      return false;                                                                                \
    }                                                                                              \
    const uintptr_t base = (uintptr_t)d->workspace;                                                \
    const uintptr_t aligned = (base + CT_GEMM_ALIGN - 1) / CT_GEMM_ALIGN * CT_GEMM_ALIGN;          \
    if (d->workspace_size < aligned - base) return false;                                          \
    const uint64_t usable = d->workspace_size - (aligned - base);                                  \
    if (usable < (uint64_t)plan.prepack_bytes) return false;                                       \
    const uint64_t slots = (usable - (uint64_t)plan.prepack_bytes) / (uint64_t)plan.slot_bytes;    \
    if (slots == 0) return false;                                                                  \
    int threads = (uint64_t)plan.threads < slots ? plan.threads : (int)slots;                      \
    if (!plan.shared && threads > plan.items) threads = (int)plan.items;                           \
    plan.prepack = (char*)aligned;                                                                 \
    char* workspace = (char*)aligned + plan.prepack_bytes;                                         \
    if (threads <= 1) {                                                                            \
      if (plan.prepacked) ct_gemm_prepack_##NAME(&work, &plan);                                    \
      for (int64_t t = 0; t < plan.items; ++t)                                                     \
        ct_gemm_item_##NAME(&work, &plan, uk, t, workspace);                                       \
      return true;                                                                                 \
    }                                                                                              \
    _Pragma("omp parallel num_threads(threads)") {                                                 \
      int thread = 0, team = 1;                                                                    \
      CT_GEMM_THREAD_NUM(thread, team);                                                            \
      if (plan.prepacked) ct_gemm_prepack_##NAME(&work, &plan);                                    \
      if (plan.shared) {                                                                           \
        ct_gemm_shared_##NAME(&work, &plan, uk, workspace, team, thread);                          \
      } else {                                                                                     \
        char* slot = workspace + (int64_t)thread * plan.slot_bytes;                                \
        _Pragma("omp for schedule(dynamic, 1)") for (int64_t t = 0; t < plan.items; ++t) {         \
          ct_gemm_item_##NAME(&work, &plan, uk, t, slot);                                          \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    return true;                                                                                   \
  }

/* Whether an instance's inputs have its accumulator's type (the unpacked micro-kernels read
 * them in place). */
#define CT_GEMM_IN_IS_ACC(TIN, ACC) _Generic((TIN)0, ACC: true, default: false)

#ifdef _OPENMP
#define CT_GEMM_THREAD_NUM(thread, team) \
  ((thread) = omp_get_thread_num(), (team) = omp_get_num_threads())
#else
#define CT_GEMM_THREAD_NUM(thread, team) ((void)(thread), (void)(team))
#endif

CT_GEMM_PACKED_DEFINE(f16, uint16_t, uint16_t, float, f32, f16, f16, false)
CT_GEMM_PACKED_DEFINE(bf16, uint16_t, uint16_t, float, f32, bf16, bf16, false)
CT_GEMM_PACKED_DEFINE(f32, float, float, float, f32, f32, f32, true)
CT_GEMM_PACKED_DEFINE(f64, double, double, double, f64, f64, f64, true)
CT_GEMM_PACKED_DEFINE(f32_f16, float, uint16_t, float, f32, f32, f16, false)
CT_GEMM_PACKED_DEFINE(f32_bf16, float, uint16_t, float, f32, f32, bf16, false)
