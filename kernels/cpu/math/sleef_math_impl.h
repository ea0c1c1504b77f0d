/* sleef_math_impl.h - the loops of sleef_math.h for one instruction set and one floating-point
 * type, included by sleef_math_avx2.c and sleef_math_avx512.c once per type (as
 * gemm_ukernel_impl.h is), after defining:
 *   CT_SM_T, CT_SM_SFX        the element type and its suffix (float, f32; double, f64)
 *   CT_SM_ISA                 the suffix of the loops' names (avx2, avx512)
 *   CT_SM_V, CT_SM_M          the vector type and the type of a lane mask
 *   CT_SM_LANES               elements a vector
 *   CT_SM_LOADU, CT_SM_STOREU, CT_SM_SET1, CT_SM_ADD, CT_SM_SUB, CT_SM_DIV (vector operations),
 *   CT_SM_SIGN_AND(v, s)      v's bits and s's sign bit (s is -0.0 in every lane)
 *   CT_SM_ABS(v)              |v|
 *   CT_SM_FLOOR(v)            floor, every lane
 *   CT_SM_CMP(a, b, P)        the mask of lanes where a P b (P one of _CMP_*)
 *   CT_SM_BLEND(m, a, b)      b in the lanes of m, a elsewhere
 *   CT_SM_MAND, CT_SM_MXOR    masks' and, xor; CT_SM_BITS(m): the mask as the bits of an int
 *   CT_SM_UNARY_FN(NAME)      SLEEF's one-argument function NAME (1.0-ulp versions)
 *   CT_SM_LIBM(NAME)          the C library's function NAME of this type
 *   CT_SM_LIMIT(F32, F64)     this type's value of a limit
 *   CT_SM_BINARY_FN(NAME, ACCURACY)  SLEEF's two-argument function NAME (ACCURACY: _u10, ...)
 *   CT_SM_FMOD                SLEEF's fmod
 * It defines ct_sleef_unary_<SFX>_<ISA>, ct_sleef_binary_<SFX>_<ISA> and
 * ct_sleef_divmod_<SFX>_<ISA> (sleef_math.h), and undefines the CT_SM_* names. */

#define CT_SM_CAT3_(a, b, c) a##b##c
#define CT_SM_CAT3(a, b, c) CT_SM_CAT3_(a, b, c)
#define CT_SM_NAME(STEM) CT_SM_CAT3(STEM, CT_SM_SFX, CT_SM_CAT3(_, CT_SM_ISA, ))

/* buffer[k] = the element at p + (i + k) · step for k < m, and ones past m (which every function
 * takes without a special case); then the vector of it. */
static inline CT_SM_V CT_SM_NAME(ct_sleef_gather_)(const char* p, int64_t step, int64_t i,
                                                   int64_t m, CT_SM_T* buffer) {
  for (int k = 0; k < CT_SM_LANES; ++k) {
    buffer[k] = k < m ? *(const CT_SM_T*)(p + (i + k) * step) : (CT_SM_T)1;
  }
  return CT_SM_LOADU(buffer);
}

/* One operand's vector of elements [i, i + m) (`whole`: m == CT_SM_LANES): the broadcast scalar
 * (step 0), a load from a contiguous run, or gathered through `buffer`. */
#define CT_SM_OPERAND(p, step, scalar, i, m, whole, buffer) \
  ((step) == 0 ? (scalar)                                   \
   : (whole) && (step) == (int64_t)sizeof(CT_SM_T)          \
       ? CT_SM_LOADU((const CT_SM_T*)((p) + (i) * (step)))  \
       : CT_SM_NAME(ct_sleef_gather_)((p), (step), (i), (m), (buffer)))

