/* vector_math_impl.h - the body of one vector_math set (see vector_math.h), included once per
 * instruction set with:
 *   CT_VM_NAME       the table to define (ct_vector_math_<isa>)
 *   CT_VM_ISA        its name string
 *   CT_VM_BYTES      vector width in bytes (16, 32, 64)
 *   CT_VM_FMA(a,b,c) a * b + c on float vectors, fused where the set has FMA
 *   CT_VM_MAX(a,b)   a > b ? a : b lane-wise (b where either is nan), CT_VM_MIN(a,b) a < b ? a : b
 *   CT_VM_WIDEN_LOW(v), CT_VM_WIDEN_HIGH(v) (optional) the halves of v as double vectors
 *   CT_VM_MASK_LOAD, CT_VM_MASK_STORE (optional) masked loads and stores, see ct_vm_load_part
 *   CT_VM_SCALE_BY_POW2(y,n) (optional) y · 2^n for whole-number float lanes n, rounded once
 *   CT_VM_STREAM(p,v) a non-temporal store of v at p (aligned to the vector width; the caller
 *                    fences, see ct_vm_map_run)
 * Loops run blocks of CT_VM_BLOCK floats (1, 2 or 4 vectors), then one padded block for the tail,
 * so every element goes through the same arithmetic whatever the length and alignment. Sums add
 * CT_VM_CHUNK blocks in float, position by position, then widen the chunk's block of partial
 * sums into CT_VM_BLOCK double accumulators, added pairwise at the end: the same additions in
 * the same order for every vector width, so sums agree bitwise between sets (only exp uses
 * CT_VM_FMA). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "engine/store_align.h"
#include "math/vector_math.h"

/* Vectors pass between CT_VM_INLINE helpers only, so the warning that their calling convention
 * differs without AVX does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"

/* Helpers are forced inline, so that every loop gets its own copy with the map kind and the
 * optional operands folded in. */
#define CT_VM_INLINE static inline __attribute__((always_inline))

typedef float ct_vf __attribute__((vector_size(CT_VM_BYTES)));
typedef int32_t ct_vi __attribute__((vector_size(CT_VM_BYTES)));
typedef uint32_t ct_vu __attribute__((vector_size(CT_VM_BYTES)));
typedef float ct_vh __attribute__((vector_size(CT_VM_BYTES / 2)));
typedef double ct_vd __attribute__((vector_size(CT_VM_BYTES)));

#define CT_VM_LANES (CT_VM_BYTES / 4)
/* The low and high halves of a float vector widened to doubles (a double vector twice the
 * register width compiles to spills). Sets may give CT_VM_WIDEN_LOW/HIGH(v) as intrinsics; the
 * portable form is a shuffle, which GCC lowers through the stack. */
#ifndef CT_VM_WIDEN_LOW
#if CT_VM_BYTES == 16
#define CT_VM_LOW_LANES 0, 1
#define CT_VM_HIGH_LANES 2, 3
#elif CT_VM_BYTES == 32
#define CT_VM_LOW_LANES 0, 1, 2, 3
#define CT_VM_HIGH_LANES 4, 5, 6, 7
#else
#define CT_VM_LOW_LANES 0, 1, 2, 3, 4, 5, 6, 7
#define CT_VM_HIGH_LANES 8, 9, 10, 11, 12, 13, 14, 15
#endif
#define CT_VM_WIDEN_LOW(v) \
  __builtin_convertvector(__builtin_shufflevector((v), (v), CT_VM_LOW_LANES), ct_vd)
#define CT_VM_WIDEN_HIGH(v) \
  __builtin_convertvector(__builtin_shufflevector((v), (v), CT_VM_HIGH_LANES), ct_vd)
