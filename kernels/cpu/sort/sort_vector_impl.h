/* sort_vector_impl.h - the vector sort of sort_vector.c for one key width; included once per
 * width (no include guard) with these defined:
 *   CT_SV_K            the unsigned key type;
 *   CT_SV_SFX          its suffix in the names defined here (u32, u64);
 *   CT_SV_W            keys per AVX2 vector (8 or 4);
 *   CT_SV_NETWORK_MAX  the longest run the network sorts alone (32 vectors);
 *   CT_SV_IN(v), CT_SV_OUT(v)   raw keys to the network's representation and back;
 *   CT_SV_MINMAX(a, b, lo, hi)  lo, hi = the smaller and larger of a and b (represented);
 *   CT_SV_ABOVE(v, p)  the lanes of raw keys v above the represented pivot p, as a bit mask;
 *   CT_SV_PIVOT(k)     raw key k represented, in every lane;
 *   CT_SV_SORT_LANES(V), CT_SV_FINISH(V), CT_SV_REVERSE(v)   the comparators inside one vector
 *                      that sort it, those that end a merge (distances W / 2, ..., 1), and the
 *                      reversal of its lanes;
 *   CT_SV_PERM         the partition's table: per mask, the gather indices (a byte per 32-bit
 *                      lane) that move the lanes above the pivot after the others. */

#define CT_SV_CAT2(a, b) a##_##b
#define CT_SV_CAT(a, b) CT_SV_CAT2(a, b)
#define CT_SV_NAME(name) CT_SV_CAT(name, CT_SV_SFX)

/* The comparators that open the merge of two sorted halves of r[0..kv): the second half reversed
 * against the first (vector t against vector kv - 1 - t, lanes reversed). */
CT_NET_TARGET __attribute__((always_inline)) static inline void CT_SV_NAME(ct_net_flip)(
    __m256i* r, const int kv) {
  _Pragma("GCC unroll 16") for (int t = 0; t < kv / 2; ++t) {
    __m256i lo, hi;
    CT_SV_MINMAX(r[t], CT_SV_REVERSE(r[kv - 1 - t]), lo, hi);
    r[t] = lo;
    r[kv - 1 - t] = CT_SV_REVERSE(hi);
  }
}

/* The comparators between whole vectors dv apart, over r[0..nv). */
CT_NET_TARGET __attribute__((always_inline)) static inline void CT_SV_NAME(ct_net_apart)(
    __m256i* r, const int nv, const int dv) {
  _Pragma("GCC unroll 32") for (int v = 0; v < nv; ++v) {
    if (v & dv) continue;
    __m256i lo, hi;
    CT_SV_MINMAX(r[v], r[v + dv], lo, hi);
    r[v] = lo;
    r[v + dv] = hi;
  }
}

/* The rest of a merge over r[0..nv), nv <= 8 (so that it stays in registers): vectors nv / 2, ...,
 * 2, 1 apart, then inside each vector. */
CT_NET_TARGET __attribute__((always_inline)) static inline void CT_SV_NAME(ct_net_clean)(
    __m256i* r, const int nv) {
  _Pragma("GCC unroll 4") for (int dv = nv / 2; dv >= 1; dv /= 2) {
    CT_SV_NAME(ct_net_apart)(r, nv, dv);
  }
  _Pragma("GCC unroll 8") for (int v = 0; v < nv; ++v) {
    __m256i x = r[v];
    CT_SV_FINISH(x);
    r[v] = x;
  }
}

/* Sorts the W * nv keys of r[0..nv), nv a power of two; inlined with a constant nv, so that the
 * loops unroll. Blocks of up to 8 vectors are sorted one after another, in registers; the merges
 * of larger blocks take the comparators 8 or more vectors apart over the whole block, then finish
 * 8 vectors at a time. */
CT_NET_TARGET __attribute__((always_inline)) static inline void CT_SV_NAME(ct_net_vectors)(
    __m256i* r, const int nv) {
  const int block = nv < 8 ? nv : 8;
  _Pragma("GCC unroll 4") for (int b = 0; b < nv; b += block) {
    __m256i* s = r + b;
    _Pragma("GCC unroll 8") for (int v = 0; v < block; ++v) {
      __m256i x = s[v];
      CT_SV_SORT_LANES(x);
      s[v] = x;
    }
    _Pragma("GCC unroll 4") for (int kv = 2; kv <= block; kv *= 2) {
      _Pragma("GCC unroll 4") for (int h = 0; h < block; h += kv) {
        CT_SV_NAME(ct_net_flip)(s + h, kv);
        CT_SV_NAME(ct_net_clean)(s + h, kv / 2);
        CT_SV_NAME(ct_net_clean)(s + h + kv / 2, kv / 2);
      }
    }
  }
  _Pragma("GCC unroll 4") for (int kv = 16; kv <= nv; kv *= 2) {
    _Pragma("GCC unroll 2") for (int h = 0; h < nv; h += kv) CT_SV_NAME(ct_net_flip)(r + h, kv);
    _Pragma("GCC unroll 4") for (int dv = kv / 4; dv >= 8; dv /= 2) {
      CT_SV_NAME(ct_net_apart)(r, nv, dv);
    }
    _Pragma("GCC unroll 4") for (int h = 0; h < nv; h += 8) CT_SV_NAME(ct_net_clean)(r + h, 8);
  }
}