/* The loop of a vector computation over ARITY (1 or 2) operands a and b (with one operand, the
 * PROLOGUE names b = a), steps in bytes (0 for a scalar operand): PROLOGUE runs once, then `r =
 * COMPUTE(x, y, &far)` (y is x for one operand) sets r and, in `far`, a bit per lane that
 * FAR_SCALAR(x, y) must compute instead. Whole vectors of contiguous runs are loaded and stored in
 * place (in a loop of their own while all operands are contiguous), scalar operands broadcast once,
 * other elements (strided runs, the tail) go through vector-sized buffers, so that an element's
 * result does not depend on where it sits. dst may be an operand. */
#define CT_SM_LOOP(SIGNATURE, PROLOGUE, ARITY, COMPUTE, FAR_SCALAR)                                \
  void SIGNATURE {                                                                                 \
    PROLOGUE;                                                                                      \
    if (n <= 0) return;                                                                            \
    const CT_SM_V a_scalar = CT_SM_SET1(*(const CT_SM_T*)a);                                       \
    const CT_SM_V b_scalar = CT_SM_SET1(*(const CT_SM_T*)b);                                       \
    const int64_t size = (int64_t)sizeof(CT_SM_T);                                                 \
    int64_t i = 0;                                                                                 \
    if (as == size && ((ARITY) == 1 || bs == size) && ds == size) {                                \
      /* contiguous: whole vectors straight through, up to the first with a lane for FAR_SCALAR */ \
      for (; i + CT_SM_LANES <= n; i += CT_SM_LANES) {                                             \
        const CT_SM_V x = CT_SM_LOADU((const CT_SM_T*)(const void*)a + i);                         \
        const CT_SM_V y = (ARITY) > 1 ? CT_SM_LOADU((const CT_SM_T*)(const void*)b + i) : x;       \
        int far = 0;                                                                               \
        const CT_SM_V r = COMPUTE(x, y, &far);                                                     \
        if (far) break;                                                                            \
        CT_SM_STOREU((CT_SM_T*)(void*)dst + i, r);                                                 \
      }                                                                                            \
    }                                                                                              \
    for (; i < n; i += CT_SM_LANES) {                                                              \
      const int64_t m = n - i < CT_SM_LANES ? n - i : CT_SM_LANES;                                 \
      const int whole = m == CT_SM_LANES;                                                          \
      CT_SM_T a_buffer[CT_SM_LANES], b_buffer[CT_SM_LANES], out[CT_SM_LANES];                      \
      const CT_SM_V x = CT_SM_OPERAND(a, as, a_scalar, i, m, whole, a_buffer);                     \
      const CT_SM_V y = (ARITY) > 1 ? CT_SM_OPERAND(b, bs, b_scalar, i, m, whole, b_buffer) : x;   \
      int far = 0;                                                                                 \
      const CT_SM_V r = COMPUTE(x, y, &far);                                                       \
      if (whole && ds == size && !far) {                                                           \
        CT_SM_STOREU((CT_SM_T*)(dst + i * ds), r);                                                 \
        continue;                                                                                  \
      }                                                                                            \
      CT_SM_STOREU(out, r);                                                                        \
      if (far) {                                                                                   \
        CT_SM_STOREU(a_buffer, x);                                                                 \
        CT_SM_STOREU(b_buffer, y);                                                                 \
        for (int k = 0; k < CT_SM_LANES; ++k) {                                                    \
          if (far >> k & 1) out[k] = FAR_SCALAR(a_buffer[k], b_buffer[k]);                         \
        }                                                                                          \
      }                                                                                            \
      for (int64_t k = 0; k < m; ++k) *(CT_SM_T*)(dst + (i + k) * ds) = out[k];                    \
    }                                                                                              \
  }

/* ----- one-argument functions: SLEEF's, the C library's past each function's limit ----- */

typedef struct CT_SM_NAME(ct_sleef_unary_row_) {
  CT_SM_V (*vector)(CT_SM_V);
  CT_SM_T (*scalar)(CT_SM_T);
  CT_SM_T limit;
} CT_SM_NAME(ct_sleef_unary_row_);