#endif
CT_VM_INLINE ct_vd ct_vm_widen_low(ct_vf v) {
  return (ct_vd)CT_VM_WIDEN_LOW(v);
}
CT_VM_INLINE ct_vd ct_vm_widen_high(ct_vf v) {
  return (ct_vd)CT_VM_WIDEN_HIGH(v);
}
CT_VM_INLINE ct_vf ct_vm_splat(float f) {
  return (ct_vf){0} + f;
}
/* m ? a : b, m lanes all ones or all zeros. */
CT_VM_INLINE ct_vf ct_vm_select(ct_vi m, ct_vf a, ct_vf b) {
  return (ct_vf)(((ct_vi)a & m) | ((ct_vi)b & ~m));
}
/* A block of CT_VM_BLOCK floats in vectors, and its double accumulators. */
#define CT_VM_BLOCK 16
#define CT_VM_CHUNK 8 /* blocks summed in float before widening: 8 terms a float partial sum */
#define CT_VM_VECS (CT_VM_BLOCK / CT_VM_LANES)
typedef struct ct_vm_block {
  ct_vf v[CT_VM_VECS];
} ct_vm_block;
typedef struct ct_vm_sums {
  ct_vd v[2 * CT_VM_VECS]; /* v[2k], v[2k + 1]: the halves of the block's vector k */
} ct_vm_sums;

/* Vector by vector: one memcpy of the whole block would go through the stack. */
CT_VM_INLINE ct_vm_block ct_vm_load_block(const float* p) {
  ct_vm_block b;
  for (int k = 0; k < CT_VM_VECS; ++k) memcpy(&b.v[k], p + k * CT_VM_LANES, sizeof b.v[k]);
  return b;
}
CT_VM_INLINE void ct_vm_store_block(float* p, const ct_vm_block* b) {
  for (int k = 0; k < CT_VM_VECS; ++k) memcpy(p + k * CT_VM_LANES, &b->v[k], sizeof b->v[k]);
}
/* Elements [first, first + count) of block b to p[0, count), through a buffer (plain stores that
 * never touch the rest of the block's span). */
CT_VM_INLINE void ct_vm_store_slice(float* p, const ct_vm_block* b, int64_t first, int64_t count) {
  float buffer[CT_VM_BLOCK];
  ct_vm_store_block(buffer, b);
  memcpy(p, buffer + first, (size_t)count * sizeof(float));
}

/* The first n (< CT_VM_BLOCK) floats of p, the rest `fill`; and the matching store. Sets with
 * masked loads and stores (CT_VM_MASK_LOAD(p, count, live), CT_VM_MASK_STORE(p, count, live, v):
 * the first `count` lanes, `live` their mask) touch only those elements; the others go through
 * a buffer. */
#ifdef CT_VM_MASK_LOAD
CT_VM_INLINE ct_vi ct_vm_live_lanes(int64_t count) {
  ct_vi iota;
  for (int k = 0; k < CT_VM_LANES; ++k) iota[k] = k;
  return iota < (int32_t)count;
}
CT_VM_INLINE int64_t ct_vm_lanes_left(int64_t n, int k) {
  const int64_t left = n - (int64_t)k * CT_VM_LANES;
  return left < 0 ? 0 : left > CT_VM_LANES ? CT_VM_LANES : left;
}
CT_VM_INLINE ct_vm_block ct_vm_load_part(const float* p, int64_t n, float fill) {
  ct_vm_block b;
  for (int k = 0; k < CT_VM_VECS; ++k) {
    const int64_t count = ct_vm_lanes_left(n, k);
    const ct_vi live = ct_vm_live_lanes(count);
    b.v[k] =
        ct_vm_select(live, CT_VM_MASK_LOAD(p + k * CT_VM_LANES, count, live), ct_vm_splat(fill));
  }
  return b;
}
CT_VM_INLINE void ct_vm_store_part(float* p, int64_t n, const ct_vm_block* b) {
  for (int k = 0; k < CT_VM_VECS; ++k) {
    const int64_t count = ct_vm_lanes_left(n, k);
    CT_VM_MASK_STORE(p + k * CT_VM_LANES, count, ct_vm_live_lanes(count), b->v[k]);
  }
}
#else
CT_VM_INLINE ct_vm_block ct_vm_load_part(const float* p, int64_t n, float fill) {
  float buffer[CT_VM_BLOCK];
  for (int k = 0; k < CT_VM_BLOCK; ++k) buffer[k] = fill;
  memcpy(buffer, p, (size_t)n * sizeof(float));
  return ct_vm_load_block(buffer);
}
CT_VM_INLINE void ct_vm_store_part(float* p, int64_t n, const ct_vm_block* b) {
  ct_vm_store_slice(p, b, 0, n);
}
#endif
CT_VM_INLINE void ct_vm_sums_zero(ct_vm_sums* s) {
  for (int k = 0; k < 2 * CT_VM_VECS; ++k) s->v[k] = (ct_vd){0};
}
CT_VM_INLINE void ct_vm_block_zero(ct_vm_block* b) {
  for (int k = 0; k < CT_VM_VECS; ++k) b->v[k] = ct_vm_splat(0.0f);
}
/* s += the block of partial sums, widened */
CT_VM_INLINE void ct_vm_sums_add(ct_vm_sums* s, const ct_vm_block* b) {
  for (int k = 0; k < CT_VM_VECS; ++k) {
    s->v[2 * k] += ct_vm_widen_low(b->v[k]);
    s->v[2 * k + 1] += ct_vm_widen_high(b->v[k]);
  }
}
/* The accumulators added pairwise, in an order that does not depend on the vector width. */
CT_VM_INLINE double ct_vm_sums_total(const ct_vm_sums* s) {
  double h[CT_VM_BLOCK];
  memcpy(h, s, sizeof h);
  for (int width = CT_VM_BLOCK / 2; width > 0; width /= 2) {
    for (int k = 0; k < width; ++k) h[k] += h[k + width];
  }
  return h[0];
}

