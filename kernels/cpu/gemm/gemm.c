/* gemm.c - the matrix multiply behind matmul and conv2d (interface in gemm.h).
 *
 * C is cut into tiles of CT_GEMM_MB rows × NB columns (NB = CT_GEMM_ROW_BYTES / sizeof(ACC));
 * tiles are the unit of parallel work (OpenMP, dynamic schedule), ordered batch, column tile, row
 * tile so that tiles taken one after the other read the same panel of B. A tile keeps its
 * accumulators on the stack for the whole of k, so every output element is stored exactly once. k
 * runs in blocks of CT_GEMM_KB: the block of A (MB×KB) and of B (KB×NB) are packed, converted to
 * the accumulator type, into contiguous stack buffers, whatever the operands' strides, and
 * multiplied in i-k-j order four k at a time, an inner loop over a contiguous accumulator row that
 * the compiler vectorises. At most 64 KB of stack per thread (80 KB for complex128). */
#include "gemm/gemm.h"

#include "math/complex_math.h"
#include "engine/cpu_threads.h"
#include "engine/strided_iter.h"

#define CT_GEMM_MB 64
#define CT_GEMM_KB 32
#define CT_GEMM_ROW_BYTES 512

/* ----- per-instance conversions and multiply-add ----- */

/* Integers: ACC is unsigned, so conversions and arithmetic wrap without undefined behaviour. */
#define CT_GEMM_INT_OPS(NAME, TIN, TOUT, ACC)                    \
  static inline ACC ct_gemm_load_in_##NAME(TIN v) {              \
    return (ACC)v;                                               \
  }                                                              \
  static inline ACC ct_gemm_load_out_##NAME(TOUT v) {            \
    return (ACC)v;                                               \
  }                                                              \
  static inline TOUT ct_gemm_store_##NAME(ACC v) {               \
    return (TOUT)v;                                              \
  }                                                              \
  static inline ACC ct_gemm_madd_##NAME(ACC acc, ACC a, ACC b) { \
    return (ACC)(acc + a * b);                                   \
  }

/* Floats: IN and OUT name the ct_load_/ct_store_ helpers of the storage dtypes. */
#define CT_GEMM_FLOAT_OPS(NAME, TIN, TOUT, ACC, IN, OUT)         \
  static inline ACC ct_gemm_load_in_##NAME(TIN v) {              \
    return ct_load_##IN(v);                                      \
  }                                                              \
  static inline ACC ct_gemm_load_out_##NAME(TOUT v) {            \
    return ct_load_##OUT(v);                                     \
  }                                                              \
  static inline TOUT ct_gemm_store_##NAME(ACC v) {               \
    return ct_store_##OUT(v);                                    \
  }                                                              \
  static inline ACC ct_gemm_madd_##NAME(ACC acc, ACC a, ACC b) { \
    return acc + a * b;                                          \
  }

static inline uint8_t ct_gemm_load_in_b8(uint8_t v) {
  return v != 0;
}
static inline uint8_t ct_gemm_load_out_b8(uint8_t v) {
  return v != 0;
}
static inline uint8_t ct_gemm_store_b8(uint8_t v) {
  return v;
}
static inline uint8_t ct_gemm_madd_b8(uint8_t acc, uint8_t a, uint8_t b) {
  return (uint8_t)(acc | (a & b));
}
CT_GEMM_INT_OPS(i8, int8_t, int8_t, uint32_t)
CT_GEMM_INT_OPS(i16, int16_t, int16_t, uint32_t)
CT_GEMM_INT_OPS(i32, int32_t, int32_t, uint32_t)
CT_GEMM_INT_OPS(i64, int64_t, int64_t, uint64_t)
CT_GEMM_INT_OPS(u8, uint8_t, uint8_t, uint32_t)
CT_GEMM_INT_OPS(u16, uint16_t, uint16_t, uint32_t)
CT_GEMM_INT_OPS(u32, uint32_t, uint32_t, uint32_t)
CT_GEMM_INT_OPS(u64, uint64_t, uint64_t, uint64_t)
CT_GEMM_FLOAT_OPS(f16, uint16_t, uint16_t, float, f16, f16)
CT_GEMM_FLOAT_OPS(bf16, uint16_t, uint16_t, float, bf16, bf16)
CT_GEMM_FLOAT_OPS(f32, float, float, float, f32, f32)
CT_GEMM_FLOAT_OPS(f64, double, double, double, f64, f64)
CT_GEMM_FLOAT_OPS(f32_f16, float, uint16_t, float, f32, f16)
CT_GEMM_FLOAT_OPS(f32_bf16, float, uint16_t, float, f32, bf16)

