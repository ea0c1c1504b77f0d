/* elementwise_loops.h - inner-loop templates for element-wise kernels.
 *
 * Each template defines a real named function ct_cpu_<op>_<sfx> with the engine's loop
 * signature plus its ct_cpu_loop_entry, computing through ct_op_<op>_<C>(...) on compute-type
 * values. Contiguous runs get a plain indexed loop the compiler vectorises, compiled per ISA
 * (cpu_isa.h: AVX2 and AVX-512 copies, picked at run time); other runs step by bytes. */
#ifndef CTENSOR_CPU_ELEMENTWISE_LOOPS_H_
#define CTENSOR_CPU_ELEMENTWISE_LOOPS_H_

#include "engine/cpu_dtypes.h"
#include "engine/cpu_isa.h"
#include "engine/store_align.h"
#include "engine/stream_store.h"
#include "engine/strided_iter.h"

/* The engine's loop parameters and arguments, for CT_CPU_ISA_LOOP. */
#define CT_CPU_LOOP_PARAMS (char** data, const int64_t* steps, int64_t n, const void* extra)
#define CT_CPU_LOOP_ARGS (data, steps, n, extra)

#define CT_AT(type, base, index, step) (*(type*)((base) + (index) * (step)))

/* How many of the first n elements (size elem bytes) at dst to write one by one so that the
 * rest of the stores start on a 64-byte line (store_align.h): peeling is worth 10-15% of
 * bandwidth on long loops; short loops (under 256 elements) get no peel. */
static inline int64_t ct_store_align_head(const void* dst, int64_t elem, int64_t n) {
  return n < 256 ? 0 : ct_elements_to_boundary(dst, elem, 64);
}

/* Elements a store loop writes one by one before the rest: up to the first cache line boundary
 * where it streams (whole lines only), else ct_store_align_head's. */
static inline int64_t ct_store_loop_head(const void* dst, int64_t elem, int64_t n, int stream) {
  return stream ? ct_elements_to_boundary(dst, elem, CT_STREAM_LINE_BYTES)
                : ct_store_align_head(dst, elem, n);
}

/* DST[i] = VALUE (an expression of i) for i in [0, N), DST of type T*. Where the engine asks for
 * streaming (ct_cpu_stream_output: the thread writes a huge output) and DST is on a 16-byte
 * boundary, the elements up to the first cache-line boundary are stored one by one, then values
 * are computed into a buffer in L1, a block at a time, and written out whole lines at a time with
 * non-temporal stores (stream_store.h; the engine fences them once, after the thread's last
 * loop), and the last partial line is stored one by one. Otherwise the loop is peeled so that the
 * stores after the head are aligned. VALUE appears three times (head, block, the rest): every
 * copy of it is a loop the compiler vectorises, and the element-wise files are most of the
 * build's time. */
#define CT_ALIGNED_STORE_LOOP(T, DST, N, VALUE)                                           \
  do {                                                                                    \
    const int ct_stream_ = ct_cpu_stream_output && ct_stream_aligned(DST);                \
    const int64_t ct_head_ = ct_store_loop_head(DST, (int64_t)sizeof(T), N, ct_stream_);  \
    int64_t i = 0;                                                                        \
    for (; i < ct_head_ && i < (N); ++i) (DST)[i] = (VALUE);                              \
    if (ct_stream_) {                                                                     \
      enum {                                                                              \
        ct_block_ = CT_STREAM_BLOCK_BYTES / (int)sizeof(T),                               \
        ct_piece_ = CT_STREAM_LINE_BYTES / (int)sizeof(T)                                 \
      };                                                                                  \
      _Alignas(64) T ct_buffer_[ct_block_];                                               \
      while ((N) - i >= ct_piece_) {                                                      \
        const int64_t ct_first_ = i;                                                      \
        const int64_t ct_count_ =                                                         \
            (N) - i < ct_block_ ? ((N) - i) / ct_piece_ * ct_piece_ : (int64_t)ct_block_; \
        for (; i < ct_first_ + ct_count_; ++i) ct_buffer_[i - ct_first_] = (VALUE);       \
        ct_stream_copy((DST) + ct_first_, ct_buffer_, ct_count_ * (int64_t)sizeof(T),     \
                       ct_cpu_stream_output);                                             \
      }                                                                                   \
    }                                                                                     \
    for (; i < (N); ++i) (DST)[i] = (VALUE);                                              \
  } while (0)

/* CT_ALIGNED_STORE_LOOP for the AVX2 and AVX-512 copies of a loop (CT_CPU_ISA_LOOP_WIDE), where
 * streaming is always 32 bytes a store (ct_stream_mode): each whole line is computed into a
 * line-sized local buffer, which GCC keeps in registers, and stored from there
 * (ct_stream_line_wide) instead of going through a block in L1. A (4096, 4096) + (4096,) float32
 * add on one core, in a standalone loop: 26 GB/s through a 1 KB block, 33-34 line by line, 40 for
 * a negation (no second stream); the block's stores and reloads were most of the difference.
 * VALUE appears three times, as in CT_ALIGNED_STORE_LOOP. */
