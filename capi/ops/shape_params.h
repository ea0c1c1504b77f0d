/* shape_params.h - attribute normalisation shared by the shape/indexing ops' infer functions and
 * their CPU kernels (slice bounds, roll shifts, pad widths, tile repetitions). Each helper reports
 * invalid attributes with ct_set_error, so infer and kernel agree on one reading. */
#ifndef CTENSOR_SHAPE_PARAMS_H_
#define CTENSOR_SHAPE_PARAMS_H_

#include <stdint.h>
#include <string.h>

#include "../internal.h"

/* Python's slice.indices for one axis of extent n: start, step and length of the selection.
 * INT64_MIN / INT64_MAX stand for a missing bound. */
static inline void ct_slice_axis(int64_t n, int64_t start, int64_t stop, int64_t step,
                                 int64_t* first, int64_t* length) {
  if (step > 0) {
    if (start < 0) start = start + n < 0 ? 0 : start + n;
    if (start > n) start = n;
    if (stop < 0) stop = stop + n < 0 ? 0 : stop + n;
    if (stop > n) stop = n;
    *length = stop > start ? (stop - start - 1) / step + 1 : 0;
  } else {
    if (start < 0) start = start + n < 0 ? -1 : start + n;
    if (start >= n) start = n - 1;
    if (stop < 0) stop = stop + n < 0 ? -1 : stop + n;
    if (stop >= n) stop = n - 1;
    /* -step cannot overflow: step == INT64_MIN gives length 1 at most */
    *length = stop < start ? (int64_t)(((uint64_t)start - (uint64_t)stop - 1) /
                                       (uint64_t)(-(step + 1) + (uint64_t)1)) +
                                 1
                           : 0;
  }
  *first = start;
}

/* start/stop/step lists (each at most ndim long; missing entries: the whole axis) to per-axis
 * first index, step and length. */
static inline int ct_slice_params(const ct_attr_value* attrs, int32_t ndim, const int64_t* shape,
                                  int64_t* first, int64_t* steps, int64_t* lengths) {
  const ct_attr_value *start = &attrs[0], *stop = &attrs[1], *step = &attrs[2];
  if (start->count > ndim || stop->count > ndim || step->count > ndim) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "slice: start, stop and step may have at most %d entries (x's ndim)", ndim);
  }
  for (int32_t k = 0; k < ndim; ++k) {
    const int64_t s = k < step->count ? step->value.ints[k] : 1;
    if (s == 0) return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "slice: step of axis %d is 0", k);
    /* A missing entry and an explicit INT64_MIN or INT64_MAX are the same missing bound: the
     * whole axis in the step's direction (clamping INT64_MAX as a start would select nothing). */
    int64_t a = k < start->count ? start->value.ints[k] : INT64_MIN;
    int64_t b = k < stop->count ? stop->value.ints[k] : INT64_MAX;
    if (a == INT64_MIN || a == INT64_MAX) a = s > 0 ? INT64_MIN : INT64_MAX;
    if (b == INT64_MIN || b == INT64_MAX) b = s > 0 ? INT64_MAX : INT64_MIN;
    steps[k] = s;
    ct_slice_axis(shape[k], a, b, s, &first[k], &lengths[k]);
  }
  return CT_OK;
}

/* s reduced into [0, n) (n > 0) without forming s % n + n, which overflows for n > INT64_MAX / 2
 * (huge broadcast extents). */
static inline int64_t ct_shift_mod(int64_t s, int64_t n) {
  const int64_t r = s % n;
  return r < 0 ? r + n : r;
}

/* (a + b) mod n for a, b in [0, n), without overflow. */
static inline int64_t ct_add_mod(int64_t a, int64_t b, int64_t n) {
  return a >= n - b ? a - (n - b) : a + b;
}

/* roll: the total shift per axis, reduced into [0, n). shift and axis broadcast against each
 * other (NumPy); axis None rolls the flattened array (per_axis[0] is then the flat shift). */
