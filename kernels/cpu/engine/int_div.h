/* int_div.h - whole-number division helpers for blocking and window arithmetic (non-negative a,
 * positive b), written so that no intermediate overflows int64. */
#ifndef CTENSOR_CPU_INT_DIV_H_
#define CTENSOR_CPU_INT_DIV_H_

#include <stdbool.h>
#include <stdint.h>

/* a / b rounded up: the count of blocks of b that cover a (without a + b - 1, which overflows
 * for a near INT64_MAX). */
static inline int64_t ct_div_up(int64_t a, int64_t b) {
  return a / b + (a % b != 0);
}

/* a rounded up to a multiple of b; the caller knows that the result fits (a block count times
 * a block size bounded by an extent that is a multiple of b, or a small size). */
static inline int64_t ct_round_up(int64_t a, int64_t b) {
  return ct_div_up(a, b) * b;
}

/* a · b / c rounded down (round_up false) or up, for a, b >= 0 and c > 0 whose result fits in
 * int64, without forming a · b in int64: adaptive pooling's window bounds i · H / H_out, where
 * i · H may pass INT64_MAX for a broadcast input of huge extent. */
static inline int64_t ct_mul_div(int64_t a, int64_t b, int64_t c, bool round_up) {
  int64_t product;
  if (!__builtin_mul_overflow(a, b, &product)) return product / c + (round_up && product % c != 0);
#if defined(__SIZEOF_INT128__)
  const unsigned __int128 wide = (unsigned __int128)(uint64_t)a * (uint64_t)b;
  const unsigned __int128 quotient = wide / (uint64_t)c;
  return (int64_t)quotient + (round_up && wide % (uint64_t)c != 0);
#else
  /* a = qa · c + ra, so a · b / c = qa · b + ra · b / c; ra · b / c by long multiplication in
   * base 2, keeping the quotient q and the remainder r (< c <= INT64_MAX, so 2 · r and r + ra
   * fit in 64 unsigned bits) of the running product. */
  const uint64_t uc = (uint64_t)c, ra = (uint64_t)a % uc;
  uint64_t q = 0, r = 0;
  for (int bit = 62; bit >= 0; --bit) {
    q *= 2;
    r *= 2;
    if (r >= uc) r -= uc, ++q;
    if (((uint64_t)b >> bit) & 1) {
      r += ra;
      if (r >= uc) r -= uc, ++q;
    }
  }
  return (int64_t)((uint64_t)a / uc * (uint64_t)b + q) + (round_up && r != 0);
#endif
}

#endif /* CTENSOR_CPU_INT_DIV_H_ */
