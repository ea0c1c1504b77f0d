/* Philox-4x32-10, the counter-based generator of Random123 (Salmon, Moraes, Dror, Shaw: "Parallel
 * random numbers: as easy as 1, 2, 3", SC 2011), as cuRAND and JAX use it, and ctensor's one
 * random-number stream.
 *
 * This one header is compiled as C (the CPU backend), as OpenCL C (its text is embedded in the
 * OpenCL program source at build time) and as CUDA C++ (host and device). Every function is a
 * pure function of its arguments, so a result never depends on the device, the thread count or
 * the order in which elements are computed.
 *
 * The generator: a 128-bit counter (4 words) and a 64-bit key (2 words) give 4 words. Ten rounds;
 * each multiplies words 0 and 2 by 0xD2511F53 and 0xCD9E8D57 (the high and low halves of the
 * 64-bit products are kept), and the key is bumped by the Weyl constants 0x9E3779B9 and
 * 0xBB67AE85 between rounds. tests/test_random.py checks it against Random123's published
 * known-answer vectors.
 *
 * The stream (every random op, and attention's dropout, uses this rule):
 *   key     = (lo32(seed), hi32(seed))
 *   counter = (lo32(i), hi32(i), lo32(offset), hi32(offset))
 * where i is the row-major linear index of the output element (whatever the output's strides)
 * and seed, offset are the op's uint64 attributes. The element gets the 4 words x0..x3. Two
 * calls whose offsets differ use disjoint counters for every element; a caller that draws
 * several tensors from one seed gives each its own offset.
 */
#ifndef CT_PHILOX_H
#define CT_PHILOX_H

#if defined(__OPENCL_VERSION__)
typedef uint ct_philox_u32;
typedef ulong ct_philox_u64;
#define CT_PHILOX_FN static inline
#elif defined(__CUDACC__)
typedef unsigned int ct_philox_u32;
typedef unsigned long long ct_philox_u64;
#define CT_PHILOX_FN static __host__ __device__ __forceinline__
#else
#include <stdint.h>
typedef uint32_t ct_philox_u32;
typedef uint64_t ct_philox_u64;
#define CT_PHILOX_FN static inline
#endif

#define CT_PHILOX_M0 0xD2511F53u
#define CT_PHILOX_M1 0xCD9E8D57u
#define CT_PHILOX_W0 0x9E3779B9u
#define CT_PHILOX_W1 0xBB67AE85u

/* The 4 words of one Philox call. */
typedef struct ct_philox4 {
  ct_philox_u32 x[4];
} ct_philox4;

/* Philox-4x32 with `rounds` rounds on counter c0..c3 and key k0, k1 (Random123's
 * philox4x32_R). */
CT_PHILOX_FN ct_philox4 ct_philox4x32_rounds(ct_philox_u32 c0, ct_philox_u32 c1, ct_philox_u32 c2,
                                             ct_philox_u32 c3, ct_philox_u32 k0, ct_philox_u32 k1,
                                             int rounds) {
  for (int r = 0; r < rounds; ++r) {
    if (r > 0) {
      k0 += CT_PHILOX_W0;
      k1 += CT_PHILOX_W1;
    }
    const ct_philox_u64 p0 = (ct_philox_u64)CT_PHILOX_M0 * (ct_philox_u64)c0;
    const ct_philox_u64 p1 = (ct_philox_u64)CT_PHILOX_M1 * (ct_philox_u64)c2;
    const ct_philox_u32 hi0 = (ct_philox_u32)(p0 >> 32), lo0 = (ct_philox_u32)p0;
    const ct_philox_u32 hi1 = (ct_philox_u32)(p1 >> 32), lo1 = (ct_philox_u32)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  ct_philox4 out;
  out.x[0] = c0;
  out.x[1] = c1;
  out.x[2] = c2;
  out.x[3] = c3;
  return out;
}

/* Philox-4x32-10. */
CT_PHILOX_FN ct_philox4 ct_philox4x32_10(ct_philox_u32 c0, ct_philox_u32 c1, ct_philox_u32 c2,
                                         ct_philox_u32 c3, ct_philox_u32 k0, ct_philox_u32 k1) {
  return ct_philox4x32_rounds(c0, c1, c2, c3, k0, k1, 10);
}

/* The 4 words of element `index` of the stream (seed, offset): the rule above. */
CT_PHILOX_FN ct_philox4 ct_philox_element(ct_philox_u64 seed, ct_philox_u64 offset,
                                          ct_philox_u64 index) {
  return ct_philox4x32_10((ct_philox_u32)index, (ct_philox_u32)(index >> 32), (ct_philox_u32)offset,
                          (ct_philox_u32)(offset >> 32), (ct_philox_u32)seed,
                          (ct_philox_u32)(seed >> 32));
}

#endif /* CT_PHILOX_H */