/* Sorts keys[0..n), n <= CT_SV_NETWORK_MAX, through the network. */
CT_NET_TARGET static void CT_SV_NAME(ct_sort_network)(CT_SV_K* keys, int64_t n) {
  int nv = 1;
  while (CT_SV_W * nv < n) nv *= 2;
  __m256i r[CT_SV_NETWORK_MAX / CT_SV_W];
  CT_SV_K* lanes = (CT_SV_K*)(void*)r;
  memcpy(lanes, keys, (size_t)n * sizeof *keys);
  for (int64_t i = n; i < CT_SV_W * nv; ++i) lanes[i] = (CT_SV_K) ~(CT_SV_K)0;
  for (int v = 0; v < nv; ++v) r[v] = CT_SV_IN(r[v]);
  switch (nv) {
    case 1:
      CT_SV_NAME(ct_net_vectors)(r, 1);
      break;
    case 2:
      CT_SV_NAME(ct_net_vectors)(r, 2);
      break;
    case 4:
      CT_SV_NAME(ct_net_vectors)(r, 4);
      break;
    case 8:
      CT_SV_NAME(ct_net_vectors)(r, 8);
      break;
    case 16:
      CT_SV_NAME(ct_net_vectors)(r, 16);
      break;
#if CT_SV_NETWORK_MAX / CT_SV_W > 32
    case 32:
      CT_SV_NAME(ct_net_vectors)(r, 32);
      break;
    default:
      CT_SV_NAME(ct_net_vectors)(r, 64);
      break;
#else
    default:
      CT_SV_NAME(ct_net_vectors)(r, 32);
      break;
#endif
  }
  for (int v = 0; v < nv; ++v) r[v] = CT_SV_OUT(r[v]);
  memcpy(keys, lanes, (size_t)n * sizeof *keys);
}

/* Moves src[0..n) to dst (not overlapping): the keys not above pivot to the front, the others to
 * the back, and returns how many are not above it. A vector's two stores (its permuted keys at the
 * front and at the back end) leave garbage only between the two ends, where later keys go, as
 * long as 2 W or more keys remain; the last ones go one at a time. */
CT_NET_TARGET static int64_t CT_SV_NAME(ct_partition)(const CT_SV_K* src, int64_t n, CT_SV_K pivot,
                                                      CT_SV_K* dst) {
  const __m256i p = CT_SV_PIVOT(pivot);
  int64_t left = 0, right = n, i = 0;
  for (; n - i >= 2 * CT_SV_W; i += CT_SV_W) {
    const __m256i v = _mm256_loadu_si256((const __m256i*)(const void*)(src + i));
    const int mask = CT_SV_ABOVE(v, p);
    const __m256i perm =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(const void*)&CT_SV_PERM[mask]));
    const __m256i w = _mm256_permutevar8x32_epi32(v, perm);
    const int high = __builtin_popcount((unsigned)mask);
    _mm256_storeu_si256((__m256i*)(void*)(dst + left), w);
    _mm256_storeu_si256((__m256i*)(void*)(dst + right - CT_SV_W), w);
    left += CT_SV_W - high;
    right -= high;
  }
  for (; i < n; ++i) {
    const CT_SV_K k = src[i];
    if (k > pivot) {
      dst[--right] = k;
    } else {
      dst[left++] = k;
    }
  }
  return left;
}

/* The median of 9 keys spread evenly over keys[0..n) (n > 16). */
static CT_SV_K CT_SV_NAME(ct_pivot)(const CT_SV_K* keys, int64_t n) {
  CT_SV_K sample[9];
  for (int s = 0; s < 9; ++s) {
    const CT_SV_K k = keys[(2 * s + 1) * n / 18];
    int j = s;
    for (; j > 0 && sample[j - 1] > k; --j) sample[j] = sample[j - 1];
    sample[j] = k;
  }
  return sample[4];
}

static void CT_SV_NAME(ct_heapsort)(CT_SV_K* keys, int64_t n) {
  for (int64_t end = n, start = n / 2;;) {
    if (start > 0) {
      --start;
    } else if (--end > 0) {
      const CT_SV_K t = keys[0];
      keys[0] = keys[end];
      keys[end] = t;
    } else {
      return;
    }
    int64_t root = start;
    const CT_SV_K k = keys[root];
    for (int64_t child; (child = 2 * root + 1) < end; root = child) {
      if (child + 1 < end && keys[child + 1] > keys[child]) ++child;
      if (keys[child] <= k) break;
      keys[root] = keys[child];
    }
    keys[root] = k;
  }
}

CT_NET_TARGET static void CT_SV_NAME(ct_quicksort)(CT_SV_K* keys, CT_SV_K* tmp, int64_t n,
                                                   int depth) {
  while (n > CT_SV_NETWORK_MAX) {
    if (depth-- == 0) {
      CT_SV_NAME(ct_heapsort)(keys, n);
      return;
    }
    const CT_SV_K pivot = CT_SV_NAME(ct_pivot)(keys, n);
    int64_t left = CT_SV_NAME(ct_partition)(keys, n, pivot, tmp);
    if (left == n) {
      /* pivot is the largest key: the keys equal to it go last, and are done */
      if (pivot == 0) return; /* all keys are 0 */
      left = CT_SV_NAME(ct_partition)(keys, n, pivot - 1, tmp);
      memcpy(keys, tmp, (size_t)n * sizeof *keys);
      n = left;
      continue;
    }
    memcpy(keys, tmp, (size_t)n * sizeof *keys);
    /* the smaller side first, by recursion; the larger one in this loop */
    if (left < n - left) {
      CT_SV_NAME(ct_quicksort)(keys, tmp, left, depth);
      keys += left;
      tmp += left;
      n -= left;
    } else {
      CT_SV_NAME(ct_quicksort)(keys + left, tmp + left, n - left, depth);
      n = left;
    }
  }
  CT_SV_NAME(ct_sort_network)(keys, n);
}

#undef CT_SV_NAME
#undef CT_SV_CAT
#undef CT_SV_CAT2