#define CT_SM_UNARY_ROW(NAME, LIMIT_F32, LIMIT_F64) \
  [CT_SLEEF_##NAME] = {CT_SM_UNARY_FN(NAME), CT_SM_LIBM(NAME), CT_SM_LIMIT(LIMIT_F32, LIMIT_F64)},
static const CT_SM_NAME(ct_sleef_unary_row_)
    CT_SM_NAME(ct_sleef_unary_table_)[CT_SLEEF_COUNT] = {CT_SLEEF_UNARY_FUNCTIONS(CT_SM_UNARY_ROW)};
#undef CT_SM_UNARY_ROW

#define CT_SM_UNARY_PROLOGUE                                                           \
  const CT_SM_NAME(ct_sleef_unary_row_)* row = &CT_SM_NAME(ct_sleef_unary_table_)[fn]; \
  const int checked = row->limit < INFINITY;                                           \
  const CT_SM_V bound = CT_SM_SET1(row->limit);                                        \
  const char* b = a;                                                                   \
  const int64_t bs = as
#define CT_SM_UNARY_COMPUTE(x, y, far)                                                       \
  (*(far) = checked ? CT_SM_BITS(CT_SM_CMP(CT_SM_ABS(x), bound, _CMP_GT_OQ)) : 0, (void)(y), \
   row->vector(x))
#define CT_SM_UNARY_SCALAR(x, y) row->scalar(x)
CT_SM_LOOP(CT_SM_NAME(ct_sleef_unary_)(ct_sleef_fn fn, const char* a, int64_t as, char* dst,
                                       int64_t ds, int64_t n),
           CT_SM_UNARY_PROLOGUE, 1, CT_SM_UNARY_COMPUTE, CT_SM_UNARY_SCALAR)

/* ----- two-argument functions: SLEEF's, every lane ----- */

#define CT_SM_BINARY_ROW(NAME, ACCURACY) [CT_SLEEF2_##NAME] = CT_SM_BINARY_FN(NAME, ACCURACY),
static CT_SM_V (*const CT_SM_NAME(ct_sleef_binary_table_)[CT_SLEEF_BINARY_COUNT])(CT_SM_V,
                                                                                  CT_SM_V) = {
    CT_SLEEF_BINARY_FUNCTIONS(CT_SM_BINARY_ROW)};
#undef CT_SM_BINARY_ROW

#define CT_SM_BINARY_COMPUTE(x, y, far) vector(x, y)
#define CT_SM_BINARY_SCALAR(x, y) 0
CT_SM_LOOP(CT_SM_NAME(ct_sleef_binary_)(ct_sleef_binary_fn fn, const char* a, int64_t as,
                                        const char* b, int64_t bs, char* dst, int64_t ds,
                                        int64_t n),
           CT_SM_V (*const vector)(CT_SM_V, CT_SM_V) = CT_SM_NAME(ct_sleef_binary_table_)[fn], 2,
           CT_SM_BINARY_COMPUTE, CT_SM_BINARY_SCALAR)

/* ----- floor_divide and remainder over SLEEF's fmod ----- */

/* NumPy's floor_divide and remainder (npy_divmod, as the scalar copy in binary_math_kernels.c)
 * on a vector, from mod = SLEEF's fmod, with selects for its branches. `far`: the lanes where
 * SLEEF's fmod gave NaN for a finite a and a nonzero, non-NaN b (a / b overflows: 3e38 / 0.5 in
 * float32), which the caller's scalar function computes. */
static inline CT_SM_V CT_SM_NAME(ct_sleef_divmod_vector_)(CT_SM_V a, CT_SM_V b, int floor_divide,
                                                          int* far) {
  const CT_SM_V mod = CT_SM_FMOD(a, b);
  const CT_SM_V zero = CT_SM_SET1(0.0), sign = CT_SM_SET1(-0.0), one = CT_SM_SET1(1.0);
  *far =
      CT_SM_BITS(CT_SM_MAND(CT_SM_MAND(CT_SM_CMP(mod, mod, _CMP_UNORD_Q),
                                       CT_SM_CMP(CT_SM_ABS(a), CT_SM_SET1(INFINITY), _CMP_LT_OQ)),
                            CT_SM_CMP(b, zero, _CMP_NEQ_OQ)));
  /* mod nonzero (or NaN) and of the other sign than b: mod + b, and one less in the quotient */
  const CT_SM_M fix =
      CT_SM_MAND(CT_SM_CMP(mod, zero, _CMP_NEQ_UQ),
                 CT_SM_MXOR(CT_SM_CMP(b, zero, _CMP_LT_OQ), CT_SM_CMP(mod, zero, _CMP_LT_OQ)));
  if (!floor_divide) { /* a zero modulus takes b's sign */
    const CT_SM_V r = CT_SM_BLEND(fix, mod, CT_SM_ADD(mod, b));
    return CT_SM_BLEND(CT_SM_CMP(mod, zero, _CMP_EQ_OQ), r, CT_SM_SIGN_AND(b, sign));
  }
  const CT_SM_V quotient = CT_SM_DIV(a, b);
  CT_SM_V div = CT_SM_DIV(CT_SM_SUB(a, mod), b);
  div = CT_SM_BLEND(fix, div, CT_SM_SUB(div, one));
  /* floor, one more where the division left the value more than a half above it */
  CT_SM_V floored = CT_SM_FLOOR(div);
  floored = CT_SM_BLEND(CT_SM_CMP(CT_SM_SUB(div, floored), CT_SM_SET1(0.5), _CMP_GT_OQ), floored,
                        CT_SM_ADD(floored, one));
  /* a zero quotient takes a / b's sign; b == 0 gives a / b */
  const CT_SM_V r =
      CT_SM_BLEND(CT_SM_CMP(div, zero, _CMP_EQ_OQ), floored, CT_SM_SIGN_AND(quotient, sign));
  return CT_SM_BLEND(CT_SM_CMP(b, zero, _CMP_EQ_OQ), r, quotient);
}

#define CT_SM_DIVMOD_COMPUTE(x, y, far) CT_SM_NAME(ct_sleef_divmod_vector_)(x, y, floor_divide, far)
CT_SM_LOOP(CT_SM_NAME(ct_sleef_divmod_)(int floor_divide, CT_SM_T (*scalar)(CT_SM_T, CT_SM_T),
                                        const char* a, int64_t as, const char* b, int64_t bs,
                                        char* dst, int64_t ds, int64_t n),
           (void)0, 2, CT_SM_DIVMOD_COMPUTE, scalar)

#undef CT_SM_CAT3_
#undef CT_SM_CAT3
#undef CT_SM_NAME
#undef CT_SM_OPERAND
#undef CT_SM_LOOP
#undef CT_SM_UNARY_PROLOGUE
#undef CT_SM_UNARY_COMPUTE
#undef CT_SM_UNARY_SCALAR
#undef CT_SM_BINARY_COMPUTE
#undef CT_SM_BINARY_SCALAR
#undef CT_SM_DIVMOD_COMPUTE
#undef CT_SM_T
#undef CT_SM_SFX
#undef CT_SM_V
#undef CT_SM_M
#undef CT_SM_LANES
#undef CT_SM_LOADU
#undef CT_SM_STOREU
#undef CT_SM_SET1
#undef CT_SM_ADD
#undef CT_SM_SUB
#undef CT_SM_DIV
#undef CT_SM_SIGN_AND
#undef CT_SM_ABS
#undef CT_SM_FLOOR
#undef CT_SM_CMP
#undef CT_SM_BLEND
#undef CT_SM_MAND
#undef CT_SM_MXOR
#undef CT_SM_BITS
#undef CT_SM_UNARY_FN
#undef CT_SM_LIBM
#undef CT_SM_LIMIT
#undef CT_SM_BINARY_FN
#undef CT_SM_FMOD