/* Complex: NumPy's plain product (complex_math.h), not C's Annex G operator; MUL is ct_cmul or
 * ct_cmulconj (conj(a) * b). */
#define CT_GEMM_COMPLEX_OPS(NAME, CT, MUL)                   \
  static inline CT ct_gemm_load_in_##NAME(CT v) {            \
    return v;                                                \
  }                                                          \
  static inline CT ct_gemm_load_out_##NAME(CT v) {           \
    return v;                                                \
  }                                                          \
  static inline CT ct_gemm_store_##NAME(CT v) {              \
    return v;                                                \
  }                                                          \
  static inline CT ct_gemm_madd_##NAME(CT acc, CT a, CT b) { \
    return ct_cadd_##CT(acc, MUL##_##CT(a, b));              \
  }
CT_GEMM_COMPLEX_OPS(c64, ct_complex64, ct_cmul)
CT_GEMM_COMPLEX_OPS(c128, ct_complex128, ct_cmul)
CT_GEMM_COMPLEX_OPS(c64_conj, ct_complex64, ct_cmulconj)
CT_GEMM_COMPLEX_OPS(c128_conj, ct_complex128, ct_cmulconj)

/* Runs tiles [0, tiles) of d, each of tile_size outputs, on OpenMP threads when the problem is
 * worth it. Dynamic scheduling in chunks of about an eighth of a thread's share: a core that
 * other work keeps busy must not hold the others up. */
typedef void (*ct_gemm_tile_fn)(const ct_gemm_desc* d, int64_t t);

static void ct_gemm_parallel(const ct_gemm_desc* d, int64_t tiles, int64_t tile_size,
                             ct_gemm_tile_fn run_tile) {
  /* Multiply-adds per tile, saturated at the grain (tile_size <= MB * NB). */
  const int64_t depth =
      d->k < CT_CPU_PARALLEL_GRAIN ? (d->k > 0 ? d->k : 1) : CT_CPU_PARALLEL_GRAIN;
  const int64_t cost = tile_size * depth;
  const int threads = ct_cpu_num_threads();
  const bool parallel = threads > 1 && tiles > 1 && tiles >= CT_CPU_PARALLEL_GRAIN / cost;
  const int64_t chunk = tiles / (8 * (int64_t)threads) + 1;
#pragma omp parallel for schedule(dynamic, chunk) num_threads(threads) if (parallel)
  for (int64_t t = 0; t < tiles; ++t) run_tile(d, t);
}

/* ----- the template: tile kernel, tile runner, driver ----- */