/* Asks for the cache line of row[n + i], in the row that follows row[0, n) in memory (the next
 * row of a C-contiguous tensor), for reading. Row loops call it once a block in a pass that
 * computes from L1: the hardware prefetchers only follow demand misses, which such passes do not
 * make, so without it every row would start with a cold read of its input. The output's lines
 * are not asked for: the stores' own reads for ownership overlap better with the next row's
 * loads than a prefetch for writing (an early read for ownership) does. A
 * prefetch never faults, so the address may lie past the end of the tensor (it is computed as an
 * integer). */
CT_VM_INLINE void ct_vm_prefetch_next_row(const float* row, int64_t n, int64_t i) {
  __builtin_prefetch((const void*)((uintptr_t)row + (uintptr_t)(n + i) * sizeof(float)), 0, 3);
}

/* The exponential's y = exp(r) on every lane, where t = x · log2(e) + shifter holds n =
 * round(x · log2(e)) and r = x - n · ln2 (x already clamped where it must be). */
CT_VM_INLINE ct_vf ct_vm_exp_reduced(ct_vf x, ct_vf t) {
  const ct_vf fn = t - CT_EXP_F32_SHIFTER;
  ct_vf r = CT_VM_FMA(fn, ct_vm_splat(-CT_EXP_F32_LN2_HI), x); /* exact, fused or not */
  r = CT_VM_FMA(fn, ct_vm_splat(-CT_EXP_F32_LN2_LO), r);
  ct_vf p = CT_VM_FMA(ct_vm_splat(CT_EXP_F32_C6), r, ct_vm_splat(CT_EXP_F32_C5));
  p = CT_VM_FMA(p, r, ct_vm_splat(CT_EXP_F32_C4));
  p = CT_VM_FMA(p, r, ct_vm_splat(CT_EXP_F32_C3));
  p = CT_VM_FMA(p, r, ct_vm_splat(CT_EXP_F32_C2));
  return CT_VM_FMA(p, r * r, r) + 1.0f;
}

/* exp on every lane: the algorithm of ct_exp_f32 (vector_math.h). */
CT_VM_INLINE ct_vf ct_vm_exp_everywhere(ct_vf x) {
  x = CT_VM_MAX(ct_vm_splat(CT_EXP_F32_MIN), x); /* nan stays */
  x = CT_VM_MIN(ct_vm_splat(CT_EXP_F32_MAX), x);
  const ct_vf t = CT_VM_FMA(x, ct_vm_splat(CT_EXP_F32_LOG2E), ct_vm_splat(CT_EXP_F32_SHIFTER));
  const ct_vf y = ct_vm_exp_reduced(x, t);
#ifdef CT_VM_SCALE_BY_POW2
  return CT_VM_SCALE_BY_POW2(y, t - CT_EXP_F32_SHIFTER); /* y · 2^n, rounded once */
#else
  /* a = n + 254; 2^(n1) 2^(n2) with n1 + 127 = a >> 1 and n2 + 127 = a - (a >> 1): y · 2^n1 is
   * exact, so the product is rounded once, as by the single instruction above */
  const ct_vu a = (ct_vu)t - (CT_EXP_F32_SHIFTER_BITS - 254u);
  const ct_vu s1 = (a >> 1) << 23;
  return y * (ct_vf)s1 * (ct_vf)((a << 23) - s1);
#endif
}

