/* sort_radix_impl.h - the radix sorts of one key width, included by sort_kernels.c once per
 * key type with CT_SR_K defined (uint8_t, uint16_t, uint32_t, uint64_t). The functions are named
 * <name>_<key type> (ct_sort_pairs_uint32_t, ...). With CT_SR_PAIRS_ONLY (8- and 16-bit keys)
 * only the (key, index) pair sort and topk's radix select are defined. No include guard: a
 * template. */
#ifndef CT_SR_K
#error "define CT_SR_K (the key type) before including sort_radix_impl.h"
#endif

#define CT_SR_CAT2(a, b) a##_##b
#define CT_SR_CAT(a, b) CT_SR_CAT2(a, b)
#define CT_SR_NAME(name) CT_SR_CAT(name, CT_SR_K)

/* Sorts keys[0..n) with idx[] along, using keys2/idx2 as the second buffer; returns the buffer
 * of sorted indices (idx or idx2). */
static int64_t* CT_SR_NAME(ct_sort_pairs)(CT_SR_K* keys, int64_t* idx, CT_SR_K* keys2,
                                          int64_t* idx2, int64_t n) {
  if (n <= CT_SORT_INSERTION) {
    for (int64_t i = 1; i < n; ++i) {
      const CT_SR_K k = keys[i];
      const int64_t v = idx[i];
      int64_t j = i;
      for (; j > 0 && keys[j - 1] > k; --j) {
        keys[j] = keys[j - 1];
        idx[j] = idx[j - 1];
      }
      keys[j] = k;
      idx[j] = v;
    }
    return idx;
  }
  const CT_SR_K diff = CT_SR_NAME(ct_key_diff)(keys, n);
  for (int shift = 0; shift < (int)(8 * sizeof(CT_SR_K)); shift += 8) {
    if (((diff >> shift) & 0xff) == 0) continue;
    int64_t count[256] = {0};
    for (int64_t i = 0; i < n; ++i) ++count[(keys[i] >> shift) & 0xff];
    ct_radix_starts(count, 256);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = count[(keys[i] >> shift) & 0xff]++;
      keys2[at] = keys[i];
      idx2[at] = idx[i];
    }
    CT_SORT_SWAP(CT_SR_K*, keys, keys2);
    CT_SORT_SWAP(int64_t*, idx, idx2);
  }
  return idx;
}

/* Keeps the k largest of s[0..m) (equal keys: the earlier ones) in their order, idx alongside;
 * m > k > 0. Returns the k-th largest key, found by a radix select a byte at a time. */
static CT_SR_K CT_SR_NAME(ct_topk_compact)(CT_SR_K* s, int64_t* idx, int64_t m, int64_t k) {
  CT_SR_K prefix = 0, mask = 0;
  int64_t rank = k;
  for (int shift = 8 * (int)sizeof(CT_SR_K) - 8; shift >= 0; shift -= 8) {
    int64_t count[256] = {0};
    for (int64_t i = 0; i < m; ++i) {
      if ((CT_SR_K)(s[i] & mask) == prefix) ++count[(s[i] >> shift) & 0xff];
    }
    int d = 255;
    for (; count[d] < rank; --d) rank -= count[d];
    prefix = (CT_SR_K)(prefix | ((CT_SR_K)d << shift));
    mask = (CT_SR_K)(mask | ((CT_SR_K)0xff << shift));
  }
  /* all keys above prefix belong to the k, and the first `rank` equal to it */
  int64_t w = 0;
  for (int64_t i = 0; i < m; ++i) {
    if (s[i] > prefix || (s[i] == prefix && rank-- > 0)) {
      s[w] = s[i];
      idx[w++] = idx[i];
    }
  }
  return prefix;
}

#ifndef CT_SR_PAIRS_ONLY

/* One stable counting pass: keys[0..n) into tmp by the digit (k >> shift) & (bins - 1), bins a
 * power of two; count holds the digit counts, and is left holding each digit's end. */