static inline int ct_roll_params(const ct_attr_value* shift, const ct_attr_value* axis,
                                 int32_t ndim, const int64_t* shape, int64_t numel,
                                 int64_t* per_axis) {
  if (shift->count == 0) return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "roll: shift is empty");
  if (axis->type == CT_ATTR_NONE) {
    uint64_t total = 0;
    int64_t n = numel;
    for (int64_t i = 0; i < shift->count; ++i) {
      const int64_t s = shift->value.ints[i];
      if (n > 0) total = (uint64_t)ct_add_mod((int64_t)total, ct_shift_mod(s, n), n);
    }
    per_axis[0] = (int64_t)total;
    return CT_OK;
  }
  const int64_t count = shift->count > axis->count ? shift->count : axis->count;
  if ((shift->count != count && shift->count != 1) || (axis->count != count && axis->count != 1)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "roll: shift (%lld entries) and axis (%lld entries) do not broadcast",
                        (long long)shift->count, (long long)axis->count);
  }
  for (int32_t k = 0; k < ndim; ++k) per_axis[k] = 0;
  for (int64_t i = 0; i < count; ++i) {
    int64_t a = axis->value.ints[axis->count == 1 ? 0 : i];
    if (a < -(int64_t)ndim || a >= ndim) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "roll: axis %lld is out of bounds for an array of dimension %d",
                          (long long)a, ndim);
    }
    if (a < 0) a += ndim;
    const int64_t n = shape[a], s = shift->value.ints[shift->count == 1 ? 0 : i];
    if (n > 0) per_axis[a] = ct_add_mod(per_axis[a], ct_shift_mod(s, n), n);
  }
  return CT_OK;
}

/* pad: pad_width as 2*ndim values (before, after per axis), or 2 (every axis), or 1 (every side);
 * mode 0 constant, 1 reflect, 2 edge. */
static inline int ct_pad_params(const ct_attr_value* attrs, int32_t ndim, const int64_t* shape,
                                int64_t* before, int64_t* after, int* mode) {
  const ct_attr_value* w = &attrs[0];
  const char* m = attrs[1].value.s;
  if (strcmp(m, "constant") == 0) {
    *mode = 0;
  } else if (strcmp(m, "reflect") == 0) {
    *mode = 1;
  } else if (strcmp(m, "edge") == 0) {
    *mode = 2;
  } else {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "pad: mode '%s' is not one of constant, reflect, edge", m);
  }
  if (w->count != 2 * (int64_t)ndim && w->count != 2 && w->count != 1) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "pad: pad_width has %lld entries; expected 1, 2 or 2*ndim = %d",
                        (long long)w->count, 2 * ndim);
  }
  for (int32_t k = 0; k < ndim; ++k) {
    const int64_t* p = w->value.ints;
    before[k] = w->count == 1 ? p[0] : w->count == 2 ? p[0] : p[2 * k];
    after[k] = w->count == 1 ? p[0] : w->count == 2 ? p[1] : p[2 * k + 1];
    if (before[k] < 0 || after[k] < 0) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "pad: negative pad width on axis %d", k);
    }
    if (*mode != 0 && shape[k] == 0 && (before[k] > 0 || after[k] > 0)) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "pad: cannot pad the empty axis %d in mode '%s'", k, m);
    }
  }
  return CT_OK;
}

/* tile: repetitions for the output's ndim = max(x.ndim, len(reps)) dims (reps padded with
 * leading 1s). */
static inline int ct_tile_params(const ct_attr_value* reps, int32_t xndim, int32_t* ndim,
                                 int64_t* out_reps) {
  const int64_t count = reps->count;
  const int64_t n = count > xndim ? count : xndim;
  if (n > CT_MAX_NDIM) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "tile: %lld repetitions exceed %d dimensions",
                        (long long)count, CT_MAX_NDIM);
  }
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = k - (n - count);
    out_reps[k] = i >= 0 ? reps->value.ints[i] : 1;
    if (out_reps[k] < 0) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "tile: negative repetition %lld",
                          (long long)out_reps[k]);
    }
  }
  *ndim = (int32_t)n;
  return CT_OK;
}

#endif /* CTENSOR_SHAPE_PARAMS_H_ */