/* exp on every lane, bitwise ct_vm_exp_everywhere. Where the set has no one-instruction scaling
 * and every lane's 2^n is a normal float (n in [-126, 127], so x lies well inside the clamping
 * bounds, and no lane is nan or infinite), y · 2^n is one multiply by 2^n: the same single
 * rounding, with no clamps and no two-step power, which shortens the chain of dependent
 * instructions a vector waits on by about a fifth (exp is bound by that chain, not by its
 * instruction count). Other vectors take ct_vm_exp_everywhere. */
CT_VM_INLINE ct_vf ct_vm_exp(ct_vf x) {
#if defined(CT_VM_SCALE_BY_POW2) || !defined(CT_VM_ANY_SIGN)
  return ct_vm_exp_everywhere(x);
#else
  const ct_vf t = CT_VM_FMA(x, ct_vm_splat(CT_EXP_F32_LOG2E), ct_vm_splat(CT_EXP_F32_SHIFTER));
  const ct_vu biased = (ct_vu)t - (CT_EXP_F32_SHIFTER_BITS - 127u); /* n + 127 */
  /* sign bit set where n + 127 lies outside [1, 254] (nan and infinities included) */
  if (CT_VM_ANY_SIGN((ct_vi)((biased - 1u) | (254u - biased)))) return ct_vm_exp_everywhere(x);
  return ct_vm_exp_reduced(x, t) * (ct_vf)(biased << 23);
#endif
}

/* exp(b - shift) on every element of the block */
CT_VM_INLINE void ct_vm_exp_block(ct_vm_block* b, float shift) {
  for (int k = 0; k < CT_VM_VECS; ++k) b->v[k] = ct_vm_exp(b->v[k] - shift);
}

/* Lane-wise maximum that keeps nan (as CT_NAN_MAX). */
CT_VM_INLINE ct_vf ct_vm_nan_max(ct_vf m, ct_vf v) {
  return ct_vm_select((v > m) | (v != v), v, m);
}

/* Blocks whose maxima are taken in independent chains: one chain of compare and select waits on
 * each block's latency, a large part of a short softmax row's time. */
#define CT_VM_MAX_CHAINS 4

static float ct_vm_max_f32(const float* src, int64_t n) {
  ct_vm_block m, chain[CT_VM_MAX_CHAINS];
  for (int k = 0; k < CT_VM_VECS; ++k) m.v[k] = ct_vm_splat(-INFINITY);
  for (int c = 0; c < CT_VM_MAX_CHAINS; ++c) chain[c] = m;
  int64_t i = 0;
  for (; i + CT_VM_MAX_CHAINS * CT_VM_BLOCK <= n; i += CT_VM_MAX_CHAINS * CT_VM_BLOCK) {
    for (int c = 0; c < CT_VM_MAX_CHAINS; ++c) {
      const ct_vm_block b = ct_vm_load_block(src + i + c * CT_VM_BLOCK);
      for (int k = 0; k < CT_VM_VECS; ++k) chain[c].v[k] = ct_vm_nan_max(chain[c].v[k], b.v[k]);
    }
  }
  for (int c = 0; c < CT_VM_MAX_CHAINS; ++c) {
    for (int k = 0; k < CT_VM_VECS; ++k) m.v[k] = ct_vm_nan_max(m.v[k], chain[c].v[k]);
  }
  for (; i + CT_VM_BLOCK <= n; i += CT_VM_BLOCK) {
    const ct_vm_block b = ct_vm_load_block(src + i);
    for (int k = 0; k < CT_VM_VECS; ++k) m.v[k] = ct_vm_nan_max(m.v[k], b.v[k]);
  }
  if (i < n) {
    const ct_vm_block b = ct_vm_load_part(src + i, n - i, -INFINITY);
    for (int k = 0; k < CT_VM_VECS; ++k) m.v[k] = ct_vm_nan_max(m.v[k], b.v[k]);
  }
  float h[CT_VM_BLOCK];
  memcpy(h, &m, sizeof h);
  float r = h[0];
  for (int k = 1; k < CT_VM_BLOCK; ++k) r = h[k] > r || h[k] != h[k] ? h[k] : r;
  return r;
}

