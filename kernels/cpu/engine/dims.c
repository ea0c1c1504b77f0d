/* dims.c - dimension sorting, merging and lane taking for the engine's loop planners. */
#include "engine/int_div.h"
#include "engine/dims.h"

void ct_cpu_sort_dims(int32_t n, int64_t* shape, int64_t** strides, int32_t nstrides) {
  for (int32_t k = 1; k < n; ++k) {
    for (int32_t j = k; j > 0; --j) {
      if (ct_abs64(strides[0][j - 1]) >= ct_abs64(strides[0][j])) break;
      int64_t t = shape[j];
      shape[j] = shape[j - 1];
      shape[j - 1] = t;
      for (int32_t i = 0; i < nstrides; ++i) {
        t = strides[i][j];
        strides[i][j] = strides[i][j - 1];
        strides[i][j - 1] = t;
      }
    }
  }
}

int32_t ct_cpu_merge_dims(int32_t n, int64_t* shape, int64_t** strides, int32_t nstrides) {
  if (n == 0) return 0;
  int32_t m = 0;
  for (int32_t k = 1; k < n; ++k) {
    bool mergeable = true;
    for (int32_t i = 0; i < nstrides && mergeable; ++i) {
      int64_t span; /* may overflow for a huge stride: such dims never merge */
      mergeable = !__builtin_mul_overflow(strides[i][k], shape[k], &span) && strides[i][m] == span;
    }
    if (mergeable) {
      shape[m] *= shape[k];
    } else {
      ++m;
      shape[m] = shape[k];
    }
    for (int32_t i = 0; i < nstrides; ++i) strides[i][m] = strides[i][k];
  }
  return m + 1;
}

int32_t ct_cpu_finest_dim(int32_t n, const int64_t* xs) {
  int32_t best = -1;
  for (int32_t k = 0; k < n; ++k) {
    if (xs[k] != 0 && (best < 0 || ct_abs64(xs[k]) <= ct_abs64(xs[best]))) best = k;
  }
  return best;
}

void ct_cpu_chunk_lanes(ct_cpu_lanes* lanes, int64_t max_chunk) {
  if (max_chunk < 1) max_chunk = 1;
  lanes->chunks = ct_div_up(lanes->n, max_chunk);
  lanes->chunk = ct_div_up(lanes->n, lanes->chunks);
}

void ct_cpu_take_lanes(int32_t* n, int64_t* shape, int64_t* xs, int64_t* os, int32_t lane,
                       const char** xbase, char** obase, int64_t max_chunk, ct_cpu_lanes* lanes) {
  lanes->n = shape[lane];
  lanes->xs = xs[lane];
  lanes->os = os[lane];
  if (lanes->xs < 0) {
    *xbase += (lanes->n - 1) * lanes->xs;
    *obase += (lanes->n - 1) * lanes->os;
    lanes->xs = -lanes->xs;
    lanes->os = -lanes->os;
  }
  for (int32_t k = lane + 1; k < *n; ++k) {
    shape[k - 1] = shape[k];
    xs[k - 1] = xs[k];
    os[k - 1] = os[k];
  }
  --*n;
  ct_cpu_chunk_lanes(lanes, max_chunk);
}
