/* attention_tiles_impl.h - moving tiles between the tensors and the compute type, packing them
 * into the GEMM micro-kernels' panels, and the tile products; included once per compute type
 * with CT_AT_T (float or double) and CT_AT_NAME(x) (x suffixed by the type) defined.
 *
 * Panels (gemm_ukernel.h): an A operand of m rows and depth kc is ceil(m / MR) panels of kc x MR
 * (a[p * MR + i] = A[i][p]), a B operand of depth kc and n columns ceil(n / NR) panels of
 * kc x NR (b[p * NR + j] = B[p][j]); rows and columns past m and n are zeros, so every
 * micro-kernel call computes a whole MR x NR tile, and C has room for the rounded-up extents. */

/* dst[r * ld + c] = src(row0 + r, c) * factor for r < rows, c < cols, converted from the
 * operand's dtype; src(r, c) is at base + r * rs + c * cs (elements). */
static void CT_AT_NAME(ct_attn_load)(const ct_attn_operand* op, int64_t base, int64_t rows,
                                     int64_t cols, CT_AT_T* dst, int64_t ld, CT_AT_T factor) {
  const int64_t rs = op->rs, cs = op->cs;
  switch (op->dtype) {
#define CT_ATTN_LOAD_CASE(ID, STORAGE, CONVERT)                                             \
  case ID: {                                                                                \
    const STORAGE* src = (const STORAGE*)op->base + base;                                   \
    for (int64_t r = 0; r < rows; ++r) {                                                    \
      const STORAGE* row = src + r * rs;                                                    \
      CT_AT_T* out = dst + r * ld;                                                          \
      if (cs == 1) {                                                                        \
        for (int64_t c = 0; c < cols; ++c) out[c] = (CT_AT_T)CONVERT(row[c]) * factor;      \
      } else {                                                                              \
        for (int64_t c = 0; c < cols; ++c) out[c] = (CT_AT_T)CONVERT(row[c * cs]) * factor; \
      }                                                                                     \
    }                                                                                       \
    break;                                                                                  \
  }
    CT_ATTN_LOAD_CASE(CT_DT_F16, uint16_t, ct_half_to_float)
    CT_ATTN_LOAD_CASE(CT_DT_BF16, uint16_t, ct_bfloat16_to_float)
    CT_ATTN_LOAD_CASE(CT_DT_F32, float, )
    CT_ATTN_LOAD_CASE(CT_DT_F64, double, )
#undef CT_ATTN_LOAD_CASE
    default:
      break;
  }
}

/* dst(row0 + r, c) = src[r * ld + c] * factor, converted to the operand's dtype (rounded once). */
static void CT_AT_NAME(ct_attn_store)(const ct_attn_operand* op, int64_t base, int64_t rows,
                                      int64_t cols, const CT_AT_T* src, int64_t ld,
                                      CT_AT_T factor) {
  const int64_t rs = op->rs, cs = op->cs;
  switch (op->dtype) {
#define CT_ATTN_STORE_CASE(ID, STORAGE, CONVERT)                                \
  case ID: {                                                                    \
    STORAGE* dst = (STORAGE*)op->base + base;                                   \
    for (int64_t r = 0; r < rows; ++r) {                                        \
      STORAGE* row = dst + r * rs;                                              \
      const CT_AT_T* in = src + r * ld;                                         \
      for (int64_t c = 0; c < cols; ++c) row[c * cs] = CONVERT(in[c] * factor); \
    }                                                                           \
    break;                                                                      \
  }
    CT_ATTN_STORE_CASE(CT_DT_F16, uint16_t, ct_float_to_half)
    CT_ATTN_STORE_CASE(CT_DT_BF16, uint16_t, ct_float_to_bfloat16)
    CT_ATTN_STORE_CASE(CT_DT_F32, float, (float))
    CT_ATTN_STORE_CASE(CT_DT_F64, double, (double))
#undef CT_ATTN_STORE_CASE
    default:
      break;
  }
}