static double ct_vm_exp_sum_f32(const float* src, float* dst, int64_t n, float shift) {
  ct_vm_sums sums;
  ct_vm_sums_zero(&sums);
  int64_t i = 0;
  while (i + CT_VM_BLOCK <= n) {
    ct_vm_block part;
    ct_vm_block_zero(&part);
    for (int c = 0; c < CT_VM_CHUNK && i + CT_VM_BLOCK <= n; ++c, i += CT_VM_BLOCK) {
      ct_vm_prefetch_next_row(src, n, i);
      ct_vm_block b = ct_vm_load_block(src + i);
      ct_vm_exp_block(&b, shift);
      if (dst) ct_vm_store_block(dst + i, &b);
      for (int k = 0; k < CT_VM_VECS; ++k) part.v[k] += b.v[k];
    }
    ct_vm_sums_add(&sums, &part);
  }
  if (i < n) {
    /* padding with -inf adds exp(-inf) = 0 (a nan shift makes the sum nan anyway) */
    ct_vm_block b = ct_vm_load_part(src + i, n - i, -INFINITY);
    ct_vm_exp_block(&b, shift);
    if (dst) ct_vm_store_part(dst + i, n - i, &b);
    ct_vm_sums_add(&sums, &b);
  }
  return ct_vm_sums_total(&sums);
}

/* ----- element-wise maps, written with plain or non-temporal stores ----- */

typedef enum ct_vm_map_kind {
  CT_VM_MAP_EXP,       /* exp(src - a) */
  CT_VM_MAP_SCALE,     /* src * a */
  CT_VM_MAP_SUBTRACT2, /* (src - a) - b */
  CT_VM_MAP_NORM,      /* (src - a) * b [* weight] [+ bias] */
} ct_vm_map_kind;

typedef struct ct_vm_map {
  const float* src;
  const float* weight; /* CT_VM_MAP_NORM; may be NULL */
  const float* bias;   /* CT_VM_MAP_NORM; may be NULL */
  float a, b;
} ct_vm_map;

/* The map's results for elements [i, i + count), count <= CT_VM_BLOCK (padding lanes are
 * computed from harmless fill values and dropped). */
CT_VM_INLINE ct_vm_block ct_vm_map_block(ct_vm_map_kind kind, const ct_vm_map* m, int64_t i,
                                         int64_t count) {
  const int whole = count == CT_VM_BLOCK;
  ct_vm_block x = whole ? ct_vm_load_block(m->src + i) : ct_vm_load_part(m->src + i, count, 0.0f);
  switch (kind) {
    case CT_VM_MAP_EXP:
      ct_vm_exp_block(&x, m->a);
      break;
    case CT_VM_MAP_SCALE:
      for (int k = 0; k < CT_VM_VECS; ++k) x.v[k] *= m->a;
      break;
    case CT_VM_MAP_SUBTRACT2:
      for (int k = 0; k < CT_VM_VECS; ++k) x.v[k] = (x.v[k] - m->a) - m->b;
      break;
    case CT_VM_MAP_NORM: {
      ct_vm_block w, b;
      if (m->weight) {
        w = whole ? ct_vm_load_block(m->weight + i) : ct_vm_load_part(m->weight + i, count, 1.0f);
      }
      if (m->bias) {
        b = whole ? ct_vm_load_block(m->bias + i) : ct_vm_load_part(m->bias + i, count, 0.0f);
      }
      for (int k = 0; k < CT_VM_VECS; ++k) {
        ct_vf t = (x.v[k] - m->a) * m->b;
        if (m->weight) t = t * w.v[k];
        if (m->bias) t = t + b.v[k];
        x.v[k] = t;
      }
      break;
    }
  }
  return x;
}

