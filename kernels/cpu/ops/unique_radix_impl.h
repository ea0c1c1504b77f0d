/* unique_radix_impl.h - unique's MSD radix sort of 4- and 8-byte keys (American flag sort),
 * sequential and threaded. Included once per key type with CT_UQ_K defined; the functions are named
 * <name>_<key type> (ct_uq_sort_uint32_t, ...). No include guard: a template. */
#ifndef CT_UQ_K
#error "define CT_UQ_K (the key type) before including unique_radix_impl.h"
#endif

#define CT_UQ_CAT2(a, b) a##_##b
#define CT_UQ_CAT(a, b) CT_UQ_CAT2(a, b)
#define CT_UQ_NAME(name) CT_UQ_CAT(name, CT_UQ_K)

/* ct_uq_sort_<K>(keys, n, shift): sorts keys whose bits above shift + 8 are all equal.
 * American flag sort: histogram of the byte at `shift`, in-place permutation into buckets by
 * cycles, then each bucket on the next byte. A byte every key shares is skipped without moving
 * anything. */
static void CT_UQ_NAME(ct_uq_insertion)(CT_UQ_K* a, int64_t n) {
  for (int64_t i = 1; i < n; ++i) {
    const CT_UQ_K v = a[i];
    int64_t j = i;
    while (j > 0 && a[j - 1] > v) {
      a[j] = a[j - 1];
      --j;
    }
    a[j] = v;
  }
}
/* One level: buckets the keys by the byte at shift; fills end[] with each bucket's end.
 * Returns false when every key has the same byte there (nothing moved). */
static int CT_UQ_NAME(ct_uq_partition)(CT_UQ_K* a, int64_t n, int shift, int64_t end[256]) {
  int64_t count[256] = {0};
  for (int64_t i = 0; i < n; ++i) ++count[(a[i] >> shift) & 0xff];
  if (count[(a[0] >> shift) & 0xff] == n) return 0;
  int64_t next[256];
  int64_t sum = 0;
  for (int b = 0; b < 256; ++b) {
    next[b] = sum;
    sum += count[b];
    end[b] = sum;
  }
  for (int b = 0; b < 256; ++b) {
    while (next[b] < end[b]) {
      CT_UQ_K v = a[next[b]];
      int d = (int)((v >> shift) & 0xff);
      while (d != b) {
        const CT_UQ_K t = a[next[d]];
        a[next[d]++] = v;
        v = t;
        d = (int)((v >> shift) & 0xff);
      }
      a[next[b]++] = v;
    }
  }
  return 1;
}
static void CT_UQ_NAME(ct_uq_sort)(CT_UQ_K* a, int64_t n, int shift) {
  for (;;) {
    if (n <= CT_UQ_INSERTION) {
      CT_UQ_NAME(ct_uq_insertion)(a, n);
      return;
    }
    int64_t end[256];
    if (CT_UQ_NAME(ct_uq_partition)(a, n, shift, end)) {
      if (shift == 0) return;
      int64_t begin = 0;
      for (int b = 0; b < 256; ++b) {
        if (end[b] - begin > 1) CT_UQ_NAME(ct_uq_sort)(a + begin, end[b] - begin, shift - 8);
        begin = end[b];
      }
      return;
    }
    if (shift == 0) return; /* all keys equal */
    shift -= 8;
  }
}
/* As ct_uq_sort, inside an OpenMP parallel region: the buckets of one level go to tasks,
 * small neighbours batched together (a batch re-reads its byte, then moves nothing). */
static void CT_UQ_NAME(ct_uq_sort_tasks)(CT_UQ_K* a, int64_t n, int shift) {
  int64_t end[256];
  for (;;) {
    if (n < CT_UQ_TASK) {
      CT_UQ_NAME(ct_uq_sort)(a, n, shift);
      return;
    }
    if (CT_UQ_NAME(ct_uq_partition)(a, n, shift, end)) break;
    if (shift == 0) return; /* all keys equal */
    shift -= 8;
  }
  if (shift == 0) return;
  int64_t batch = 0, begin = 0;
  for (int b = 0; b < 256; ++b) {
    const int64_t size = end[b] - begin;
    if (size >= CT_UQ_TASK) {  /* a big bucket: its own task, splitting further */
      if (begin - batch > 1) { /* first the small buckets before it */
        CT_UQ_K* q = a + batch;
        const int64_t m = begin - batch;
        _Pragma("omp task firstprivate(q, m, shift)") CT_UQ_NAME(ct_uq_sort)(q, m, shift);
      }
      CT_UQ_K* p = a + begin;
      const int next = shift - 8;
      _Pragma("omp task firstprivate(p, size, next)") CT_UQ_NAME(ct_uq_sort_tasks)(p, size, next);
      batch = end[b];
    } else if (end[b] - batch >= CT_UQ_TASK || (b == 255 && end[b] - batch > 1)) {
      CT_UQ_K* p = a + batch; /* small buckets [batch, end[b]): one task */
      const int64_t m = end[b] - batch;
      _Pragma("omp task firstprivate(p, m, shift)") CT_UQ_NAME(ct_uq_sort)(p, m, shift);
      batch = end[b];
    }
    begin = end[b];
  }
}
/* The whole array: starts at the highest byte where keys differ; sorts with tasks on
 * several threads when there are many keys. */
static void CT_UQ_NAME(ct_uq_sort_all)(CT_UQ_K* a, int64_t n) {
  if (n < 2) return;
  const CT_UQ_K diff = CT_UQ_NAME(ct_key_diff)(a, n);
  if (diff == 0) return;
  int shift = (int)(sizeof(CT_UQ_K) * 8) - 8;
  while (shift > 0 && (diff >> shift) == 0) shift -= 8;
  const int threads = n >= CT_UQ_PARALLEL ? ct_cpu_num_threads() : 1;
  if (threads <= 1) {
    CT_UQ_NAME(ct_uq_sort)(a, n, shift);
    return;
  }
  _Pragma("omp parallel num_threads(threads)") {
    _Pragma("omp single nowait") CT_UQ_NAME(ct_uq_sort_tasks)(a, n, shift);
  }
}

#undef CT_UQ_NAME
#undef CT_UQ_CAT
#undef CT_UQ_CAT2
#undef CT_UQ_K
