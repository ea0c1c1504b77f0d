/*
 * fuzz_ops.c - a seeded, bounded fuzz driver over every registered operator and the ABI entries.
 *
 *   ct_fuzz [--seed S] [--seconds T] [--iterations N] [--batch B] [--only OP] [--replay I] [-v]
 *
 * Each iteration draws, from (seed, iteration) alone, one operator and a call of it: 0 to 8
 * inputs of random rank (0-6), extents (0, small, huge), dtypes, strides (compact, zero,
 * negative, huge), byte offsets (aligned, misaligned, wrapping) and attributes (every schema
 * attribute, sometimes of the wrong type, with extreme integers and floats, odd strings), then
 * runs ct_op_infer, ct_op_workspace, ct_op_run (or a plan) and, now and then, another ABI entry
 * with random arguments. Checks:
 *   - the process never crashes or hangs (iterations run in forked children, a batch at a time;
 *     a child that dies is a crash, reported with the iteration to --replay);
 *   - every failing call leaves a non-empty ct_last_error() message;
 *   - nothing is written outside the outputs: every buffer sits between guard bytes, inputs are
 *     compared before and after, and failing calls leave the outputs untouched;
 *   - the caller's allocator failing makes a dynamic op fail with that status.
 * Calls whose tensors would take more than CT_FUZZ_MAX_BYTES are only inferred, never run.
 * Prints the counts (calls, statuses, crashes) and exits 1 on any report.
 *
 * Built by `ninja -C <build> tests/fuzz/ct_fuzz` (tests/fuzz/meson.build); with
 * -Db_sanitize=address,undefined it runs under AddressSanitizer and UBSan (docs/contributing.md).
 */
#define _GNU_SOURCE

#include <ctensor.h>

#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CT_FUZZ_MAX_BYTES ((int64_t)1 << 24) /* largest buffer a run may use */
#define CT_FUZZ_MAX_WORK ((int64_t)1 << 20)  /* largest element count of a run's tensors */
#define CT_FUZZ_GUARD 64                     /* guard bytes on each side of a buffer */
#define CT_FUZZ_MAX_TENSORS 8
#define CT_FUZZ_STATUSES 32     /* -status for statuses 0 .. -31 */
#define CT_FUZZ_CALL_SECONDS 20 /* one iteration longer than this is a hang */

/* ------------------------------------------------------------------------------------------ */
/* Random numbers: splitmix64, seeded per iteration                                            */
/* ------------------------------------------------------------------------------------------ */

typedef struct rng {
  uint64_t state;
} rng;

static uint64_t next_u64(rng* r) {
  uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n) (n > 0). */
static int64_t below(rng* r, int64_t n) {
  return (int64_t)(next_u64(r) % (uint64_t)n);
}