static inline void CT_SR_NAME(ct_radix_pass)(const CT_SR_K* keys, CT_SR_K* restrict tmp, int64_t n,
                                             int64_t* count, int64_t bins, int shift) {
  ct_radix_starts(count, bins);
  const CT_SR_K mask = (CT_SR_K)(bins - 1);
  for (int64_t i = 0; i < n; ++i) {
    const CT_SR_K k = keys[i];
    tmp[count[(k >> shift) & mask]++] = k;
  }
}

/* Stable LSD radix over `passes` digits of `width` bits from bit `low` up: keys[0..n) with tmp
 * as the second buffer, counts[p · 2^width ..] holding digit p's counts (filled by the caller).
 * A pass whose digit is the same for every key is skipped. Returns the sorted buffer. */
static CT_SR_K* CT_SR_NAME(ct_radix_passes)(CT_SR_K* keys, CT_SR_K* tmp, int64_t n, int64_t* counts,
                                            int passes, int width, int low) {
  const int64_t bins = (int64_t)1 << width;
  for (int p = 0; p < passes; ++p) {
    int64_t* count = counts + p * bins;
    const int shift = low + p * width;
    if (count[(keys[0] >> shift) & (CT_SR_K)(bins - 1)] == n) continue;
    CT_SR_NAME(ct_radix_pass)(keys, tmp, n, count, bins, shift);
    CT_SORT_SWAP(CT_SR_K*, keys, tmp);
  }
  return keys;
}

/* Sorts keys[0..n) alone (stable LSD radix: equal keys keep their order), tmp being the second
 * buffer; hist holds each pass's digit counts of the keys (zeroed and filled by the caller).
 * Passes whose digit is the same for every key are skipped. Returns the sorted buffer. */
static CT_SR_K* CT_SR_NAME(ct_sort_keys)(CT_SR_K* keys, CT_SR_K* tmp, int64_t n, int64_t* hist) {
  const int passes = (int)((8 * sizeof(CT_SR_K) + CT_RADIX_BITS - 1) / CT_RADIX_BITS);
  return CT_SR_NAME(ct_radix_passes)(keys, tmp, n, hist, passes, CT_RADIX_BITS, 0);
}

/* First index in sorted keys[0..n) whose key is not below k. */
static int64_t CT_SR_NAME(ct_sort_lower_bound)(const CT_SR_K* keys, int64_t n, CT_SR_K k) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < k) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/* Sorts one bucket a[0..m) with tmp as the second buffer: insertion sort for a few keys, else
 * LSD radix over the bits in which the keys differ (digits of at most CT_BUCKET_DIGIT, all counted
 * in one pass into counts; a digit the same in every key is skipped). Returns the sorted buffer
 * (a or tmp). */
static CT_SR_K* CT_SR_NAME(ct_sort_bucket)(CT_SR_K* a, CT_SR_K* tmp, int64_t m, int64_t* counts) {
  if (m <= CT_SORT_INSERTION) {
    for (int64_t i = 1; i < m; ++i) {
      const CT_SR_K k = a[i];
      int64_t j = i;
      for (; j > 0 && a[j - 1] > k; --j) a[j] = a[j - 1];
      a[j] = k;
    }
    return a;
  }
  const CT_SR_K diff = CT_SR_NAME(ct_key_diff)(a, m);
  if (diff == 0) return a;
  const int low = __builtin_ctzll((unsigned long long)diff);
  const int bits = CT_KEY_BITS(diff) - low;
  const int passes = (bits + CT_BUCKET_DIGIT - 1) / CT_BUCKET_DIGIT;
  const int width = (bits + passes - 1) / passes;
  const int64_t bins = (int64_t)1 << width;
  const CT_SR_K mask = (CT_SR_K)(bins - 1);
  memset(counts, 0, (size_t)(passes * bins) * sizeof(int64_t));
  for (int64_t i = 0; i < m; ++i) {
    const CT_SR_K k = (CT_SR_K)(a[i] >> low);
    for (int p = 0; p < passes; ++p) ++counts[p * bins + ((k >> (p * width)) & mask)];
  }
  return CT_SR_NAME(ct_radix_passes)(a, tmp, m, counts, passes, width, low);
}

#endif /* CT_SR_PAIRS_ONLY */

#undef CT_SR_NAME
#undef CT_SR_CAT
#undef CT_SR_CAT2
#undef CT_SR_PAIRS_ONLY
#undef CT_SR_K