/* dst[0, n) = the map. With stream (and dst float-aligned), the whole 64-byte lines of dst go out
 * in non-temporal stores: the output does not pass through the caches, so it costs no read for
 * ownership and evicts nothing; the elements before the first line boundary and after the last
 * one are stored plainly (a plain store into a line whose non-temporal stores are still pending
 * stalls until they drain: half a layer_norm row's time). The caller fences once after its last
 * row (ct_stream_fence): a fence per row waits for each row's stores to drain. Every element gets
 * the same arithmetic either way. */
CT_VM_INLINE void ct_vm_map_run(ct_vm_map_kind kind, const ct_vm_map* m, float* dst, int64_t n,
                                int stream) {
  if (n < CT_VM_BLOCK) {
    if (n > 0) {
      const ct_vm_block x = ct_vm_map_block(kind, m, 0, n);
      ct_vm_store_part(dst, n, &x);
    }
    return;
  }
  /* The elements before dst's first boundary and after the last aligned block come from whole
   * (unaligned) blocks at both ends, both computed before anything is stored (so that an
   * in-place map reads no output), and only those elements are stored, through a buffer, not
   * through AVX2's masked loads and stores, which are slow on some CPUs. */
  const ct_vm_block first = ct_vm_map_block(kind, m, 0, CT_VM_BLOCK);
  const ct_vm_block last = ct_vm_map_block(kind, m, n - CT_VM_BLOCK, CT_VM_BLOCK);
  const int64_t line = 64;
  stream = stream && CT_VM_BLOCK * (int64_t)sizeof(float) == line && ((uintptr_t)dst & 3u) == 0;
  int64_t i = ct_elements_to_boundary(dst, (int64_t)sizeof(float), stream ? line : CT_VM_BYTES);
  if (i > 0) ct_vm_store_slice(dst, &first, 0, i);
  if (stream && (((uintptr_t)(dst + i)) & (uintptr_t)(line - 1)) == 0) {
    for (; i + CT_VM_BLOCK <= n; i += CT_VM_BLOCK) {
      const ct_vm_block x = ct_vm_map_block(kind, m, i, CT_VM_BLOCK);
      for (int k = 0; k < CT_VM_VECS; ++k) CT_VM_STREAM(dst + i + k * CT_VM_LANES, x.v[k]);
    }
  }
  for (; i + CT_VM_BLOCK <= n; i += CT_VM_BLOCK) {
    const ct_vm_block x = ct_vm_map_block(kind, m, i, CT_VM_BLOCK);
    ct_vm_store_block(dst + i, &x);
  }
  if (i < n) ct_vm_store_slice(dst + i, &last, i - (n - CT_VM_BLOCK), n - i);
}

static void ct_vm_exp_f32(const float* src, float* dst, int64_t n, int stream) {
  const ct_vm_map m = {src, NULL, NULL, 0.0f, 0.0f};
  ct_vm_map_run(CT_VM_MAP_EXP, &m, dst, n, stream);
}

static void ct_vm_scale_f32(const float* src, float* dst, int64_t n, float factor, int stream) {
  const ct_vm_map m = {src, NULL, NULL, factor, 0.0f};
  ct_vm_map_run(CT_VM_MAP_SCALE, &m, dst, n, stream);
}

static void ct_vm_subtract2_f32(const float* src, float* dst, int64_t n, float a, float b,
                                int stream) {
  const ct_vm_map m = {src, NULL, NULL, a, b};
  ct_vm_map_run(CT_VM_MAP_SUBTRACT2, &m, dst, n, stream);
}