/* True with probability 1/n. */
static bool one_in(rng* r, int64_t n) {
  return below(r, n) == 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Counts, shared with the parent through an anonymous shared mapping                          */
/* ------------------------------------------------------------------------------------------ */

typedef struct counts {
  uint64_t calls;                      /* ABI calls made */
  uint64_t runs;                       /* ct_op_run / ct_plan_run calls that ran a kernel */
  uint64_t statuses[CT_FUZZ_STATUSES]; /* by -status */
  uint64_t reports;                    /* failed checks (empty message, guard, input changed) */
  uint64_t iterations;
  int64_t current; /* the iteration a child is in (for crash reports) */
  char current_op[64];
} counts;

static counts* g_counts;
static bool g_verbose;

static void report(int64_t iteration, const char* op, const char* what) {
  ++g_counts->reports;
  fprintf(stderr, "REPORT iteration %lld (%s): %s\n", (long long)iteration, op, what);
}

/* Counts one ABI call's status; a failure must carry a message. */
static int note(int64_t iteration, const char* op, const char* entry, int status) {
  ++g_counts->calls;
  const int index = status <= 0 && -status < CT_FUZZ_STATUSES ? -status : CT_FUZZ_STATUSES - 1;
  ++g_counts->statuses[index];
  if (status != CT_OK) {
    const char* message = ct_last_error();
    if (!message || !message[0]) {
      char what[160];
      snprintf(what, sizeof what, "%s returned %s with an empty message", entry,
               ct_status_name(status));
      report(iteration, op, what);
    }
    if (g_verbose) {
      fprintf(stderr, "  %s %s: %s: %s\n", op, entry, ct_status_name(status),
              message ? message : "(null)");
    }
  }
  return status;
}

/* ------------------------------------------------------------------------------------------ */
/* Guarded buffers                                                                             */
/* ------------------------------------------------------------------------------------------ */

typedef struct buffer {
  unsigned char* block; /* guard, bytes, guard */
  int64_t bytes;
  unsigned char* copy; /* the bytes as they were (inputs) */
} buffer;

static unsigned char* buffer_data(buffer* b) {
  return b->block + CT_FUZZ_GUARD;
}

static bool buffer_make(buffer* b, int64_t bytes, rng* r, bool keep_copy) {
  b->bytes = bytes;
  b->copy = NULL;
  b->block = malloc((size_t)bytes + 2 * CT_FUZZ_GUARD + 8);
  if (!b->block) return false;
  memset(b->block, 0xA5, (size_t)bytes + 2 * CT_FUZZ_GUARD + 8);
  unsigned char* data = buffer_data(b);
  for (int64_t i = 0; i < bytes; ++i) data[i] = (unsigned char)next_u64(r);
  if (keep_copy) {
    b->copy = malloc((size_t)bytes + 1);
    if (b->copy) memcpy(b->copy, data, (size_t)bytes);
  }
  return true;
}

static bool buffer_guards_intact(const buffer* b) {
  const unsigned char* data = b->block + CT_FUZZ_GUARD;
  for (int i = 0; i < CT_FUZZ_GUARD; ++i) {
    if (b->block[i] != 0xA5 || data[b->bytes + i] != 0xA5) return false;
  }
  return true;
}

static void buffer_free(buffer* b) {
  free(b->block);
  free(b->copy);
  b->block = NULL;
  b->copy = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Drawing dtypes, views and attributes                                                        */
/* ------------------------------------------------------------------------------------------ */

static const ct_dtype k_dtypes[] = {
    {CT_DTYPE_BOOL, 8, 1},   {CT_DTYPE_INT, 8, 1},      {CT_DTYPE_UINT, 8, 1},
    {CT_DTYPE_INT, 16, 1},   {CT_DTYPE_UINT, 16, 1},    {CT_DTYPE_INT, 32, 1},
    {CT_DTYPE_UINT, 32, 1},  {CT_DTYPE_INT, 64, 1},     {CT_DTYPE_UINT, 64, 1},
    {CT_DTYPE_FLOAT, 16, 1}, {CT_DTYPE_BFLOAT, 16, 1},  {CT_DTYPE_FLOAT, 32, 1},
    {CT_DTYPE_FLOAT, 64, 1}, {CT_DTYPE_COMPLEX, 64, 1}, {CT_DTYPE_COMPLEX, 128, 1},
};
#define CT_FUZZ_NUM_DTYPES ((int)(sizeof k_dtypes / sizeof k_dtypes[0]))

static ct_dtype draw_dtype(rng* r) {
  if (one_in(r, 40)) return (ct_dtype){(uint8_t)below(r, 8), (uint8_t)(8 << below(r, 5)), 1};
  if (one_in(r, 60)) return (ct_dtype){CT_DTYPE_FLOAT, 32, (uint16_t)(1 + below(r, 4))};
  /* float32, float64 and int64 are the most common. */
  if (one_in(r, 2)) {
    static const int common[] = {11, 12, 7, 5};
    return k_dtypes[common[below(r, 4)]];
  }
  return k_dtypes[below(r, CT_FUZZ_NUM_DTYPES)];
}

static int64_t itemsize_of(ct_dtype d) {
  return d.bits >= 8 ? (int64_t)(d.bits / 8) * (d.lanes ? d.lanes : 1) : 1;
}

static int64_t draw_extreme_int(rng* r) {
  static const int64_t values[] = {0,
                                   1,
                                   -1,
                                   2,
                                   3,
                                   -2,
                                   4,
                                   7,
                                   64,
                                   1 << 20,
                                   INT64_MAX,
                                   INT64_MIN,
                                   INT64_MAX - 1,
                                   INT64_MIN + 1,
                                   (int64_t)1 << 62,
                                   -((int64_t)1 << 62),
                                   (int64_t)1 << 31,
                                   -((int64_t)1 << 31),
                                   (int64_t)1 << 40};
  if (one_in(r, 3)) return below(r, 9) - 3;
  return values[below(r, (int64_t)(sizeof values / sizeof values[0]))];
}

static double draw_extreme_double(rng* r) {
  static const double values[] = {0.0,       1.0,    -1.0,  0.5, 2.0,
                                  -0.0,      1e-300, 1e300, NAN, INFINITY,
                                  -INFINITY, 1e10,   3.0,   0.1, 9.2233720368547758e18};
  return values[below(r, (int64_t)(sizeof values / sizeof values[0]))];
}

/* Strings: the schemas' own defaults (collected at start) and a few others. */
#define CT_FUZZ_MAX_STRINGS 64
static const char* g_strings[CT_FUZZ_MAX_STRINGS];
static int g_num_strings;
static const char* const k_extra_strings[] = {
    "",         "mean",     "sum",       "none",     "nearest",
    "bilinear", "bicubic",  "area",      "constant", "reflect",
    "edge",     "wrap",     "ij,jk->ik", "ii->i",    "...i,...i->...",
    "ab,bc->",  "i->",      "->",        "a...b",    "ijk,ikl->ijl",
    "\xff\xfe", "circular", "replicate", "linear",   "nearest-exact",
    "float32",  "i,i->i",   "zzzz",      "..."};

static void add_string(const char* s) {
  if (!s || g_num_strings >= CT_FUZZ_MAX_STRINGS) return;
  for (int i = 0; i < g_num_strings; ++i) {
    if (strcmp(g_strings[i], s) == 0) return;
  }
  g_strings[g_num_strings++] = s;
}

/* One drawn tensor with its buffer. */
typedef struct fuzz_tensor {
  ct_tensor view;
  int64_t shape[CT_MAX_NDIM];
  int64_t strides[CT_MAX_NDIM];
  buffer buf;
  bool has_buffer;
  bool runnable; /* its buffer covers every element the view reaches */
} fuzz_tensor;

/* Fills a buffer with values: small integers for integer dtypes (so that index inputs are
 * often in range), 0/1 for bool, random bits otherwise. */
static void fill_values(unsigned char* data, int64_t bytes, ct_dtype d, rng* r) {
  const int64_t size = itemsize_of(d);
  if (d.code == CT_DTYPE_BOOL) {
    for (int64_t i = 0; i < bytes; ++i) data[i] = (unsigned char)below(r, 2);
  } else if ((d.code == CT_DTYPE_INT || d.code == CT_DTYPE_UINT) && size <= 8 && !one_in(r, 4)) {
    for (int64_t i = 0; i + size <= bytes; i += size) {
      const int64_t v = d.code == CT_DTYPE_INT ? below(r, 8) - 2 : below(r, 6);
      memcpy(data + i, &v, (size_t)size); /* little-endian: the low bytes */
    }
  } else if (d.code == CT_DTYPE_FLOAT && d.bits == 32 && !one_in(r, 4)) {
    for (int64_t i = 0; i + 4 <= bytes; i += 4) {
      const float v = (float)(below(r, 2001) - 1000) / 250.0f;
      memcpy(data + i, &v, 4);
    }
  } else if (d.code == CT_DTYPE_FLOAT && d.bits == 64 && !one_in(r, 4)) {
    for (int64_t i = 0; i + 8 <= bytes; i += 8) {
      const double v = (double)(below(r, 2001) - 1000) / 250.0;
      memcpy(data + i, &v, 8);
    }
  }
}

/* Draws a view. `like` (may be NULL) is another input whose shape and dtype it often copies, so
 * that binary ops get broadcastable operands. */
static void draw_tensor(fuzz_tensor* t, const fuzz_tensor* like, rng* r) {
  memset(t, 0, sizeof *t);
  ct_tensor* v = &t->view;
  v->device = (ct_device){CT_DEVICE_CPU, 0};
  if (one_in(r, 80)) v->device = (ct_device){(int32_t)below(r, 17), (int32_t)below(r, 3)};
  v->dtype = like && !one_in(r, 4) ? like->view.dtype : draw_dtype(r);
  int32_t ndim = like && !one_in(r, 3) ? like->view.ndim : (int32_t)below(r, 5);
  if (one_in(r, 20)) ndim = (int32_t)below(r, 9);
  if (one_in(r, 200)) ndim = one_in(r, 2) ? -1 : CT_MAX_NDIM + 1;
  v->ndim = ndim;
  v->shape = t->shape;
  const int32_t n = ndim < 0 ? 0 : ndim > CT_MAX_NDIM ? CT_MAX_NDIM : ndim;
  static const int64_t small[] = {0, 1, 1, 2, 2, 3, 3, 4, 5, 7, 8, 16};
  bool huge = false;
  for (int32_t k = 0; k < n; ++k) {
    if (like && k < like->view.ndim && like->view.ndim == ndim && !one_in(r, 4)) {
      t->shape[k] = like->shape[k];
      if (one_in(r, 6)) t->shape[k] = 1; /* broadcast */
    } else {
      t->shape[k] = small[below(r, (int64_t)(sizeof small / sizeof small[0]))];
    }
    if (one_in(r, 40)) t->shape[k] = 17 + below(r, 300);
    if (one_in(r, 60)) {
      t->shape[k] = one_in(r, 2) ? INT64_MAX : ((int64_t)1 << (30 + below(r, 33)));
      huge = true;
    }
    if (one_in(r, 300)) t->shape[k] = -1 - below(r, 3);
  }
  if (one_in(r, 300)) v->shape = NULL;
  /* Strides: compact (NULL or written out), or per dim one of zero, compact, doubled, negated,
   * huge. Huge extents get stride 0 so that the view stays small, except now and then. */
  const int64_t item = itemsize_of(v->dtype);
  int64_t compact = 1;
  bool explicit_strides = huge || !one_in(r, 2);
  for (int32_t k = n - 1; k >= 0; --k) {
    int64_t s = compact;
    const int64_t e = t->shape[k];
    if (e > 0 && e < ((int64_t)1 << 30) && compact < ((int64_t)1 << 40)) compact *= e;
    if (explicit_strides) {
      switch (below(r, 10)) {
        case 0:
          s = 0;
          break;
        case 1:
          s = -s;
          break;
        case 2:
          s = 2 * s;
          break;
        case 3:
          if (one_in(r, 10)) s = one_in(r, 2) ? INT64_MIN : ((int64_t)1 << (40 + below(r, 23)));
          break;
        default:
          break;
      }
      if (e >= ((int64_t)1 << 30) && !one_in(r, 10)) s = 0;
    }
    t->strides[k] = s;
  }
  v->strides = explicit_strides ? t->strides : NULL;
  /* Element range the view reaches (saturated), for the buffer. */
  int64_t lo = 0, hi = 0;
  bool fits = ndim >= 0 && ndim <= CT_MAX_NDIM && v->shape != NULL;
  bool empty = false;
  for (int32_t k = 0; k < n && fits; ++k) {
    const int64_t e = t->shape[k];
    if (e < 0) fits = false;
    if (e == 0) empty = true;
  }
  for (int32_t k = 0; k < n && fits && !empty; ++k) {
    const int64_t e = t->shape[k];
    int64_t s = explicit_strides ? t->strides[k] : 0;
    if (!explicit_strides) {
      s = 1;
      for (int32_t j = k + 1; j < n; ++j) {
        if (__builtin_mul_overflow(s, t->shape[j], &s)) fits = false;
      }
    }
    int64_t reach;
    if (!fits || s == INT64_MIN || __builtin_mul_overflow(s, e - 1, &reach)) {
      fits = false;
      break;
    }
    if (reach < 0) {
      if (__builtin_add_overflow(lo, reach, &lo)) fits = false;
    } else if (__builtin_add_overflow(hi, reach, &hi)) {
      fits = false;
    }
  }
  int64_t span_bytes = 0;
  if (fits && !empty) {
    int64_t elements;
    if (__builtin_sub_overflow(hi, lo, &elements) ||
        __builtin_add_overflow(elements, 1, &elements) ||
        __builtin_mul_overflow(elements, item, &span_bytes) || span_bytes > CT_FUZZ_MAX_BYTES) {
      fits = false;
    }
  }
  /* A buffer always exists (a small one where the view cannot be covered: the library must
   * then refuse the view, or the sanitizers see the stray access). */
  const int64_t bytes = fits && !empty ? span_bytes : item * 4;
  t->has_buffer = buffer_make(&t->buf, bytes, r, true);
  if (t->has_buffer) {
    fill_values(buffer_data(&t->buf), bytes, v->dtype, r);
    memcpy(t->buf.copy, buffer_data(&t->buf), (size_t)bytes);
  }
  t->runnable = fits;
  unsigned char* first =
      t->has_buffer ? buffer_data(&t->buf) + (fits && !empty ? -lo * item : 0) : NULL;
  v->data = first;
  v->byte_offset = 0;
  if (first && one_in(r, 3)) { /* part of the way to the first element in byte_offset */
    const int64_t back = fits && !empty ? -lo * item : 0;
    v->data = first - back;
    v->byte_offset = (uint64_t)back;
  }
  switch (below(r, 40)) {
    case 0: /* misaligned: the library must refuse typed data (or take bytes) */
      if (v->data) v->byte_offset += 1;
      t->runnable = false;
      break;
    case 1: /* wraps the address space */
      v->byte_offset = UINT64_MAX - (uint64_t)below(r, 64);
      t->runnable = false;
      break;
    case 2:
      v->byte_offset += (uint64_t)1 << 62;
      t->runnable = false;
      break;
    case 3:
      if (!empty) v->data = NULL;
      break;
    default:
      break;
  }
}

/* Draws the value of one attribute of the schema. */
static void draw_attr(const ct_attr_schema* a, ct_attr_value* value, int64_t* ints, double* floats,
                      rng* r) {
  memset(value, 0, sizeof *value);
  int32_t type = a->type;
  if (one_in(r, 12)) type = (int32_t)below(r, 8); /* a wrong type now and then */
  if (one_in(r, 60)) type = 9 + (int32_t)below(r, 3);
  value->type = type;
  switch (type) {
    case CT_ATTR_INT:
      value->value.i = draw_extreme_int(r);
      break;
    case CT_ATTR_BOOL:
      value->value.b = one_in(r, 10) ? draw_extreme_int(r) : below(r, 2);
      break;
    case CT_ATTR_FLOAT:
      value->value.f = draw_extreme_double(r);
      break;
    case CT_ATTR_STRING:
      if (one_in(r, 30)) {
        value->value.s = NULL;
      } else if (g_num_strings > 0 && !one_in(r, 3)) {
        value->value.s = g_strings[below(r, g_num_strings)];
      } else {
        value->value.s = k_extra_strings[below(
            r, (int64_t)(sizeof k_extra_strings / sizeof k_extra_strings[0]))];
      }
      break;
    case CT_ATTR_INT_LIST: {
      const int64_t count = one_in(r, 50) ? -1 : below(r, 5);
      value->count = count;
      for (int64_t i = 0; i < count && i < 8; ++i) {
        ints[i] = one_in(r, 2) ? below(r, 5) - 1 : draw_extreme_int(r);
      }
      value->value.ints = one_in(r, 40) ? NULL : ints;
      break;
    }
    case CT_ATTR_FLOAT_LIST: {
      const int64_t count = below(r, 5);
      value->count = count;
      for (int64_t i = 0; i < count; ++i) floats[i] = draw_extreme_double(r);
      value->value.floats = one_in(r, 40) ? NULL : floats;
      break;
    }
    case CT_ATTR_DTYPE:
      value->value.dtype = draw_dtype(r);
      break;
    default:
      value->value.i = draw_extreme_int(r);
      break;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* The caller's allocator for dynamic ops: guarded buffers, failing on request                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct fuzz_allocator {
  buffer outputs[CT_FUZZ_MAX_TENSORS];
  int count;
  int fail_at; /* output index whose allocation fails, or -1 */
  bool failed;
  int64_t iteration;
  const char* op;
} fuzz_allocator;

static int fuzz_allocate(void* user_data, int32_t output_index, const ct_tensor_info* info,
                         int32_t device_type, int32_t device_id, void** data) {
  fuzz_allocator* a = user_data;
  *data = NULL;
  if (output_index == a->fail_at) {
    a->failed = true;
    return CT_ERROR_OUT_OF_MEMORY;
  }
  if (a->count >= CT_FUZZ_MAX_TENSORS) return CT_ERROR_OUT_OF_MEMORY;
  int64_t numel = 1;
  for (int32_t k = 0; k < info->ndim; ++k) {
    if (info->shape[k] < 0 || __builtin_mul_overflow(numel, info->shape[k], &numel)) {
      report(a->iteration, a->op, "the allocator was asked for a negative or overflowing shape");
      return CT_ERROR_SIZE_OVERFLOW;
    }
  }
  int64_t bytes;
  if (__builtin_mul_overflow(numel, itemsize_of(info->dtype), &bytes) ||
      bytes > CT_FUZZ_MAX_BYTES) {
    return CT_ERROR_OUT_OF_MEMORY;
  }
  rng r = {(uint64_t)a->iteration * 31u + (uint64_t)output_index};
  buffer* b = &a->outputs[a->count];
  if (!buffer_make(b, bytes, &r, false)) return CT_ERROR_OUT_OF_MEMORY;
  ++a->count;
  *data = buffer_data(b);
  return CT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* One iteration                                                                               */
/* ------------------------------------------------------------------------------------------ */

static int32_t g_num_ops;

/* The other ABI entries, with random arguments. */
static void fuzz_abi_entry(const ct_op* op, const char* name, int64_t iteration, rng* r) {
  char text[96];
  switch (below(r, 12)) {
    case 0: {
      const ct_op* found = NULL;
      const char* probe = one_in(r, 8)   ? NULL
                          : one_in(r, 2) ? name
                                         : g_strings[below(r, g_num_strings)];
      note(iteration, name, "ct_op_find", ct_op_find(probe, &found));
      break;
    }
    case 1: {
      const ct_op* at = NULL;
      const int32_t index =
          (int32_t)(below(r, 3) == 0 ? draw_extreme_int(r) : below(r, g_num_ops + 2));
      note(iteration, name, "ct_op_at", ct_op_at(index, one_in(r, 20) ? NULL : &at));
      break;
    }
    case 2: {
      int32_t count = 0;
      note(iteration, name, "ct_op_kernel_count", ct_op_kernel_count(op, &count));
      ct_kernel_info info;
      memset(&info, 0, sizeof info);
      info.struct_size = one_in(r, 5) ? (size_t)below(r, sizeof info) : sizeof info;
      const int32_t index = (int32_t)(one_in(r, 4) ? draw_extreme_int(r) : below(r, count + 1));
      note(iteration, name, "ct_op_kernel_info", ct_op_kernel_info(op, index, &info));
      break;
    }
    case 3: {
      const size_t capacity = (size_t)below(r, (int64_t)sizeof text);
      memset(text, 0x5A, sizeof text);
      size_t length = 0;
      note(iteration, name, "ct_op_schema_json",
           ct_op_schema_json(one_in(r, 50) ? NULL : op, capacity ? text : NULL, capacity, &length));
      for (size_t i = capacity; i < sizeof text; ++i) {
        if ((unsigned char)text[i] != 0x5A) {
          report(iteration, name, "ct_op_schema_json wrote past its capacity");
          break;
        }
      }
      break;
    }
    case 4: {
      ct_dtype d = draw_dtype(r);
      (void)ct_dtype_name(d);
      ++g_counts->calls;
      note(iteration, name, "ct_dtype_from_name",
           ct_dtype_from_name(one_in(r, 10) ? NULL : g_strings[below(r, g_num_strings)], &d));
      break;
    }
    case 5: {
      const char* s = ct_status_name((int)draw_extreme_int(r));
      ++g_counts->calls;
      if (!s || !s[0]) report(iteration, name, "ct_status_name gave no name");
      break;
    }
    case 6: {
      int32_t count = 0;
      note(iteration, name, "ct_backend_count", ct_backend_count(&count));
      ct_backend_info info;
      memset(&info, 0, sizeof info);
      info.struct_size = one_in(r, 5) ? (size_t)below(r, sizeof info) : sizeof info;
      note(iteration, name, "ct_backend_get_info",
           ct_backend_get_info((int32_t)(one_in(r, 3) ? draw_extreme_int(r) : below(r, count + 1)),
                               &info));
      break;
    }
    case 7: {
      void* data = NULL;
      /* Huge sizes now and then only: each failing one makes AddressSanitizer print a warning. */
      const uint64_t bytes =
          !one_in(r, 10) ? (uint64_t)below(r, 256) : (uint64_t)draw_extreme_int(r);
      const ct_device device = {one_in(r, 4) ? (int32_t)below(r, 17) : CT_DEVICE_CPU, 0};
      const int status =
          note(iteration, name, "ct_device_allocate", ct_device_allocate(device, bytes, &data));
      if (status == CT_OK && data && bytes <= 256) {
        char host[8] = {0};
        note(iteration, name, "ct_device_copy_from_host",
             ct_device_copy_from_host(device, data, 0, host, bytes < 8 ? bytes : 8, NULL));
        note(iteration, name, "ct_device_copy_to_host",
             ct_device_copy_to_host(device, host, data, 0, bytes < 8 ? bytes : 8, NULL));
        note(iteration, name, "ct_device_copy_from_host (wrapping)",
             ct_device_copy_from_host(device, data, UINT64_MAX - 2, host, 8, NULL));
        note(iteration, name, "ct_device_copy_to_host (wrapping)",
             ct_device_copy_to_host(device, host, data, UINT64_MAX - 2, 8, NULL));
      }
      if (status == CT_OK) note(iteration, name, "ct_device_free", ct_device_free(device, data));
      break;
    }
    case 8: {
      const ct_gradient* gradient = NULL;
      note(iteration, name, "ct_op_gradient", ct_op_gradient(one_in(r, 20) ? NULL : op, &gradient));
      break;
    }
    case 9: {
      const ct_op_schema* schema = NULL;
      note(iteration, name, "ct_op_get_schema",
           ct_op_get_schema(one_in(r, 20) ? NULL : op, &schema));
      break;
    }
    case 10: {
      int32_t threads = 0;
      note(iteration, name, "ct_get_num_threads", ct_get_num_threads(&threads));
      note(iteration, name, "ct_set_num_threads",
           ct_set_num_threads((int32_t)(one_in(r, 4) ? draw_extreme_int(r) : below(r, 4))));
      break;
    }
    default: {
      (void)ct_abi_version();
      (void)ct_version_string();
      (void)ct_registry_generation();
      g_counts->calls += 3;
      break;
    }
  }
}

static void fuzz_iteration(uint64_t seed, int64_t iteration, const char* only) {
  rng r = {seed ^ ((uint64_t)iteration * 0xD1B54A32D192ED03ull)};
  (void)next_u64(&r);
  const ct_op* op = NULL;
  if (only) {
    if (ct_op_find(only, &op) != CT_OK) return;
  } else if (ct_op_at((int32_t)below(&r, g_num_ops), &op) != CT_OK) {
    report(iteration, "?", "ct_op_at failed for an index below ct_op_count");
    return;
  }
  const ct_op_schema* schema = NULL;
  ct_op_get_schema(op, &schema);
  const char* name = schema->name;
  g_counts->current = iteration;
  snprintf(g_counts->current_op, sizeof g_counts->current_op, "%s", name);

  /* Inputs: the schema's count, sometimes one more or one fewer, variadic ones 0-4 extra. */
  int32_t num_inputs = schema->num_inputs;
  const bool variadic =
      num_inputs > 0 && (schema->inputs[num_inputs - 1].flags & CT_PARAM_VARIADIC);
  if (variadic) num_inputs = num_inputs - 1 + (int32_t)below(&r, 5);
  if (one_in(&r, 25)) num_inputs += one_in(&r, 2) ? 1 : -1;
  if (num_inputs < 0) num_inputs = 0;
  if (num_inputs > CT_FUZZ_MAX_TENSORS) num_inputs = CT_FUZZ_MAX_TENSORS;
  fuzz_tensor* inputs = calloc(CT_FUZZ_MAX_TENSORS, sizeof *inputs);
  const ct_tensor* input_views[CT_FUZZ_MAX_TENSORS] = {0};
  bool runnable = true;
  int64_t work = 0;
  for (int32_t i = 0; i < num_inputs; ++i) {
    const int32_t p = i < schema->num_inputs ? i : schema->num_inputs - 1;
    const bool optional =
        p >= 0 && p < schema->num_inputs && (schema->inputs[p].flags & CT_PARAM_OPTIONAL);
    if ((optional && one_in(&r, 2)) || one_in(&r, 150)) continue; /* absent (or NULL) */
    draw_tensor(&inputs[i], i > 0 && input_views[i - 1] ? &inputs[i - 1] : NULL, &r);
    input_views[i] = &inputs[i].view;
    runnable = runnable && inputs[i].runnable;
    int64_t numel = 1;
    for (int32_t k = 0; k < inputs[i].view.ndim && k < CT_MAX_NDIM && inputs[i].view.shape; ++k) {
      if (inputs[i].shape[k] < 0 || __builtin_mul_overflow(numel, inputs[i].shape[k], &numel)) {
        numel = INT64_MAX;
        break;
      }
    }
    if (numel > work) work = numel;
  }

  if (g_verbose) {
    fprintf(stderr, "iteration %lld: %s, %d inputs\n", (long long)iteration, name, num_inputs);
    for (int32_t i = 0; i < num_inputs; ++i) {
      const ct_tensor* v = input_views[i];
      if (!v) {
        fprintf(stderr, "  input %d: NULL\n", i);
        continue;
      }
      fprintf(stderr, "  input %d: dtype (%d, %d, %d), data %p + %llu, runnable %d, shape/strides",
              i, v->dtype.code, v->dtype.bits, v->dtype.lanes, v->data,
              (unsigned long long)v->byte_offset, inputs[i].runnable);
      for (int32_t k = 0; k < v->ndim && k < CT_MAX_NDIM && v->shape; ++k) {
        fprintf(stderr, " %lld/%lld", (long long)v->shape[k],
                v->strides ? (long long)v->strides[k] : 0LL);
      }
      fprintf(stderr, "%s\n", v->strides ? "" : " (compact)");
    }
  }

  /* Attributes: each schema attribute with probability 2/3, sometimes an unknown name or a
   * duplicate. */
  ct_attr attrs[20];
  int64_t ints[20][8];
  double floats[20][8];
  int32_t num_attrs = 0;
  for (int32_t a = 0; a < schema->num_attrs && num_attrs < 18; ++a) {
    const ct_attr_schema* as = &schema->attrs[a];
    if (!(as->flags & CT_ATTR_REQUIRED) && one_in(&r, 3)) continue;
    attrs[num_attrs].name = as->name;
    draw_attr(as, &attrs[num_attrs].value, ints[num_attrs], floats[num_attrs], &r);
    ++num_attrs;
  }
  if (one_in(&r, 40)) {
    attrs[num_attrs].name = one_in(&r, 4) ? NULL : "no_such_attribute";
    attrs[num_attrs].value = (ct_attr_value){CT_ATTR_INT, 0, 0, {.i = 1}};
    ++num_attrs;
  }

  /* ct_op_infer, with a guard after the capacity it is given. */
  ct_tensor_info infos[CT_FUZZ_MAX_TENSORS + 1];
  memset(infos, 0x5A, sizeof infos);
  int32_t capacity = one_in(&r, 20) ? (int32_t)below(&r, 2) : CT_FUZZ_MAX_TENSORS;
  int32_t num_outputs = 0;
  const int infer_status = note(
      iteration, name, "ct_op_infer",
      ct_op_infer(op, input_views, num_inputs, attrs, num_attrs, infos, capacity, &num_outputs));
  {
    const unsigned char* past = (const unsigned char*)&infos[capacity];
    for (size_t b = 0; b < sizeof(ct_tensor_info); ++b) {
      if (past[b] != 0x5A) {
        report(iteration, name, "ct_op_infer wrote past its capacity");
        break;
      }
    }
  }
  if (infer_status == CT_OK && (num_outputs < 0 || num_outputs > capacity)) {
    report(iteration, name, "ct_op_infer returned more outputs than its capacity");
    num_outputs = 0;
  }

  /* Outputs: compact guarded buffers of the inferred shapes (none for dynamic ops). */
  const bool dynamic = schema->category == CT_OP_DYNAMIC;
  fuzz_tensor* outputs = calloc(CT_FUZZ_MAX_TENSORS, sizeof *outputs);
  const ct_tensor* output_views[CT_FUZZ_MAX_TENSORS] = {0};
  int32_t out_count = 0;
  if (infer_status == CT_OK && !dynamic) {
    for (int32_t o = 0; o < num_outputs; ++o) {
      fuzz_tensor* t = &outputs[o];
      t->view.device = (ct_device){CT_DEVICE_CPU, 0};
      t->view.dtype = infos[o].dtype;
      t->view.ndim = infos[o].ndim;
      t->view.shape = t->shape;
      int64_t numel = 1;
      for (int32_t k = 0; k < infos[o].ndim; ++k) {
        t->shape[k] = infos[o].shape[k];
        if (t->shape[k] < 0 || __builtin_mul_overflow(numel, t->shape[k], &numel)) {
          report(iteration, name, "ct_op_infer gave a negative or overflowing output shape");
          numel = INT64_MAX;
          break;
        }
      }
      int64_t bytes;
      if (__builtin_mul_overflow(numel, itemsize_of(t->view.dtype), &bytes) ||
          bytes > CT_FUZZ_MAX_BYTES) {
        runnable = false;
        bytes = 0;
      }
      if (numel > work) work = numel;
      t->has_buffer = buffer_make(&t->buf, bytes, &r, true);
      t->view.data = t->has_buffer && bytes > 0 ? buffer_data(&t->buf) : NULL;
      output_views[o] = &t->view;
      ++out_count;
    }
  }
  if (work > CT_FUZZ_MAX_WORK) runnable = false;

  /* Workspace, then the run (or a plan). */
  fuzz_allocator allocator_state = {
      .fail_at = one_in(&r, 6) ? (int)below(&r, 3) : -1, .iteration = iteration, .op = name};
  const ct_allocator allocator = {sizeof(ct_allocator), &allocator_state, fuzz_allocate};
  ct_context context = {sizeof(ct_context), NULL, NULL, 0, &allocator, NULL};
  uint64_t ws_bytes = 0, ws_alignment = 0;
  const int ws_status = note(iteration, name, "ct_op_workspace",
                             ct_op_workspace(op, input_views, num_inputs, output_views, out_count,
                                             attrs, num_attrs, &ws_bytes, &ws_alignment));
  buffer workspace = {0};
  if (ws_status == CT_OK && ws_bytes > 0) {
    if (ws_bytes > (uint64_t)CT_FUZZ_MAX_BYTES) {
      runnable = false;
    } else {
      buffer_make(&workspace, (int64_t)ws_bytes + 64, &r, false);
      uintptr_t at = (uintptr_t)buffer_data(&workspace);
      const uintptr_t align = ws_alignment > 0 && ws_alignment <= 64 ? ws_alignment : 64;
      at = (at + align - 1) / align * align;
      context.workspace = (void*)at;
      context.workspace_size = ws_bytes;
    }
  }
  if (infer_status == CT_OK && ws_status == CT_OK && runnable) {
    int status;
    if (one_in(&r, 4)) {
      ct_plan* plan = NULL;
      status = note(iteration, name, "ct_plan_create",
                    ct_plan_create(op, input_views, num_inputs, output_views, out_count, attrs,
                                   num_attrs, &context, &plan));
      if (status == CT_OK) {
        void* data[2 * CT_FUZZ_MAX_TENSORS] = {0};
        const int32_t count = num_inputs + out_count;
        if (one_in(&r, 3) && count > 0) { /* a misaligned pointer: refused */
          const int32_t i = (int32_t)below(&r, count);
          const ct_tensor* v = i < num_inputs ? input_views[i] : output_views[i - num_inputs];
          if (v && v->data && itemsize_of(v->dtype) >= 2) data[i] = (char*)v->data + 1;
        }
        const int set =
            note(iteration, name, "ct_plan_set_data", ct_plan_set_data(plan, data, count));
        (void)set;
        ++g_counts->runs;
        status = note(iteration, name, "ct_plan_run", ct_plan_run(plan));
        ct_plan_destroy(plan);
        ++g_counts->calls;
      }
    } else {
      ++g_counts->runs;
      status = note(iteration, name, "ct_op_run",
                    ct_op_run(op, input_views, num_inputs, dynamic ? NULL : output_views,
                              dynamic ? 0 : out_count, attrs, num_attrs, &context));
    }
    if (allocator_state.failed && status == CT_OK) {
      report(iteration, name, "the run succeeded although the caller's allocator failed");
    }
    if (status != CT_OK && !dynamic) {
      for (int32_t o = 0; o < out_count; ++o) {
        fuzz_tensor* t = &outputs[o];
        if (t->has_buffer && t->buf.copy &&
            memcmp(buffer_data(&t->buf), t->buf.copy, (size_t)t->buf.bytes) != 0) {
          /* Kernel failures found while computing may leave partial results; argument errors
           * may not. Only the statuses that validation returns are held to it. */
          if (status != CT_ERROR_OUT_OF_MEMORY && status != CT_ERROR_BACKEND &&
              status != CT_ERROR_INVALID_ARGUMENT) {
            report(iteration, name, "a failing run changed an output");
          }
          break;
        }
      }
    }
  }

  /* The checks: guards around every buffer, inputs unchanged. */
  for (int32_t i = 0; i < CT_FUZZ_MAX_TENSORS; ++i) {
    fuzz_tensor* t = &inputs[i];
    if (!t->has_buffer) continue;
    if (!buffer_guards_intact(&t->buf)) report(iteration, name, "an input's guard bytes changed");
    if (t->buf.copy && memcmp(buffer_data(&t->buf), t->buf.copy, (size_t)t->buf.bytes) != 0) {
      report(iteration, name, "an input's bytes changed");
    }
    buffer_free(&t->buf);
  }
  for (int32_t o = 0; o < out_count; ++o) {
    fuzz_tensor* t = &outputs[o];
    if (!t->has_buffer) continue;
    if (!buffer_guards_intact(&t->buf)) report(iteration, name, "an output's guard bytes changed");
    buffer_free(&t->buf);
  }
  for (int k = 0; k < allocator_state.count; ++k) {
    if (!buffer_guards_intact(&allocator_state.outputs[k])) {
      report(iteration, name, "a dynamic output's guard bytes changed");
    }
    buffer_free(&allocator_state.outputs[k]);
  }
  if (workspace.block) {
    if (!buffer_guards_intact(&workspace))
      report(iteration, name, "the workspace's guards changed");
    buffer_free(&workspace);
  }
  free(inputs);
  free(outputs);
  if (one_in(&r, 6)) fuzz_abi_entry(op, name, iteration, &r);
  ++g_counts->iterations;
}

/* ------------------------------------------------------------------------------------------ */
/* Driver: batches in forked children                                                          */
/* ------------------------------------------------------------------------------------------ */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(void) {
  fprintf(stderr,
          "usage: ct_fuzz [--seed S] [--seconds T] [--iterations N] [--batch B] [--only OP] "
          "[--replay I] [-v]\n");
}

int main(int argc, char** argv) {
  uint64_t seed = 1;
  double seconds = 10.0;
  int64_t max_iterations = -1, batch = 2000, replay = -1;
  const char* only = NULL;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (strcmp(argv[i], "--seed") == 0 && has_value) {
      seed = strtoull(argv[++i], NULL, 0);
    } else if (strcmp(argv[i], "--seconds") == 0 && has_value) {
      seconds = atof(argv[++i]);
    } else if (strcmp(argv[i], "--iterations") == 0 && has_value) {
      max_iterations = strtoll(argv[++i], NULL, 0);
    } else if (strcmp(argv[i], "--batch") == 0 && has_value) {
      batch = strtoll(argv[++i], NULL, 0);
    } else if (strcmp(argv[i], "--only") == 0 && has_value) {
      only = argv[++i];
    } else if (strcmp(argv[i], "--replay") == 0 && has_value) {
      replay = strtoll(argv[++i], NULL, 0);
    } else if (strcmp(argv[i], "-v") == 0) {
      g_verbose = true;
    } else {
      usage();
      return 2;
    }
  }
  if (batch < 1) batch = 1;
  g_counts = mmap(NULL, sizeof(counts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (g_counts == MAP_FAILED) return 2;
  memset(g_counts, 0, sizeof *g_counts);
  if (ct_op_count(&g_num_ops) != CT_OK || g_num_ops <= 0) {
    fprintf(stderr, "ct_fuzz: no operators registered: %s\n", ct_last_error());
    return 2;
  }
  for (int32_t i = 0; i < g_num_ops; ++i) {
    const ct_op* op;
    const ct_op_schema* schema;
    if (ct_op_at(i, &op) != CT_OK || ct_op_get_schema(op, &schema) != CT_OK) continue;
    add_string(schema->name);
    for (int32_t a = 0; a < schema->num_attrs; ++a) {
      if (schema->attrs[a].type == CT_ATTR_STRING)
        add_string(schema->attrs[a].default_value.value.s);
    }
  }
  for (size_t i = 0; i < sizeof k_extra_strings / sizeof k_extra_strings[0]; ++i) {
    add_string(k_extra_strings[i]);
  }

  if (replay >= 0) { /* one iteration in this process, for a debugger */
    g_verbose = true;
    fuzz_iteration(seed, replay, only);
    printf("replayed iteration %lld: %llu calls, %llu reports\n", (long long)replay,
           (unsigned long long)g_counts->calls, (unsigned long long)g_counts->reports);
    return g_counts->reports ? 1 : 0;
  }

  const double start = now_seconds();
  int64_t next = 0;
  uint64_t crashes = 0, hangs = 0;
  while ((max_iterations < 0 || next < max_iterations) &&
         (max_iterations >= 0 || now_seconds() - start < seconds)) {
    int64_t end = next + batch;
    if (max_iterations >= 0 && end > max_iterations) end = max_iterations;
    fflush(stdout);
    fflush(stderr);
    const pid_t child = fork();
    if (child < 0) {
      perror("fork");
      return 2;
    }
    if (child == 0) {
      for (int64_t it = next; it < end; ++it) {
        alarm(CT_FUZZ_CALL_SECONDS);
        fuzz_iteration(seed, it, only);
        if (max_iterations < 0 && now_seconds() - start >= seconds) break;
      }
      _exit(0);
    }
    int wstatus = 0;
    waitpid(child, &wstatus, 0);
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
      const bool hang = WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGALRM;
      if (hang) {
        ++hangs;
      } else {
        ++crashes;
      }
      fprintf(stderr,
              "%s in iteration %lld (%s): %s %d; rerun: ct_fuzz --seed %llu --replay %lld\n",
              hang ? "HANG" : "CRASH", (long long)g_counts->current, g_counts->current_op,
              WIFSIGNALED(wstatus) ? "signal" : "exit status",
              WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus),
              (unsigned long long)seed, (long long)g_counts->current);
      end = g_counts->current + 1; /* go on after the failing iteration */
      ++g_counts->iterations;
    }
    next = end;
    if (max_iterations < 0 && now_seconds() - start >= seconds) break;
  }
  const double elapsed = now_seconds() - start;
  printf("ct_fuzz: seed %llu, %.1f s, %llu iterations over %d ops, %llu calls, %llu runs\n",
         (unsigned long long)seed, elapsed, (unsigned long long)g_counts->iterations, g_num_ops,
         (unsigned long long)g_counts->calls, (unsigned long long)g_counts->runs);
  printf("statuses:");
  for (int s = 0; s < CT_FUZZ_STATUSES; ++s) {
    if (g_counts->statuses[s]) {
      printf(" %s=%llu", ct_status_name(-s), (unsigned long long)g_counts->statuses[s]);
    }
  }
  printf("\ncrashes: %llu, hangs: %llu, reports: %llu\n", (unsigned long long)crashes,
         (unsigned long long)hangs, (unsigned long long)g_counts->reports);
  return crashes || hangs || g_counts->reports ? 1 : 0;
}
