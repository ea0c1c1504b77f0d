/* gemm_ukernel_impl.h - the body of a vector micro-kernel (contract in gemm_ukernel.h), written
 * once and included by each instruction set's file with these macros defined:
 *   CT_UK_NAME       function name
 *   CT_UK_T          element type (float or double)
 *   CT_UK_V          vector type; CT_UK_LANES elements per vector
 *   CT_UK_MR         rows of the tile; CT_UK_NV vectors per row (NR = CT_UK_NV · CT_UK_LANES)
 *   CT_UK_ZERO()     a zero vector
 *   CT_UK_LOAD(p)    an aligned load; CT_UK_LOADU(p) / CT_UK_STOREU(p, v) unaligned ones
 *   CT_UK_BCAST(p)   a vector of *p
 *   CT_UK_FMA(a, b, c)  a · b + c, fused
 *   CT_UK_ADD(a, b)  a + b
 * The accumulators are an array indexed by constants after full unrolling, which the compiler
 * keeps in registers (MR · NV + NV + 1 of them must fit the register file). The macros are
 * undefined at the end, so a file can include this body once per precision (with those of
 * gemm_unpacked_impl.h, which a file includes first). */

static void CT_UK_NAME(int64_t kc, const CT_UK_T* restrict a, const CT_UK_T* restrict b,
                       CT_UK_T* restrict c, int64_t ldc, int accumulate) {
  CT_UK_V acc[CT_UK_MR][CT_UK_NV];
#pragma GCC unroll 32
  for (int i = 0; i < CT_UK_MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < CT_UK_NV; ++v) acc[i][v] = CT_UK_ZERO();
  }
  /* The C tile is read or written only after the loop: its lines are fetched meanwhile (for
   * writing), so that neither the accumulating loads nor the stores wait on L2 or L3. */
#pragma GCC unroll 32
  for (int i = 0; i < CT_UK_MR; ++i) {
    __builtin_prefetch(c + i * ldc, 1);
    __builtin_prefetch(c + i * ldc + CT_UK_NV * CT_UK_LANES - 1, 1);
  }
  for (int64_t p = 0; p < kc; ++p) {
    CT_UK_V bv[CT_UK_NV];
#pragma GCC unroll 4
    for (int v = 0; v < CT_UK_NV; ++v) bv[v] = CT_UK_LOAD(b + v * CT_UK_LANES);
#pragma GCC unroll 32
    for (int i = 0; i < CT_UK_MR; ++i) {
      const CT_UK_V ai = CT_UK_BCAST(a + i);
#pragma GCC unroll 4
      for (int v = 0; v < CT_UK_NV; ++v) acc[i][v] = CT_UK_FMA(ai, bv[v], acc[i][v]);
    }
    a += CT_UK_MR;
    b += CT_UK_NV * CT_UK_LANES;
  }
#pragma GCC unroll 32
  for (int i = 0; i < CT_UK_MR; ++i) {
    CT_UK_T* ci = c + i * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < CT_UK_NV; ++v) {
      CT_UK_V r = acc[i][v];
      if (accumulate) r = CT_UK_ADD(r, CT_UK_LOADU(ci + v * CT_UK_LANES));
      CT_UK_STOREU(ci + v * CT_UK_LANES, r);
    }
  }
}

#undef CT_UK_NAME
#undef CT_UK_T
#undef CT_UK_V
#undef CT_UK_LANES
#undef CT_UK_MR
#undef CT_UK_NV
#undef CT_UK_ZERO
#undef CT_UK_LOAD
#undef CT_UK_LOADU
#undef CT_UK_STOREU
#undef CT_UK_BCAST
#undef CT_UK_FMA
#undef CT_UK_ADD
#undef CT_UK_MASK_T
#undef CT_UK_MASK
#undef CT_UK_LOAD_MASK
#undef CT_UK_STORE_MASK
