/* sort_dtype_impl.h - sort, argsort, topk, searchsorted and unique of one dtype, included by
 * sort_kernels.c once per dtype with CT_SD_SFX (the name suffix: i32, f64, ...), CT_SD_T (the
 * value type) and CT_SD_K (its key type of sort_keys.h: uint8_t ... uint64_t) defined, and
 * CT_SD_WIDE for the 4- and 8-byte dtypes, whose values-only sort (keys alone, by buckets for
 * long lanes) is defined too. The functions are named <name>_<SFX> (ct_cpu_sort_f32, ...); the
 * radix sorts of the key type come from sort_radix_impl.h. No include guard: a template. */
#if !defined(CT_SD_SFX) || !defined(CT_SD_T) || !defined(CT_SD_K)
#error "define CT_SD_SFX, CT_SD_T and CT_SD_K before including sort_dtype_impl.h"
#endif

#define CT_SD_CAT2(a, b) a##_##b
#define CT_SD_CAT(a, b) CT_SD_CAT2(a, b)
/* name_<SFX>, name_<SFX>_body (the per-ISA body of cpu_isa.h), name_<key type> */
#define CT_SD_NAME(name) CT_SD_CAT(name, CT_SD_SFX)
#define CT_SD_BODY(name) CT_SD_CAT(CT_SD_NAME(name), body)
#define CT_SD_KEY_NAME(name) CT_SD_CAT(name, CT_SD_K)

/* Keys (xor flip) of the count values at x (step bytes apart) into k (every dtype), and values of
 * keys into out (4- and 8-byte dtypes): loops the compiler vectorises where the values are
 * contiguous (a copy per instruction set). */
