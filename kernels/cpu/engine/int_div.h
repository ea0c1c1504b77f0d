/* int_div.h - whole-number division helpers for blocking arithmetic (non-negative a, positive b).
 */
#ifndef CTENSOR_CPU_INT_DIV_H_
#define CTENSOR_CPU_INT_DIV_H_

#include <stdint.h>

/* a / b rounded up: the count of blocks of b that cover a. */
static inline int64_t ct_div_up(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/* a rounded up to a multiple of b. */
static inline int64_t ct_round_up(int64_t a, int64_t b) {
  return ct_div_up(a, b) * b;
}

#endif /* CTENSOR_CPU_INT_DIV_H_ */