static void ct_vm_norm_row_f32(const float* src, float* dst, const float* weight, const float* bias,
                               int64_t n, int center, double eps, int stream) {
  if (n <= 0) return;
  const int64_t whole = n - n % CT_VM_BLOCK, rest = n - whole;
  float mean = 0.0f;
  if (center) {
    ct_vm_sums sums;
    ct_vm_sums_zero(&sums);
    int64_t i = 0;
    while (i < whole) {
      ct_vm_block part;
      ct_vm_block_zero(&part);
      for (int c = 0; c < CT_VM_CHUNK && i < whole; ++c, i += CT_VM_BLOCK) {
        const ct_vm_block b = ct_vm_load_block(src + i);
        for (int k = 0; k < CT_VM_VECS; ++k) part.v[k] += b.v[k];
      }
      ct_vm_sums_add(&sums, &part);
    }
    if (rest) {
      const ct_vm_block b = ct_vm_load_part(src + whole, rest, 0.0f);
      ct_vm_sums_add(&sums, &b);
    }
    mean = (float)(ct_vm_sums_total(&sums) / (double)n);
  }
  /* Deviations from the rounded mean (exact for the elements near it); their mean c corrects
   * the squares for the mean's error: sum (d - c)^2 = sum d^2 - n c^2. */
  ct_vm_sums squares, deviations;
  ct_vm_sums_zero(&squares);
  ct_vm_sums_zero(&deviations);
  int64_t i = 0;
  while (i < whole) {
    ct_vm_block sq, dev;
    ct_vm_block_zero(&sq);
    ct_vm_block_zero(&dev);
    for (int c = 0; c < CT_VM_CHUNK && i < whole; ++c, i += CT_VM_BLOCK) {
      ct_vm_prefetch_next_row(src, n, i);
      const ct_vm_block b = ct_vm_load_block(src + i);
      for (int k = 0; k < CT_VM_VECS; ++k) {
        const ct_vf d = b.v[k] - mean;
        sq.v[k] += d * d;
        dev.v[k] += d;
      }
    }
    ct_vm_sums_add(&squares, &sq);
    ct_vm_sums_add(&deviations, &dev);
  }
  if (rest) {
    ct_vm_block d = ct_vm_load_part(src + whole, rest, mean); /* padding deviates by 0 */
    ct_vm_block sq;
    for (int k = 0; k < CT_VM_VECS; ++k) {
      d.v[k] -= mean;
      sq.v[k] = d.v[k] * d.v[k];
    }
    ct_vm_sums_add(&squares, &sq);
    ct_vm_sums_add(&deviations, &d);
  }
  const double c = center ? ct_vm_sums_total(&deviations) / (double)n : 0.0;
  double var = ct_vm_sums_total(&squares) / (double)n - c * c;
  if (var < 0.0) var = 0.0;
  const float rstd = (float)(1.0 / sqrt(var + eps));
  const ct_vm_map m = {src, weight, bias, mean, rstd};
  ct_vm_map_run(CT_VM_MAP_NORM, &m, dst, n, stream);
}

/* ----- tanh and erf: the arithmetic of ct_tanh_f32 and ct_erf_f32 (vector_math.h) on double
 * vectors ----- */

typedef int64_t ct_vl __attribute__((vector_size(CT_VM_BYTES)));
typedef uint64_t ct_vul __attribute__((vector_size(CT_VM_BYTES)));
#if CT_VM_BYTES == 16
#define CT_VM_ALL_LANES 0, 1, 2, 3
#elif CT_VM_BYTES == 32
#define CT_VM_ALL_LANES 0, 1, 2, 3, 4, 5, 6, 7
#else
#define CT_VM_ALL_LANES 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
#endif

/* Lanes of a where `take` is set from b, the others from a. */
CT_VM_INLINE ct_vd ct_vm_select_d(ct_vl take, ct_vd b, ct_vd a) {
  return (ct_vd)(((ct_vl)a & ~take) | ((ct_vl)b & take));
}

/* ct_dexp_parts on every lane. */
CT_VM_INLINE ct_vd ct_vm_dexp_parts(ct_vd y, ct_vd* scale) {
  const ct_vd t = y * CT_DEXP_INV_LN2 + CT_DEXP_SHIFTER;
  const ct_vd k = t - CT_DEXP_SHIFTER;
  const ct_vd r = (y - k * CT_DEXP_LN2_HI) - k * CT_DEXP_LN2_LO;
  const ct_vd r2 = r * r, r4 = r2 * r2;
  *scale = (ct_vd)(((ct_vul)t - (CT_DEXP_SHIFTER_BITS - 1023u)) << 52);
  return CT_DEXP_EXPM1_POLY(r, r2, r4);
}