#define CT_GEMM_DEFINE(NAME, TIN, TOUT, ACC)                                                       \
  enum { ct_gemm_nb_##NAME = CT_GEMM_ROW_BYTES / (int)sizeof(ACC) };                               \
                                                                                                   \
  /* One tile: C[0:mb, 0:nb] (=|+=) A[0:mb, 0:k] · B[0:k, 0:nb]; mb <= MB, nb <= NB. */            \
  static void ct_gemm_tile_##NAME(int64_t mb, int64_t nb, int64_t k, const TIN* a, int64_t a_rs,   \
                                  int64_t a_cs, const TIN* b, int64_t b_rs, int64_t b_cs, TOUT* c, \
                                  int64_t c_rs, int64_t c_cs, bool accumulate) {                   \
    enum { NB = ct_gemm_nb_##NAME };                                                               \
    _Alignas(64) ACC acc[CT_GEMM_MB][NB];                                                          \
    _Alignas(64) ACC ap[CT_GEMM_MB][CT_GEMM_KB];                                                   \
    _Alignas(64) ACC bp[CT_GEMM_KB][NB];                                                           \
    for (int64_t i = 0; i < mb; ++i) {                                                             \
      const TOUT* ci = c + i * c_rs;                                                               \
      for (int64_t j = 0; j < nb; ++j) {                                                           \
        acc[i][j] = accumulate ? ct_gemm_load_out_##NAME(ci[j * c_cs]) : (ACC)0;                   \
      }                                                                                            \
    }                                                                                              \
    for (int64_t p0 = 0; p0 < k; p0 += CT_GEMM_KB) {                                               \
      const int64_t kb = k - p0 < CT_GEMM_KB ? k - p0 : CT_GEMM_KB;                                \
      /* Pack along the operand's smaller stride, so that a transposed operand is read             \
       * along its rows too. */                                                                    \
      if (b_cs == 1 || (b_cs < 0 ? -b_cs : b_cs) <= (b_rs < 0 ? -b_rs : b_rs)) {                   \
        for (int64_t p = 0; p < kb; ++p) {                                                         \
          const TIN* src = b + (p0 + p) * b_rs;                                                    \
          ACC* dst = bp[p];                                                                        \
          if (b_cs == 1) {                                                                         \
            for (int64_t j = 0; j < nb; ++j) dst[j] = ct_gemm_load_in_##NAME(src[j]);              \
          } else {                                                                                 \
            for (int64_t j = 0; j < nb; ++j) dst[j] = ct_gemm_load_in_##NAME(src[j * b_cs]);       \
          }                                                                                        \
        }                                                                                          \
      } else {                                                                                     \
        for (int64_t j = 0; j < nb; ++j) {                                                         \
          const TIN* src = b + p0 * b_rs + j * b_cs;                                               \
          for (int64_t p = 0; p < kb; ++p) bp[p][j] = ct_gemm_load_in_##NAME(src[p * b_rs]);       \
        }                                                                                          \
      }                                                                                            \
      if ((a_cs < 0 ? -a_cs : a_cs) <= (a_rs < 0 ? -a_rs : a_rs)) {                                \
        for (int64_t i = 0; i < mb; ++i) {                                                         \
          const TIN* src = a + i * a_rs + p0 * a_cs;                                               \
          for (int64_t p = 0; p < kb; ++p) ap[i][p] = ct_gemm_load_in_##NAME(src[p * a_cs]);       \
        }                                                                                          \
      } else {                                                                                     \
        for (int64_t p = 0; p < kb; ++p) {                                                         \
          const TIN* src = a + (p0 + p) * a_cs;                                                    \
          for (int64_t i = 0; i < mb; ++i) ap[i][p] = ct_gemm_load_in_##NAME(src[i * a_rs]);       \
        }                                                                                          \
      }                                                                                            \
      for (int64_t i = 0; i < mb; ++i) {                                                           \
        ACC* restrict row = acc[i];                                                                \
        const ACC* ai = ap[i];                                                                     \
        int64_t p = 0;                                                                             \
        for (; p + 4 <= kb; p += 4) {                                                              \
          const ACC a0 = ai[p], a1 = ai[p + 1], a2 = ai[p + 2], a3 = ai[p + 3];                    \
          const ACC* restrict b0 = bp[p];                                                          \
          const ACC* restrict b1 = bp[p + 1];                                                      \
          const ACC* restrict b2 = bp[p + 2];                                                      \
          const ACC* restrict b3 = bp[p + 3];                                                      \
          for (int64_t j = 0; j < nb; ++j) {                                                       \
            ACC s = ct_gemm_madd_##NAME(row[j], a0, b0[j]);                                        \
            s = ct_gemm_madd_##NAME(s, a1, b1[j]);                                                 \
            s = ct_gemm_madd_##NAME(s, a2, b2[j]);                                                 \
            row[j] = ct_gemm_madd_##NAME(s, a3, b3[j]);                                            \
          }                                                                                        \
        }                                                                                          \
        for (; p < kb; ++p) {                                                                      \
          const ACC a0 = ai[p];                                                                    \
          const ACC* restrict b0 = bp[p];                                                          \
          for (int64_t j = 0; j < nb; ++j) row[j] = ct_gemm_madd_##NAME(row[j], a0, b0[j]);        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    for (int64_t i = 0; i < mb; ++i) {                                                             \
      TOUT* ci = c + i * c_rs;                                                                     \
      if (c_cs == 1) {                                                                             \
        for (int64_t j = 0; j < nb; ++j) ci[j] = ct_gemm_store_##NAME(acc[i][j]);                  \
      } else {                                                                                     \
        for (int64_t j = 0; j < nb; ++j) ci[j * c_cs] = ct_gemm_store_##NAME(acc[i][j]);           \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
                                                                                                   \
  /* Tile t, in the order (batch, column tile, row tile). */                                       \
  static void ct_gemm_run_tile_##NAME(const ct_gemm_desc* d, int64_t t) {                          \
    const int64_t nb_max = ct_gemm_nb_##NAME;                                                      \
    const int64_t mt = (d->m + CT_GEMM_MB - 1) / CT_GEMM_MB;                                       \
    const int64_t nt = (d->n + nb_max - 1) / nb_max;                                               \
    const int64_t it = t % mt, jt = (t / mt) % nt;                                                 \
    int64_t batch = t / mt / nt;                                                                   \
    int64_t a_off = 0, b_off = 0, c_off = 0;                                                       \
    for (int32_t q = d->batch_ndim - 1; q >= 0 && batch > 0; --q) {                                \
      const int64_t index = batch % d->batch_shape[q];                                             \
      batch /= d->batch_shape[q];                                                                  \
      a_off += index * d->a_bs[q];                                                                 \
      b_off += index * d->b_bs[q];                                                                 \
      c_off += index * d->c_bs[q];                                                                 \
    }                                                                                              \
    const int64_t i0 = it * CT_GEMM_MB, j0 = jt * nb_max;                                          \
    const int64_t mb = d->m - i0 < CT_GEMM_MB ? d->m - i0 : CT_GEMM_MB;                            \
    const int64_t nb = d->n - j0 < nb_max ? d->n - j0 : nb_max;                                    \
    const TIN* a = NULL;                                                                           \
    const TIN* b = NULL;                                                                           \
    if (d->k > 0) {                                                                                \
      a = (const TIN*)d->a + a_off + i0 * d->a_rs;                                                 \
      b = (const TIN*)d->b + b_off + j0 * d->b_cs;                                                 \
    }                                                                                              \
    TOUT* c = (TOUT*)d->c + c_off + i0 * d->c_rs + j0 * d->c_cs;                                   \
    ct_gemm_tile_##NAME(mb, nb, d->k, a, d->a_rs, d->a_cs, b, d->b_rs, d->b_cs, c, d->c_rs,        \
                        d->c_cs, d->accumulate);                                                   \
  }                                                                                                \
                                                                                                   \
  static void ct_gemm_simple_##NAME(const ct_gemm_desc* d) {                                       \
    if (d->m <= 0 || d->n <= 0) return;                                                            \
    int64_t batch = 1;                                                                             \
    for (int32_t q = 0; q < d->batch_ndim; ++q) batch *= d->batch_shape[q];                        \
    if (batch <= 0) return;                                                                        \
    const int64_t nb_max = ct_gemm_nb_##NAME;                                                      \
    const int64_t tiles =                                                                          \
        batch * ((d->m + CT_GEMM_MB - 1) / CT_GEMM_MB) * ((d->n + nb_max - 1) / nb_max);           \
    const int64_t mb = d->m < CT_GEMM_MB ? d->m : CT_GEMM_MB;                                      \
    const int64_t nb = d->n < nb_max ? d->n : nb_max;                                              \
    ct_gemm_parallel(d, tiles, mb * nb, ct_gemm_run_tile_##NAME);                                  \
  }

CT_GEMM_INSTANCES(CT_GEMM_DEFINE)

/* ----- entry points: the packed path where it applies, else the simple one ----- */

#define CT_GEMM_ENTRY_PACKED(NAME, TIN, TOUT, ACC)           \
  void ct_gemm_##NAME(const ct_gemm_desc* d) {               \
    if (d->m <= 0 || d->n <= 0) return;                      \
    if (!ct_gemm_packed_##NAME(d)) ct_gemm_simple_##NAME(d); \
  }                                                          \
  uint64_t ct_gemm_workspace_##NAME(const ct_gemm_desc* d) { \
    return ct_gemm_packed_workspace_##NAME(d);               \
  }
#define CT_GEMM_ENTRY_SIMPLE(NAME, TIN, TOUT, ACC)           \
  void ct_gemm_##NAME(const ct_gemm_desc* d) {               \
    ct_gemm_simple_##NAME(d);                                \
  }                                                          \
  uint64_t ct_gemm_workspace_##NAME(const ct_gemm_desc* d) { \
    (void)d;                                                 \
    return 0;                                                \
  }
CT_GEMM_SIMPLE_INSTANCES(CT_GEMM_ENTRY_SIMPLE)
CT_GEMM_PACKED_INSTANCES(CT_GEMM_ENTRY_PACKED)