static CT_CPU_ISA_BODY void CT_SD_BODY(ct_keys)(const char* x, int64_t step, int64_t count,
                                                CT_SD_K flip, CT_SD_K* k) {
  if (step == (int64_t)sizeof(CT_SD_T)) {
    for (int64_t i = 0; i < count; ++i) {
      CT_SD_T v;
      memcpy(&v, x + i * (int64_t)sizeof(CT_SD_T), sizeof v);
      k[i] = (CT_SD_K)(CT_SD_NAME(ct_uq_key)(v) ^ flip);
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    CT_SD_T v;
    memcpy(&v, x + i * step, sizeof v);
    k[i] = (CT_SD_K)(CT_SD_NAME(ct_uq_key)(v) ^ flip);
  }
}
CT_CPU_ISA_LOOP(CT_SD_NAME(ct_keys),
                (const char* x, int64_t step, int64_t count, CT_SD_K flip, CT_SD_K* k),
                (x, step, count, flip, k))

#ifdef CT_SD_WIDE
static CT_CPU_ISA_BODY void CT_SD_BODY(ct_values)(const CT_SD_K* k, int64_t count, CT_SD_K flip,
                                                  char* out, int64_t step) {
  if (step == (int64_t)sizeof(CT_SD_T)) {
    for (int64_t i = 0; i < count; ++i) {
      const CT_SD_T v = CT_SD_NAME(ct_uq_value)((CT_SD_K)(k[i] ^ flip));
      memcpy(out + i * (int64_t)sizeof(CT_SD_T), &v, sizeof v);
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const CT_SD_T v = CT_SD_NAME(ct_uq_value)((CT_SD_K)(k[i] ^ flip));
    memcpy(out + i * step, &v, sizeof v);
  }
}
CT_CPU_ISA_LOOP(CT_SD_NAME(ct_values),
                (const CT_SD_K* k, int64_t count, CT_SD_K flip, char* out, int64_t step),
                (k, count, flip, out, step))
#endif /* CT_SD_WIDE */

/* One lane sorted as stable (key, index) pairs in the slot (a ct_sort_lane_fn): returns the
 * sorted indices. */
static int64_t* CT_SD_NAME(ct_sort_lane)(const char* x, int64_t step, int64_t n, int descending,
                                         void* slot) {
  const int64_t kb = (n * (int64_t)sizeof(CT_SD_K) + 63) / 64 * 64;
  CT_SD_K* keys = (CT_SD_K*)slot;
  CT_SD_K* keys2 = (CT_SD_K*)((char*)slot + kb);
  int64_t* idx = (int64_t*)((char*)slot + 2 * kb);
  int64_t* idx2 = idx + (n * 8 + 63) / 64 * 8;
  const CT_SD_K flip = descending ? (CT_SD_K) ~(CT_SD_K)0 : (CT_SD_K)0;
  if (sizeof(CT_SD_K) == 4 && n > 1 && n <= CT_SORT_PAIRED_MAX && ct_sort_vector_available()) {
    /* each key above its index: sorted, ties keep their order */
    uint64_t* both = (uint64_t*)(void*)idx;
    CT_SD_NAME(ct_keys)(x, step, n, flip, keys);
    for (int64_t i = 0; i < n; ++i) both[i] = (uint64_t)keys[i] << 32 | (uint64_t)i;
    ct_sort_vector_u64(both, (uint64_t*)(void*)idx2, n);
    for (int64_t i = 0; i < n; ++i) idx[i] = (int64_t)(both[i] & UINT32_MAX);
    return idx;
  }
  for (int64_t i = 0; i < n; ++i) {
    CT_SD_T v;
    memcpy(&v, x + i * step, sizeof v);
    keys[i] = (CT_SD_K)(CT_SD_NAME(ct_uq_key)(v) ^ flip);
    idx[i] = i;
  }
  return CT_SD_KEY_NAME(ct_sort_pairs)(keys, idx, keys2, idx2, n);
}

#ifdef CT_SD_WIDE
/* The values of x[begin, end) (step bytes apart) whose keys (xor flip) are the zero key or the
 * NaN key, copied to out from positions *at_zero and *at_nan on, in input order: the keys make
 * -0.0 and 0.0 one key and every NaN another, so a sorted run of them takes its bits from x. */
static void CT_SD_NAME(ct_sort_put_alike)(const char* x, int64_t step, int64_t begin, int64_t end,
                                          CT_SD_K flip, char* out, int64_t out_step,
                                          int64_t* at_zero, int64_t* at_nan) {
  const CT_SD_K zero = (CT_SD_K)(CT_SD_NAME(ct_uq_key)((CT_SD_T)0) ^ flip),
                nan = (CT_SD_K)(~(CT_SD_K)0 ^ flip);
  for (int64_t i = begin; i < end; ++i) {
    CT_SD_T v;
    memcpy(&v, x + i * step, sizeof v);
    const CT_SD_K k = (CT_SD_K)(CT_SD_NAME(ct_uq_key)(v) ^ flip);
    if (k == zero) memcpy(out + ((*at_zero)++) * out_step, &v, sizeof v);
    if (k == nan) memcpy(out + ((*at_nan)++) * out_step, &v, sizeof v);
  }
}

/* The bucket sort of a lane of n >= CT_BUCKET_MIN_LANE values (see there, in sort_kernels.c).
 * The buckets go to out itself where it is contiguous, aligned and apart from x (no workspace
 * pages to touch), else to keys; a bucket sorts in its thread's second buffer, or where larger
 * than that (many keys of one digit) in keys2 at its own place. The first pass's tallies place
 * -0.0/0.0 and the NaNs for their rewrite from x, each thread its own part of x. */
static void CT_SD_NAME(ct_sort_buckets)(const char* x, int64_t step, int64_t n, int descending,
                                        void* slot, char* out, int64_t out_step, int threads) {
  const int64_t kb = (n * (int64_t)sizeof(CT_SD_K) + 63) / 64 * 64;
  char* shared = (char*)slot + 2 * kb;
  uint16_t* bucket_of = (uint16_t*)shared;
  int64_t* start = (int64_t*)(shared + CT_BUCKET_BINS * 2);
  char* per_thread = shared + CT_BUCKET_SHARED_BYTES;
  const uintptr_t x_lo = (uintptr_t)(step < 0 ? x + (n - 1) * step : x);
  const uintptr_t x_hi = (uintptr_t)(step < 0 ? x : x + (n - 1) * step) + sizeof(CT_SD_T);
  CT_SD_K* keys = (CT_SD_K*)slot;
  if (out_step == (int64_t)sizeof(CT_SD_K) && (uintptr_t)out % sizeof(CT_SD_K) == 0 &&
      ((uintptr_t)out + (uintptr_t)n * sizeof(CT_SD_K) <= x_lo || (uintptr_t)out >= x_hi)) {
    keys = (CT_SD_K*)out;
  }
  CT_SD_K* keys2 = (CT_SD_K*)((char*)slot + kb);
  const CT_SD_K flip = descending ? (CT_SD_K) ~(CT_SD_K)0 : (CT_SD_K)0;
  const bool is_float = (CT_SD_T)0.5 != (CT_SD_T)0;
  const CT_SD_K zero = (CT_SD_K)(CT_SD_NAME(ct_uq_key)((CT_SD_T)0) ^ flip),
                nan = (CT_SD_K)(~(CT_SD_K)0 ^ flip);
  CT_SD_T v0;
  memcpy(&v0, x, sizeof v0);
  const CT_SD_K k0 = (CT_SD_K)(CT_SD_NAME(ct_uq_key)(v0) ^ flip);
  const int top = 8 * (int)sizeof(CT_SD_K) - CT_BUCKET_PREFIX;
  CT_SD_K diff = 0;
  int64_t zeros = 0, nans = 0, below = 0, buckets = 0, cap = CT_BUCKET_BYTES / sizeof(CT_SD_K);
  int shift = top;

#pragma omp parallel num_threads(threads)
  {
    int t = 0, nt = 1;
    CT_SORT_THREAD_ID(t, nt);
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    char* mine = ct_bucket_thread(per_thread, t);
    int64_t* hist = (int64_t*)mine;
    int64_t* pos = (int64_t*)(mine + CT_BUCKET_POS_AT);
    int64_t* counts = (int64_t*)(mine + CT_BUCKET_COUNTS_AT);
    CT_SD_K* tmp = (CT_SD_K*)(mine + CT_BUCKET_TMP_AT);
    int64_t* tally = (int64_t*)(mine + CT_BUCKET_TALLY_AT);
    CT_SD_K block[CT_BUCKET_BLOCK];
    memset(hist, 0, CT_BUCKET_BINS * sizeof(int64_t));
    CT_SD_K d = 0;
    int64_t z = 0, q = 0, lt = 0;
    for (int64_t i = begin; i < end; i += CT_BUCKET_BLOCK) {
      const int64_t len = end - i < CT_BUCKET_BLOCK ? end - i : CT_BUCKET_BLOCK;
      CT_SD_NAME(ct_keys)(x + i * step, step, len, flip, block);
      for (int64_t j = 0; j < len; ++j) ++hist[block[j] >> top];
      for (int64_t j = 0; j < len; ++j) d |= block[j] ^ k0;
      if (is_float) {
        for (int64_t j = 0; j < len; ++j) {
          z += block[j] == zero;
          q += block[j] == nan;
          lt += block[j] < zero;
        }
      }
    }
    memcpy(tally, &d, sizeof d);
    tally[1] = z;
    tally[2] = q;
    tally[3] = lt;

#pragma omp barrier

#pragma omp single
    {
      for (int u = 0; u < nt; ++u) {
        const int64_t* tu = ct_bucket_tally(per_thread, u);
        CT_SD_K du;
        memcpy(&du, tu, sizeof du);
        diff |= du;
        zeros += tu[1];
        nans += tu[2];
        below += tu[3];
      }
      /* keys alike in their top bits: split on the bits where they differ instead */
      if (diff != 0 && CT_KEY_BITS(diff) <= top + CT_BUCKET_PREFIX - 4) {
        shift = CT_KEY_BITS(diff) > CT_BUCKET_PREFIX ? CT_KEY_BITS(diff) - CT_BUCKET_PREFIX : 0;
      }
    }
    if (diff == 0) { /* all keys equal */
      const CT_SD_T v = CT_SD_NAME(ct_uq_value)((CT_SD_K)(k0 ^ flip));

#pragma omp for schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        memcpy(out + i * out_step, &v, sizeof v);
      }
    } else {
      if (shift != top) {
        memset(hist, 0, CT_BUCKET_BINS * sizeof(int64_t));
        for (int64_t i = begin; i < end; i += CT_BUCKET_BLOCK) {
          const int64_t len = end - i < CT_BUCKET_BLOCK ? end - i : CT_BUCKET_BLOCK;
          CT_SD_NAME(ct_keys)(x + i * step, step, len, flip, block);
          for (int64_t j = 0; j < len; ++j) ++hist[(block[j] >> shift) & (CT_BUCKET_BINS - 1)];
        }

#pragma omp barrier
      }

#pragma omp single
      buckets = ct_bucket_layout(per_thread, nt, n, bucket_of, start, &cap);
      for (int64_t i = begin; i < end; i += CT_BUCKET_BLOCK) {
        const int64_t len = end - i < CT_BUCKET_BLOCK ? end - i : CT_BUCKET_BLOCK;
        CT_SD_NAME(ct_keys)(x + i * step, step, len, flip, block);
        for (int64_t j = 0; j < len; ++j) {
          const CT_SD_K k = block[j];
          keys[pos[bucket_of[(k >> shift) & (CT_BUCKET_BINS - 1)]]++] = k;
        }
      }

#pragma omp barrier

#pragma omp for schedule(dynamic, 1)
      for (int64_t b = 0; b < buckets; ++b) {
        const int64_t s = start[b], m = start[b + 1] - s;
        const CT_SD_K* sorted = CT_SD_KEY_NAME(ct_sort_bucket)(
            keys + s, m <= (int64_t)(CT_BUCKET_BYTES / sizeof(CT_SD_K)) ? tmp : keys2 + s, m,
            counts);
        CT_SD_NAME(ct_values)(sorted, m, flip, out + s * out_step, out_step);
      }
    }
    if (is_float && (zeros > 0 || nans > 0)) {
      int64_t at_zero = below, at_nan = descending ? 0 : n - nans;
      for (int u = 0; u < t; ++u) {
        const int64_t* tu = ct_bucket_tally(per_thread, u);
        at_zero += tu[1];
        at_nan += tu[2];
      }
      CT_SD_NAME(ct_sort_put_alike)(x, step, begin, end, flip, out, out_step, &at_zero, &at_nan);
    }
  }
}

/* The values-only sort of one lane (a ct_sort_values_fn): the bucket sort for long lanes, else
 * the keys alone through the vector sort or the radix passes. */
static void CT_SD_NAME(ct_sort_values)(const char* x, int64_t step, int64_t n, int descending,
                                       void* slot, char* out, int64_t out_step, int threads) {
  if (n >= CT_BUCKET_MIN_LANE) {
    CT_SD_NAME(ct_sort_buckets)(x, step, n, descending, slot, out, out_step, threads);
    return;
  }
  const int64_t kb = (n * (int64_t)sizeof(CT_SD_K) + 63) / 64 * 64;
  CT_SD_K* keys = (CT_SD_K*)slot;
  CT_SD_K* keys2 = (CT_SD_K*)((char*)slot + kb);
  int64_t* hist = (int64_t*)((char*)slot + 2 * kb);
  const CT_SD_K flip = descending ? (CT_SD_K) ~(CT_SD_K)0 : (CT_SD_K)0;
  const CT_SD_K* sorted = keys;
  if (ct_sort_values_by_vector((int64_t)sizeof(CT_SD_K), n)) {
    CT_SD_NAME(ct_keys)(x, step, n, flip, keys);
    if (sizeof(CT_SD_K) == 4) {
      ct_sort_vector_u32((uint32_t*)(void*)keys, (uint32_t*)(void*)keys2, n);
    } else {
      ct_sort_vector_u64((uint64_t*)(void*)keys, (uint64_t*)(void*)keys2, n);
    }
  } else {
    const int passes = (int)((8 * sizeof(CT_SD_K) + CT_RADIX_BITS - 1) / CT_RADIX_BITS);
    memset(hist, 0, (size_t)passes * CT_RADIX_BINS * sizeof(int64_t));
    for (int64_t i = 0; i < n; ++i) {
      CT_SD_T v;
      memcpy(&v, x + i * step, sizeof v);
      const CT_SD_K k = (CT_SD_K)(CT_SD_NAME(ct_uq_key)(v) ^ flip);
      keys[i] = k;
      for (int pass = 0; pass < passes; ++pass) {
        ++hist[pass * CT_RADIX_BINS + ((k >> (pass * CT_RADIX_BITS)) & (CT_RADIX_BINS - 1))];
      }
    }
    sorted = CT_SD_KEY_NAME(ct_sort_keys)(keys, keys2, n, hist);
  }
  CT_SD_NAME(ct_values)(sorted, n, flip, out, out_step);
  if ((CT_SD_T)0.5 == (CT_SD_T)0) return; /* an integer dtype */
  const CT_SD_K zero = (CT_SD_K)(CT_SD_NAME(ct_uq_key)((CT_SD_T)0) ^ flip),
                nan = (CT_SD_K)(~(CT_SD_K)0 ^ flip);
  int64_t at_zero = CT_SD_KEY_NAME(ct_sort_lower_bound)(sorted, n, zero);
  int64_t at_nan = CT_SD_KEY_NAME(ct_sort_lower_bound)(sorted, n, nan);
  const bool zeros = at_zero < n && sorted[at_zero] == zero;
  const bool nans = at_nan < n && sorted[at_nan] == nan;
  if (!zeros && !nans) return;
  CT_SD_NAME(ct_sort_put_alike)(x, step, 0, n, flip, out, out_step, &at_zero, &at_nan);
}

/* The values-only sort of this dtype (1- and 2-byte dtypes have none). */
static const ct_sort_values_fn CT_SD_NAME(ct_sort_values_fn) = CT_SD_NAME(ct_sort_values);
#else
static const ct_sort_values_fn CT_SD_NAME(ct_sort_values_fn) = NULL;
#endif /* CT_SD_WIDE */

/* ct_topk_find_<SFX>: the first i in [i, end) whose key (xor flip) is above tau, else end. */
static CT_CPU_ISA_BODY int64_t CT_SD_BODY(ct_topk_find)(const char* x, int64_t step, int64_t i,
                                                        int64_t end, CT_SD_K tau, CT_SD_K flip) {
  if (step == (int64_t)sizeof(CT_SD_T)) {
    for (; i + CT_TOPK_BLOCK <= end; i += CT_TOPK_BLOCK) {
      int hit = 0;
      for (int j = 0; j < CT_TOPK_BLOCK; ++j) {
        CT_SD_T v;
        memcpy(&v, x + (i + j) * (int64_t)sizeof(CT_SD_T), sizeof v);
        hit |= (CT_SD_K)(CT_SD_NAME(ct_uq_key)(v) ^ flip) > tau;
      }
      if (hit) break;
    }
  }
  for (; i < end; ++i) {
    CT_SD_T v;
    memcpy(&v, x + i * step, sizeof v);
    if ((CT_SD_K)(CT_SD_NAME(ct_uq_key)(v) ^ flip) > tau) return i;
  }
  return end;
}
CT_CPU_ISA_VARIANTS(int64_t, CT_SD_NAME(ct_topk_find),
                    (const char* x, int64_t step, int64_t i, int64_t end, CT_SD_K tau,
                     CT_SD_K flip),
                    (x, step, i, end, tau, flip))
/* topk of one long lane with a small k (a ct_topk_fn; see CT_TOPK_MIN_LANE). */
static void CT_SD_NAME(ct_topk_lane)(const char* x, int64_t step, int64_t n, int64_t k, int largest,
                                     void* slot, char* values, int64_t v_step, char* indices,
                                     int64_t i_step, int threads) {
  const CT_SD_K flip = largest ? (CT_SD_K)0 : (CT_SD_K) ~(CT_SD_K)0;
  const int64_t cap = ct_topk_cap(k), tb = ct_topk_thread_bytes(k, sizeof(CT_SD_K));
  /* bytes of cap keys, of threads * k keys, of k keys (rounded as in ct_topk_bytes) */
  const int64_t cap_kb = (cap * (int64_t)sizeof(CT_SD_K) + 63) / 64 * 64;
  const int64_t all_kb = (threads * k * (int64_t)sizeof(CT_SD_K) + 63) / 64 * 64;
  const int64_t k_kb = (k * (int64_t)sizeof(CT_SD_K) + 63) / 64 * 64;
  CT_SD_K* merged = (CT_SD_K*)((char*)slot + threads * tb);
  int64_t* merged_idx = (int64_t*)((char*)merged + all_kb);
  CT_SD_K* second = (CT_SD_K*)(merged_idx + threads * k);
  int64_t* second_idx = (int64_t*)((char*)second + k_kb);
  int64_t kept[CT_SORT_MAX_THREADS];

#pragma omp parallel num_threads(threads)
  {
    int t = 0, nt = 1;
    CT_SORT_THREAD_ID(t, nt);
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    CT_SD_K* s = (CT_SD_K*)((char*)slot + t * tb);
    int64_t* idx = (int64_t*)((char*)s + cap_kb);
    int64_t m = 0, i = begin;
    CT_SD_K tau = 0;
    /* the first cap keys all enter; after the first cut only keys above the k-th kept do (an
     * equal key comes after the k kept, so it loses the tie) */
    for (; i < end && m < cap; ++i) {
      CT_SD_T v;
      memcpy(&v, x + i * step, sizeof v);
      s[m] = (CT_SD_K)(CT_SD_NAME(ct_uq_key)(v) ^ flip);
      idx[m++] = i;
    }
    if (m == cap) {
      tau = CT_SD_KEY_NAME(ct_topk_compact)(s, idx, m, k);
      m = k;
    }
    for (;;) {
      i = CT_SD_NAME(ct_topk_find)(x, step, i, end, tau, flip);
      if (i >= end) break;
      CT_SD_T v;
      memcpy(&v, x + i * step, sizeof v);
      s[m] = (CT_SD_K)(CT_SD_NAME(ct_uq_key)(v) ^ flip);
      idx[m++] = i++;
      if (m == cap) {
        tau = CT_SD_KEY_NAME(ct_topk_compact)(s, idx, m, k);
        m = k;
      }
    }
    if (m > k) {
      CT_SD_KEY_NAME(ct_topk_compact)(s, idx, m, k);
      m = k;
    }
    kept[t] = m;

#pragma omp barrier

    /* thread 0: the threads' candidates in index order, cut to k, sorted */
    if (t == 0) {
      int64_t total = 0;
      for (int u = 0; u < nt; ++u) {
        const CT_SD_K* su = (const CT_SD_K*)((char*)slot + u * tb);
        const int64_t* iu = (const int64_t*)((const char*)su + cap_kb);
        memcpy(merged + total, su, (size_t)kept[u] * sizeof(CT_SD_K));
        memcpy(merged_idx + total, iu, (size_t)kept[u] * sizeof(int64_t));
        total += kept[u];
      }
      if (total > k) CT_SD_KEY_NAME(ct_topk_compact)(merged, merged_idx, total, k);
      /* ascending complements: the largest first, equal keys in index order (stable) */
      for (int64_t j = 0; j < k; ++j) merged[j] = (CT_SD_K)~merged[j];
      const int64_t* order =
          CT_SD_KEY_NAME(ct_sort_pairs)(merged, merged_idx, second, second_idx, k);
      for (int64_t j = 0; j < k; ++j) {
        memcpy(values + j * v_step, x + order[j] * step, sizeof(CT_SD_T));
        memcpy(indices + j * i_step, &order[j], sizeof(int64_t));
      }
    }
  }
}

/* topk of one short lane with a small k (a ct_topk_small_fn; see CT_TOPK_SMALL_K). */
static void CT_SD_NAME(ct_topk_small)(const char* x, int64_t step, int64_t n, int64_t k,
                                      int largest, void* slot, char* values, int64_t v_step,
                                      char* indices, int64_t i_step) {
  const CT_SD_K flip = largest ? (CT_SD_K)0 : (CT_SD_K) ~(CT_SD_K)0;
  CT_SD_K* best = (CT_SD_K*)slot; /* descending; equal keys in index order */
  int64_t* at = (int64_t*)((char*)slot + ct_topk_small_keys_bytes(k, (int64_t)sizeof(CT_SD_K)));
  int64_t kept = 0;
  for (int64_t i = 0;;) {
    if (kept == k) {
      i = CT_SD_NAME(ct_topk_find)(x, step, i, n, best[k - 1], flip);
      if (i >= n) break;
    } else if (i >= n) {
      break;
    }
    CT_SD_T v;
    memcpy(&v, x + i * step, sizeof v);
    const CT_SD_K key = (CT_SD_K)(CT_SD_NAME(ct_uq_key)(v) ^ flip);
    /* after every kept key not below it (those came first) */
    int64_t j = kept < k ? kept++ : k - 1;
    for (; j > 0 && best[j - 1] < key; --j) {
      best[j] = best[j - 1];
      at[j] = at[j - 1];
    }
    best[j] = key;
    at[j] = i++;
  }
  for (int64_t j = 0; j < k; ++j) {
    memcpy(values + j * v_step, x + at[j] * step, sizeof(CT_SD_T));
    memcpy(indices + j * i_step, &at[j], sizeof(int64_t));
  }
}

/* The kernels sort, argsort and topk: ct_sort_run with this dtype's lane functions. */
static int CT_SD_NAME(ct_cpu_sort)(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const int32_t axis = (int32_t)call->attrs[0].value.i;
  const int64_t n = x->shape[axis < 0 ? axis + x->ndim : axis];
  return ct_sort_run(call, axis, (int)call->attrs[1].value.b, n, call->outputs[0], NULL,
                     CT_SD_NAME(ct_sort_lane), CT_SD_NAME(ct_sort_values_fn), NULL, NULL);
}
static int CT_SD_NAME(ct_cpu_argsort)(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const int32_t axis = (int32_t)call->attrs[0].value.i;
  const int64_t n = x->shape[axis < 0 ? axis + x->ndim : axis];
  return ct_sort_run(call, axis, (int)call->attrs[1].value.b, n, NULL, call->outputs[0],
                     CT_SD_NAME(ct_sort_lane), NULL, NULL, NULL);
}
static int CT_SD_NAME(ct_cpu_topk)(const ct_kernel_call* call) {
  return ct_sort_run(call, (int32_t)call->attrs[1].value.i, (int)call->attrs[2].value.b,
                     call->attrs[0].value.i, call->outputs[0], call->outputs[1],
                     CT_SD_NAME(ct_sort_lane), NULL, CT_SD_NAME(ct_topk_lane),
                     CT_SD_NAME(ct_topk_small));
}

/* searchsorted: a binary search of the sorted x1 for each value's key. */
static void CT_SD_NAME(ct_cpu_searchsorted_loop)(char** data, const int64_t* steps, int64_t count,
                                                 const void* extra) {
  const ct_search_extra* e = extra;
  for (int64_t j = 0; j < count; ++j) {
    CT_SD_T v;
    memcpy(&v, data[0] + j * steps[0], sizeof v);
    const CT_SD_K key = CT_SD_NAME(ct_uq_key)(v);
    int64_t lo = 0, hi = e->n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      CT_SD_T m;
      memcpy(&m, e->x1 + mid * e->step, sizeof m);
      const CT_SD_K mk = CT_SD_NAME(ct_uq_key)(m);
      if (e->right ? mk <= key : mk < key) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    memcpy(data[1] + j * steps[1], &lo, sizeof lo);
  }
}
static int CT_SD_NAME(ct_cpu_searchsorted)(const ct_kernel_call* call) {
  const ct_tensor* x1 = call->inputs[0];
  ct_search_extra e = {ct_tensor_base(x1), ct_tensor_stride(x1, 0) * (int64_t)sizeof(CT_SD_T),
                       x1->shape[0], strcmp(call->attrs[0].value.s, "right") == 0};
  const ct_tensor* operands[2] = {call->inputs[1], call->outputs[0]};
  ct_cpu_iterate(2, operands, CT_SD_NAME(ct_cpu_searchsorted_loop), &e);
  return CT_OK;
}

/* unique_counts, unique_inverse, unique_all: one stable sort of all keys of x, then the groups
 * of equal keys. */
static void CT_SD_NAME(ct_uqm_keys)(char** data, const int64_t* steps, int64_t n,
                                    const void* extra) {
  (void)extra;
  for (int64_t i = 0; i < n; ++i) {
    CT_SD_T v;
    memcpy(&v, data[0] + i * steps[0], sizeof v);
    const CT_SD_K key = CT_SD_NAME(ct_uq_key)(v);
    memcpy(data[1] + i * steps[1], &key, sizeof key);
  }
}
static int CT_SD_NAME(ct_cpu_unique_multi)(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const int64_t n = ct_tensor_numel(x);
  const int64_t kb = (n * (int64_t)sizeof(CT_SD_K) + 63) / 64 * 64;
  CT_SD_K* keys = (CT_SD_K*)call->workspace;
  CT_SD_K* keys2 = (CT_SD_K*)((char*)call->workspace + kb);
  int64_t* idx = (int64_t*)((char*)call->workspace + 2 * kb);
  int64_t* idx2 = idx + (n * 8 + 63) / 64 * 8;
  const int64_t* order = idx;
  const CT_SD_K* sorted = keys;
  if (n > 0) {
    if (x->ndim == 0) {
      CT_SD_T v;
      memcpy(&v, ct_tensor_base(x), sizeof v);
      keys[0] = CT_SD_NAME(ct_uq_key)(v);
    } else { /* keys in row-major order: operand 1 is the compact workspace */
      int64_t strides[2 * CT_MAX_NDIM];
      int64_t stride = (int64_t)sizeof(CT_SD_K);
      for (int32_t d = x->ndim - 1; d >= 0; --d) {
        strides[d] = ct_tensor_stride(x, d) * (int64_t)sizeof(CT_SD_T);
        strides[x->ndim + d] = stride;
        stride *= x->shape[d];
      }
      char* bases[2] = {ct_tensor_base(x), (char*)keys};
      ct_cpu_iterate_raw(2, bases, strides, x->ndim, x->shape, CT_SD_NAME(ct_uqm_keys), NULL);
    }
    for (int64_t i = 0; i < n; ++i) idx[i] = i;
    order = CT_SD_KEY_NAME(ct_sort_pairs)(keys, idx, keys2, idx2, n);
    sorted = order == idx ? keys : keys2;
  }
  int64_t groups = n > 0 ? 1 : 0;
  for (int64_t i = 1; i < n; ++i) groups += sorted[i] != sorted[i - 1];
  void* data;
  int64_t *first, *inverse, *counts;
  const int status = ct_uqm_outputs(call, groups, &data, &first, &inverse, &counts);
  if (status != CT_OK) return status;
  CT_SD_T* values = data;
  int64_t g = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (i == 0 || sorted[i] != sorted[i - 1]) { /* a new value: its first occurrence */
      ++g;
      values[g] = CT_SD_NAME(ct_uq_value)(sorted[i]);
      if (first) first[g] = order[i];
      if (counts) counts[g] = 0;
    }
    if (counts) ++counts[g];
    if (inverse) inverse[order[i]] = g;
  }
  return CT_OK;
}

#undef CT_SD_KEY_NAME
#undef CT_SD_BODY
#undef CT_SD_NAME
#undef CT_SD_CAT
#undef CT_SD_CAT2
#undef CT_SD_WIDE
#undef CT_SD_K
#undef CT_SD_T
#undef CT_SD_SFX