/* A = src (m x kc, row stride ld) as MR-row panels. */
static void CT_AT_NAME(ct_attn_pack_a)(const CT_AT_T* src, int64_t ld, int64_t m, int64_t kc,
                                       int32_t mr, CT_AT_T* dst) {
  for (int64_t i0 = 0; i0 < m; i0 += mr) {
    const int64_t h = m - i0 < mr ? m - i0 : mr;
    for (int64_t p = 0; p < kc; ++p) {
      CT_AT_T* out = dst + p * mr;
      int64_t i = 0;
      for (; i < h; ++i) out[i] = src[(i0 + i) * ld + p];
      for (; i < mr; ++i) out[i] = 0;
    }
    dst += kc * mr;
  }
}

/* A = src^T, src kc x m (row stride ld), as MR-row panels: a row of src gives a column of A. */
static void CT_AT_NAME(ct_attn_pack_a_t)(const CT_AT_T* src, int64_t ld, int64_t m, int64_t kc,
                                         int32_t mr, CT_AT_T* dst) {
  for (int64_t i0 = 0; i0 < m; i0 += mr) {
    const int64_t h = m - i0 < mr ? m - i0 : mr;
    for (int64_t p = 0; p < kc; ++p) {
      const CT_AT_T* in = src + p * ld + i0;
      CT_AT_T* out = dst + p * mr;
      int64_t i = 0;
      for (; i < h; ++i) out[i] = in[i];
      for (; i < mr; ++i) out[i] = 0;
    }
    dst += kc * mr;
  }
}

/* B = src (kc x n, row stride ld) as NR-column panels. */
static void CT_AT_NAME(ct_attn_pack_b)(const CT_AT_T* src, int64_t ld, int64_t kc, int64_t n,
                                       int32_t nr, CT_AT_T* dst) {
  for (int64_t j0 = 0; j0 < n; j0 += nr) {
    const int64_t w = n - j0 < nr ? n - j0 : nr;
    for (int64_t p = 0; p < kc; ++p) {
      const CT_AT_T* in = src + p * ld + j0;
      CT_AT_T* out = dst + p * nr;
      int64_t j = 0;
      for (; j < w; ++j) out[j] = in[j];
      for (; j < nr; ++j) out[j] = 0;
    }
    dst += kc * nr;
  }
}

/* B = src^T, src n x kc (row stride ld), as NR-column panels. */
static void CT_AT_NAME(ct_attn_pack_b_t)(const CT_AT_T* src, int64_t ld, int64_t kc, int64_t n,
                                         int32_t nr, CT_AT_T* dst) {
  for (int64_t j0 = 0; j0 < n; j0 += nr) {
    const int64_t w = n - j0 < nr ? n - j0 : nr;
    for (int64_t j = 0; j < w; ++j) {
      const CT_AT_T* in = src + (j0 + j) * ld;
      for (int64_t p = 0; p < kc; ++p) dst[p * nr + j] = in[p];
    }
    for (int64_t j = w; j < nr; ++j) {
      for (int64_t p = 0; p < kc; ++p) dst[p * nr + j] = 0;
    }
    dst += kc * nr;
  }
}

/* C (=|+=) A B from panels: C has room for m and n rounded up to MR and NR, row stride ldc. */
static void CT_AT_NAME(ct_attn_gemm)(const ct_gemm_ukernels* uk, const CT_AT_T* a, const CT_AT_T* b,
                                     CT_AT_T* c, int64_t ldc, int64_t m, int64_t n, int64_t kc,
                                     int32_t mr, int32_t nr, int accumulate) {
  for (int64_t i0 = 0; i0 < m; i0 += mr) {
    const CT_AT_T* bp = b;
    for (int64_t j0 = 0; j0 < n; j0 += nr) {
      CT_AT_NAME(ct_attn_ukernel)(uk, kc, a, bp, c + i0 * ldc + j0, ldc, accumulate);
      bp += kc * nr;
    }
    a += kc * mr;
  }
}