#ifdef CT_STREAM_WIDE_STORES
#define CT_ALIGNED_STORE_LOOP_WIDE(T, DST, N, VALUE)                                         \
  do {                                                                                       \
    const int ct_stream_ = ct_cpu_stream_output == CT_STREAM_WIDE && ct_stream_aligned(DST); \
    const int64_t ct_head_ = ct_store_loop_head(DST, (int64_t)sizeof(T), N, ct_stream_);     \
    int64_t i = 0;                                                                           \
    for (; i < ct_head_ && i < (N); ++i) (DST)[i] = (VALUE);                                 \
    if (ct_stream_) {                                                                        \
      enum { ct_piece_ = CT_STREAM_LINE_BYTES / (int)sizeof(T) };                            \
      while ((N) - i >= ct_piece_) {                                                         \
        _Alignas(64) T ct_line_[ct_piece_];                                                  \
        T* const ct_at_ = (DST) + i;                                                         \
        for (int ct_k_ = 0; ct_k_ < ct_piece_; ++ct_k_, ++i) ct_line_[ct_k_] = (VALUE);      \
        ct_stream_line_wide(ct_at_, ct_line_);                                               \
      }                                                                                      \
    }                                                                                        \
    for (; i < (N); ++i) (DST)[i] = (VALUE);                                                 \
  } while (0)
#else
#define CT_ALIGNED_STORE_LOOP_WIDE CT_ALIGNED_STORE_LOOP
#endif

/* out = op(x), output dtype OSFX/OT: a body for CT_CPU_ISA_LOOP_WIDE named BODY, with attributes
 * TARGET (the wide body targets AVX2, so that it may inline the AVX stores of STORE_LOOP; it is
 * only ever inlined into the AVX2 and AVX-512 copies). */
