/* store_align.h - the peel before aligned stores: a vector store that straddles two cache lines
 * (or two vectors' worth of a line) costs two, and NumPy's buffers start 16 bytes into a 64-byte
 * line, so contiguous loops write their first elements one by one up to a boundary. */
#ifndef CTENSOR_CPU_STORE_ALIGN_H_
#define CTENSOR_CPU_STORE_ALIGN_H_

#include <stdint.h>

/* The number of elements of `elem` bytes from p to the next multiple of `boundary` bytes (a
 * power of two): 0 where p is on one, or where p is not a multiple of elem (no element count
 * reaches a boundary then). */
static inline int64_t ct_elements_to_boundary(const void* p, int64_t elem, int64_t boundary) {
  const int64_t misalign = (int64_t)((uintptr_t)p & (uintptr_t)(boundary - 1));
  if (misalign == 0 || misalign % elem != 0) return 0;
  return (boundary - misalign) / elem;
}

#endif /* CTENSOR_CPU_STORE_ALIGN_H_ */
