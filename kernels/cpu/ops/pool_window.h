/* pool_window.h - the window of max_pool2d, avg_pool2d and adaptive_avg_pool2d as their
 * attributes give it, read the same way by the forward kernels (pool_kernels.c) and the backward
 * ones (pool_backward_kernels.c), whose schemas share the attribute order. */
#ifndef CTENSOR_CPU_POOL_WINDOW_H_
#define CTENSOR_CPU_POOL_WINDOW_H_

#include <stdbool.h>
#include <stdint.h>

#include "ctensor.h"
#include "engine/int_div.h"

typedef enum ct_pool_mode { CT_POOL_MAX, CT_POOL_AVG, CT_POOL_ADAPTIVE } ct_pool_mode;

/* kernel, stride, padding and dilation as (H, W); avg_pool2d's divisor rule. */
typedef struct ct_pool_window {
  int64_t kernel[2], stride[2], padding[2], dilation[2];
  bool count_include_pad;
  bool has_divisor;
  int64_t divisor;
} ct_pool_window;

/* A pair attribute of one or two values (validated by infer); None or [] gives fallback. */
static inline void ct_pool_read_pair(const ct_attr_value* value, const int64_t* fallback,
                                     int64_t out[2]) {
  if (value->type != CT_ATTR_INT_LIST || value->count == 0) {
    out[0] = fallback[0];
    out[1] = fallback[1];
    return;
  }
  out[0] = value->value.ints[0];
  out[1] = value->value.ints[value->count - 1];
}

/* The window of a call's resolved attributes (kernel_size, stride, padding, then dilation for
 * max, count_include_pad and divisor_override for avg; adaptive pooling has none: its windows
 * depend on the output position). */
static inline void ct_pool_read_window(const ct_attr_value* attrs, ct_pool_mode mode,
                                       ct_pool_window* window) {
  static const int64_t ones[2] = {1, 1}, zeros[2] = {0, 0};
  *window = (ct_pool_window){.dilation = {1, 1}, .count_include_pad = true};
  if (mode == CT_POOL_ADAPTIVE) return;
  ct_pool_read_pair(&attrs[0], ones, window->kernel);
  ct_pool_read_pair(&attrs[1], window->kernel, window->stride);
  ct_pool_read_pair(&attrs[2], zeros, window->padding);
  if (mode == CT_POOL_MAX) {
    ct_pool_read_pair(&attrs[3], ones, window->dilation);
  } else {
    window->count_include_pad = attrs[4].value.b != 0;
    window->has_divisor = attrs[5].type == CT_ATTR_INT;
    window->divisor = window->has_divisor ? attrs[5].value.i : 0;
  }
}

/* The first tap start + j * dilation (j >= 0) that is not before 0: where a window that begins
 * in the padding first reads the input. Written without start's negation plus dilation, which
 * overflows for a dilation near INT64_MAX. */
static inline int64_t ct_pool_first_tap(int64_t start, int64_t dilation) {
  if (start >= 0) return start;
  /* before is at most the padding, whose double fits (infer checks); taps * dilation is below
   * before + dilation, and so below twice the larger of the two */
  const int64_t before = -start;
  const int64_t taps = before / dilation + (before % dilation != 0);
  return start + taps * dilation;
}

/* The tap after i (< end) at distance `dilation`, or end when that is past it: the loops over a
 * window's taps step this way, since i + dilation may overflow for a dilation near INT64_MAX. */
static inline int64_t ct_pool_next_tap(int64_t i, int64_t dilation, int64_t end) {
  return end - i > dilation ? i + dilation : end;
}

/* adaptive_avg_pool2d's window [*begin, *end) of output index i of out along an input extent
 * in: [floor(i · in / out), ceil((i + 1) · in / out)), computed without forming i · in, which
 * passes INT64_MAX for a broadcast input of huge extent. */
static inline void ct_pool_adaptive_window(int64_t i, int64_t in, int64_t out, int64_t* begin,
                                           int64_t* end) {
  *begin = ct_mul_div(i, in, out, false);
  *end = ct_mul_div(i + 1, in, out, true);
}

/* avg_pool2d's window size rows · cols (count_include_pad) as the divisor of type C: the integer
 * product converted once (what torch divides by), or where it overflows int64 (a window of more
 * than 2^63 taps, almost all in the padding) the product of the extents in double. */
#define CT_POOL_WINDOW_SIZE(C, rows, cols)                                                        \
  __extension__({                                                                                 \
    int64_t ct_pool_size_;                                                                        \
    __builtin_mul_overflow((rows), (cols), &ct_pool_size_) ? (C)((double)(rows) * (double)(cols)) \
                                                           : (C)ct_pool_size_;                    \
  })

#endif /* CTENSOR_CPU_POOL_WINDOW_H_ */