#define CT_UNARY_BODY(NAME, SFX, T, C, OSFX, OT, TARGET, BODY, STORE_LOOP)              \
  TARGET static CT_CPU_ISA_BODY void BODY(char** data, const int64_t* steps, int64_t n, \
                                          const void* extra) {                          \
    (void)extra;                                                                        \
    char *src = data[0], *dst = data[1];                                                \
    const int64_t ss = steps[0], ds = steps[1];                                         \
    if (ss == (int64_t)sizeof(T) && ds == (int64_t)sizeof(OT)) {                        \
      const T* s = (const T*)src;                                                       \
      OT* d = (OT*)dst;                                                                 \
      STORE_LOOP(OT, d, n, ct_store_##OSFX(ct_op_##NAME##_##C(ct_load_##SFX(s[i]))));   \
    } else {                                                                            \
      for (int64_t i = 0; i < n; ++i)                                                   \
        CT_AT(OT, dst, i, ds) =                                                         \
            ct_store_##OSFX(ct_op_##NAME##_##C(ct_load_##SFX(CT_AT(T, src, i, ss))));   \
    }                                                                                   \
  }

/* The loop ct_cpu_<NAME>_<SFX> and its entry from a body macro (CT_UNARY_BODY, CT_BINARY_BODY):
 * the generic copy runs the body with CT_ALIGNED_STORE_LOOP, the AVX2 and AVX-512 copies a wide
 * body with CT_ALIGNED_STORE_LOOP_WIDE. */
#define CT_ELEMENTWISE_LOOP(BODY_MACRO, NAME, SFX, T, C, OSFX, OT)                             \
  BODY_MACRO(NAME, SFX, T, C, OSFX, OT, , ct_cpu_##NAME##_##SFX##_body, CT_ALIGNED_STORE_LOOP) \
  BODY_MACRO(NAME, SFX, T, C, OSFX, OT, CT_CPU_TARGET_AVX2, ct_cpu_##NAME##_##SFX##_wide_body, \
             CT_ALIGNED_STORE_LOOP_WIDE)                                                       \
  CT_CPU_ISA_LOOP_WIDE(ct_cpu_##NAME##_##SFX, CT_CPU_LOOP_PARAMS, CT_CPU_LOOP_ARGS)            \
  static const ct_cpu_loop_entry ct_cpu_##NAME##_##SFX##_entry = {ct_cpu_##NAME##_##SFX};

/* out = op(x), output dtype OSFX/OT. */
#define CT_UNARY_LOOP(NAME, SFX, T, C, OSFX, OT) \
  CT_ELEMENTWISE_LOOP(CT_UNARY_BODY, NAME, SFX, T, C, OSFX, OT)

/* out = op(x1, x2), output dtype OSFX/OT; fast paths for contiguous and scalar operands (a body,
 * as CT_UNARY_BODY). */
#define CT_BINARY_BODY(NAME, SFX, T, C, OSFX, OT, TARGET, BODY, STORE_LOOP)                        \
  TARGET static CT_CPU_ISA_BODY void BODY(char** data, const int64_t* steps, int64_t n,            \
                                          const void* extra) {                                     \
    (void)extra;                                                                                   \
    char *a = data[0], *b = data[1], *o = data[2];                                                 \
    const int64_t sa = steps[0], sb = steps[1], so = steps[2];                                     \
    const int64_t st = (int64_t)sizeof(T);                                                         \
    if (so == (int64_t)sizeof(OT) && sa == st && sb == st) {                                       \
      const T *pa = (const T*)a, *pb = (const T*)b;                                                \
      OT* po = (OT*)o;                                                                             \
      STORE_LOOP(OT, po, n,                                                                        \
                 ct_store_##OSFX(ct_op_##NAME##_##C(ct_load_##SFX(pa[i]), ct_load_##SFX(pb[i])))); \
    } else if (so == (int64_t)sizeof(OT) && sa == 0 && sb == st) {                                 \
      const C x = ct_load_##SFX(*(const T*)a);                                                     \
      const T* pb = (const T*)b;                                                                   \
      OT* po = (OT*)o;                                                                             \
      STORE_LOOP(OT, po, n, ct_store_##OSFX(ct_op_##NAME##_##C(x, ct_load_##SFX(pb[i]))));         \
    } else if (so == (int64_t)sizeof(OT) && sa == st && sb == 0) {                                 \
      const C y = ct_load_##SFX(*(const T*)b);                                                     \
      const T* pa = (const T*)a;                                                                   \
      OT* po = (OT*)o;                                                                             \
      STORE_LOOP(OT, po, n, ct_store_##OSFX(ct_op_##NAME##_##C(ct_load_##SFX(pa[i]), y)));         \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; ++i)                                                              \
        CT_AT(OT, o, i, so) = ct_store_##OSFX(ct_op_##NAME##_##C(                                  \
            ct_load_##SFX(CT_AT(T, a, i, sa)), ct_load_##SFX(CT_AT(T, b, i, sb))));                \
    }                                                                                              \
  }

/* out = op(x1, x2), output dtype OSFX/OT. */
#define CT_BINARY_LOOP(NAME, SFX, T, C, OSFX, OT) \
  CT_ELEMENTWISE_LOOP(CT_BINARY_BODY, NAME, SFX, T, C, OSFX, OT)

/* X-macro adapters: the same-dtype forms, for use as LIST(CT_UNARY_SAME_X, op). */
#define CT_UNARY_SAME_X(NAME, SFX, T, C, U, ID) CT_UNARY_LOOP(NAME, SFX, T, C, SFX, T)
#define CT_BINARY_SAME_X(NAME, SFX, T, C, U, ID) CT_BINARY_LOOP(NAME, SFX, T, C, SFX, T)
#define CT_UNARY_SAME_REG_X(NAME, SFX, T, C, U, ID) \
  {#NAME, 2, {ID, ID}, ct_cpu_elementwise_run, NULL, &ct_cpu_##NAME##_##SFX##_entry},
#define CT_BINARY_SAME_REG_X(NAME, SFX, T, C, U, ID) \
  {#NAME, 3, {ID, ID, ID}, ct_cpu_elementwise_run, NULL, &ct_cpu_##NAME##_##SFX##_entry},

/* The float32 loop ct_cpu_<NAME>_f32_vector of a function computed in double by the vector_math
 * set (vector_math.h: tanh, erf): the set's loop on contiguous runs, its scalar copy ct_<NAME>_f32
 * (the same bits) on others; and its entry. */
#define CT_VECTOR_MATH_F32_LOOP(NAME)                                                  \
  static void ct_cpu_##NAME##_f32_vector(char** data, const int64_t* steps, int64_t n, \
                                         const void* extra) {                          \
    (void)extra;                                                                       \
    char *src = data[0], *dst = data[1];                                               \
    const int64_t ss = steps[0], ds = steps[1];                                        \
    if (ss == (int64_t)sizeof(float) && ds == (int64_t)sizeof(float)) {                \
      ct_vector_math_get()->NAME##_f32((const float*)src, (float*)dst, n);             \
      return;                                                                          \
    }                                                                                  \
    for (int64_t i = 0; i < n; ++i) {                                                  \
      CT_AT(float, dst, i, ds) = ct_##NAME##_f32(CT_AT(float, src, i, ss));            \
    }                                                                                  \
  }                                                                                    \
  static const ct_cpu_loop_entry ct_cpu_##NAME##_f32_vector_entry = {ct_cpu_##NAME##_f32_vector};
/* Its row of a kernel table. */
#define CT_VECTOR_MATH_F32_REG(NAME) \
  {#NAME,                            \
   2,                                \
   {CT_DT_F32, CT_DT_F32},           \
   ct_cpu_elementwise_run,           \
   NULL,                             \
   &ct_cpu_##NAME##_f32_vector_entry},

#endif /* CTENSOR_CPU_ELEMENTWISE_LOOPS_H_ */