/* ct_tanh_magnitude on every lane. */
CT_VM_INLINE ct_vd ct_vm_tanh_magnitude(ct_vd a) {
  const ct_vd saturate = (ct_vd){0} + CT_TANH_F32_SATURATE;
  a = ct_vm_select_d((ct_vl)(a > saturate), saturate, a); /* nan compares false and stays */
  ct_vd scale;
  const ct_vd p = ct_vm_dexp_parts(a + a, &scale);
  const ct_vd e = scale * p + (scale - 1.0);
  return e / (e + 2.0);
}

/* ct_erf_magnitude on every lane: both branches on every lane, then a blend (branching on a
 * vector's lanes all taking one branch mispredicts often on random inputs). */
CT_VM_INLINE ct_vd ct_vm_erf_magnitude(ct_vd a) {
  const ct_vl small = (ct_vl)(a < (ct_vd){0} + CT_ERF_F32_SMALL);
  const ct_vd z = a * a, z2 = z * z, z4 = z2 * z2, z8 = z4 * z4;
  const ct_vd result_small = a * CT_ERF_SMALL_POLY(z, z2, z4, z8);
  const ct_vd saturate = (ct_vd){0} + CT_ERF_F32_SATURATE;
  const ct_vd c = ct_vm_select_d((ct_vl)(a > saturate), saturate, a); /* nan stays */
  ct_vd scale;
  const ct_vd p = ct_vm_dexp_parts(-(c * c), &scale);
  const ct_vd s = c - CT_ERF_F32_MID, s2 = s * s, s4 = s2 * s2, s8 = s4 * s4;
  const ct_vd result_large = 1.0 - (scale * p + scale) * CT_ERF_LARGE_POLY(s, s2, s4, s8);
  return ct_vm_select_d(small, result_small, result_large);
}

/* An odd function of float lanes computed in double: MAGNITUDE on the halves of |x| widened,
 * rounded back, with x's signs; and its loop over n floats, the tail through the scalar copy
 * SCALAR (the same bits). */
#define CT_VM_ODD_IN_DOUBLE(NAME, MAGNITUDE, SCALAR)                                           \
  CT_VM_INLINE ct_vf ct_vm_##NAME(ct_vf x) {                                                   \
    const ct_vf magnitude_f = (ct_vf)((ct_vu)x & 0x7fffffffu);                                 \
    const ct_vh lo = __builtin_convertvector(MAGNITUDE(ct_vm_widen_low(magnitude_f)), ct_vh);  \
    const ct_vh hi = __builtin_convertvector(MAGNITUDE(ct_vm_widen_high(magnitude_f)), ct_vh); \
    const ct_vf magnitude = __builtin_shufflevector(lo, hi, CT_VM_ALL_LANES);                  \
    return (ct_vf)((ct_vu)magnitude | ((ct_vu)x & 0x80000000u));                               \
  }                                                                                            \
  static void ct_vm_##NAME##_f32(const float* src, float* dst, int64_t n) {                    \
    int64_t i = 0;                                                                             \
    for (; i + CT_VM_LANES <= n; i += CT_VM_LANES) {                                           \
      ct_vf v;                                                                                 \
      memcpy(&v, src + i, sizeof v);                                                           \
      v = ct_vm_##NAME(v);                                                                     \
      memcpy(dst + i, &v, sizeof v);                                                           \
    }                                                                                          \
    for (; i < n; ++i) dst[i] = SCALAR(src[i]);                                                \
  }
CT_VM_ODD_IN_DOUBLE(tanh, ct_vm_tanh_magnitude, ct_tanh_f32)
CT_VM_ODD_IN_DOUBLE(erf, ct_vm_erf_magnitude, ct_erf_f32)
#undef CT_VM_ODD_IN_DOUBLE

const ct_vector_math CT_VM_NAME = {
    CT_VM_ISA,           ct_vm_exp_f32,      ct_vm_max_f32,  ct_vm_exp_sum_f32, ct_vm_scale_f32,
    ct_vm_subtract2_f32, ct_vm_norm_row_f32, ct_vm_tanh_f32, ct_vm_erf_f32,
};
