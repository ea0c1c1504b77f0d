/* tensor.c - validation, strides and overlap checks for tensor views. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

bool ct_checked_mul_i64(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

bool ct_checked_add_i64(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

bool ct_checked_extent_product(const int64_t* extents, int32_t count, int64_t* out) {
  int64_t product = 1;
  bool overflow = false;
  for (int32_t k = 0; k < count; ++k) {
    if (extents[k] == 0) {
      *out = 0;
      return true;
    }
    overflow = overflow || __builtin_mul_overflow(product, extents[k], &product);
  }
  *out = product;
  return !overflow;
}

/* Compact strides skip zero extents (as NumPy), so an empty view's strides may exceed int64
 * (shape (0, 3, 2**62)): they saturate there, where no element is ever reached through them. */
void ct_compact_strides(int32_t ndim, const int64_t* shape, int64_t* strides) {
  int64_t step = 1;
  for (int32_t k = ndim - 1; k >= 0; --k) {
    strides[k] = step;
    step = ct_size_mul(step, shape[k] > 0 ? shape[k] : 1);
  }
}

int64_t ct_tensor_stride(const ct_tensor* t, int32_t k) {
  if (t->strides) return t->strides[k];
  int64_t step = 1;
  for (int32_t j = t->ndim - 1; j > k; --j)
    step = ct_size_mul(step, t->shape[j] > 0 ? t->shape[j] : 1);
  return step;
}

int64_t ct_tensor_numel(const ct_tensor* t) {
  int64_t n = 1;
  for (int32_t k = 0; k < t->ndim; ++k) n *= t->shape[k];
  return n;
}

bool ct_tensor_is_contiguous(const ct_tensor* t) {
  if (!t->strides) return true;
  int64_t step = 1;
  for (int32_t k = t->ndim - 1; k >= 0; --k) {
    if (t->shape[k] == 0) return true;
    if (t->shape[k] != 1 && t->strides[k] != step) return false;
    step *= t->shape[k];
  }
  return true;
}

const char* ct_label_text(const ct_tensor_label* label, char* buffer, size_t size) {
  if (label->index >= 0) {
    snprintf(buffer, size, "%s: %s '%s'[%d]", label->op, label->role, label->name, label->index);
  } else {
    snprintf(buffer, size, "%s: %s '%s'", label->op, label->role, label->name);
  }
  return buffer;
}

/* Whether addresses of these devices can be compared arithmetically. OpenCL and Vulkan hand out
 * opaque handles: only views of the same handle can overlap. */
static bool ct_device_has_flat_addresses(int32_t device_type) {
  return device_type != CT_DEVICE_OPENCL && device_type != CT_DEVICE_VULKAN &&
         device_type != CT_DEVICE_METAL && device_type != CT_DEVICE_WEBGPU;
}

/* The label's text for a message: used only on error paths. */
#define CT_WHAT ct_label_text(label, what_buffer, sizeof what_buffer)

int ct_tensor_validate(const ct_tensor* t, const ct_tensor_label* label, bool need_data) {
  char what_buffer[160];
  if (!t) return ct_set_error(CT_ERROR_NULL_POINTER, "%s is NULL", CT_WHAT);
  if (t->ndim < 0 || t->ndim > CT_MAX_NDIM) {
    return ct_set_error(CT_ERROR_INVALID_SHAPE, "%s has ndim %d; ctensor supports 0 to %d", CT_WHAT,
                        t->ndim, CT_MAX_NDIM);
  }
  if (t->ndim > 0 && !t->shape) {
    return ct_set_error(CT_ERROR_NULL_POINTER, "%s has ndim %d but a NULL shape", CT_WHAT, t->ndim);
  }
  if (ct_dtype_to_id(t->dtype) == CT_DT_INVALID) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                        "%s has dtype %s, which ctensor does not support", CT_WHAT,
                        ct_dtype_describe(t->dtype));
  }
  int64_t numel = 1;
  for (int32_t k = 0; k < t->ndim; ++k) {
    if (t->shape[k] < 0) {
      return ct_set_error(CT_ERROR_INVALID_SHAPE, "%s has negative extent %lld in dimension %d",
                          CT_WHAT, (long long)t->shape[k], k);
    }
    if (!ct_checked_mul_i64(numel, t->shape[k], &numel)) {
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                          "%s has more elements than int64 can count (overflow at dimension %d)",
                          CT_WHAT, k);
    }
  }
  const int64_t itemsize = ct_dtype_size(t->dtype);
  /* As NumPy: the extents other than 0 must have a countable product too, even in an empty view
   * (compact strides are those products, and kernels compute them in bytes). */
  int64_t spread = itemsize;
  for (int32_t k = 0; k < t->ndim; ++k) {
    if (!ct_checked_mul_i64(spread, t->shape[k] > 0 ? t->shape[k] : 1, &spread)) {
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                          "%s: its non-zero extents have more bytes than int64 can count "
                          "(overflow at dimension %d)",
                          CT_WHAT, k);
    }
  }
  int64_t bytes;
  if (!ct_checked_mul_i64(numel, itemsize, &bytes)) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "%s: %lld elements of %lld bytes overflow int64",
                        CT_WHAT, (long long)numel, (long long)itemsize);
  }
  /* Every stride in bytes fits in int64, even where its extent is 0 or 1 and it is never
   * taken: kernels compute byte strides for every dimension. */
  for (int32_t k = 0; t->strides && k < t->ndim; ++k) {
    int64_t stride_bytes;
    if (!ct_checked_mul_i64(t->strides[k], itemsize, &stride_bytes) || stride_bytes == INT64_MIN) {
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                          "%s: stride %lld of dimension %d overflows int64 in bytes", CT_WHAT,
                          (long long)t->strides[k], k);
    }
  }
  if (numel == 0) return CT_OK;
  if (need_data && !t->data) {
    return ct_set_error(CT_ERROR_NULL_POINTER, "%s has %lld elements but NULL data", CT_WHAT,
                        (long long)numel);
  }
  if (t->strides) {
    /* The span the strides reach must be addressable in int64 bytes too. */
    int64_t span = 0;
    for (int32_t k = 0; k < t->ndim; ++k) {
      int64_t reach;
      if (t->strides[k] == INT64_MIN) {
        return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "%s: stride %lld of dimension %d is INT64_MIN",
                            CT_WHAT, (long long)t->strides[k], k);
      }
      const int64_t stride = t->strides[k] < 0 ? -t->strides[k] : t->strides[k];
      if (!ct_checked_mul_i64(stride, t->shape[k] - 1, &reach) ||
          !ct_checked_add_i64(span, reach, &span)) {
        return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "%s: strides reach past the int64 range",
                            CT_WHAT);
      }
    }
    /* ... including the last element's own bytes (ct_tensor_byte_range adds them). */
    if (!ct_checked_mul_i64(span, itemsize, &span) || !ct_checked_add_i64(span, itemsize, &span)) {
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW, "%s: strides reach past the int64 range",
                          CT_WHAT);
    }
  }
  if (t->byte_offset > (uint64_t)INT64_MAX) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "%s: byte_offset %llu does not fit in int64 (it would wrap the address "
                        "space)",
                        CT_WHAT, (unsigned long long)t->byte_offset);
  }
  return need_data ? ct_tensor_validate_address(t, label) : CT_OK;
}

/* Byte range [lo, hi) that t's elements touch, relative to its first element. The view was
 * validated, so every term fits in int64. */
static void ct_tensor_byte_range(const ct_tensor* t, int64_t* lo, int64_t* hi);

/* The alignment ctensor requires of an element's address: its size, or for complex dtypes the
 * size of one part (NumPy's and C's alignment of these types), at most 8. */
static int64_t ct_dtype_alignment(ct_dtype dtype) {
  int64_t size = ct_dtype_size(ct_dtype_is_complex(dtype) ? ct_dtype_real_part(dtype) : dtype);
  return size > 8 ? 8 : size;
}

int ct_tensor_validate_address(const ct_tensor* t, const ct_tensor_label* label) {
  char what_buffer[160];
  if (!t->data || ct_tensor_numel(t) == 0) return CT_OK;
  const bool flat = ct_device_has_flat_addresses(t->device.device_type);
  /* Flat addresses: data + byte_offset and every element's address must stay inside the address
   * space (no wrap-around before data or past the top). Opaque handles (OpenCL buffers): offsets
   * are relative to the buffer, so the first touched byte must not lie before it. */
  const uint64_t base_origin = flat ? (uint64_t)(uintptr_t)t->data : 0;
  uint64_t base;
  if (__builtin_add_overflow(base_origin, t->byte_offset, &base)) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "%s: data + byte_offset (%llu) wraps around the address space", CT_WHAT,
                        (unsigned long long)t->byte_offset);
  }
  int64_t lo, hi;
  ct_tensor_byte_range(t, &lo, &hi);
  uint64_t last;
  if ((uint64_t)-lo > base || __builtin_add_overflow(base, (uint64_t)hi, &last)) {
    return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                        "%s: its elements reach %s the address space (byte_offset %llu, strides "
                        "reaching %lld to %lld bytes)",
                        CT_WHAT, (uint64_t)-lo > base ? "below" : "past the top of",
                        (unsigned long long)t->byte_offset, (long long)lo, (long long)hi);
  }
  const int64_t alignment = ct_dtype_alignment(t->dtype);
  if (alignment > 1 && base % (uint64_t)alignment != 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "%s: the %s data at data + byte_offset is not aligned to %lld bytes; "
                        "ctensor reads typed elements only at addresses aligned to their "
                        "alignment (copy the array to an aligned buffer first)",
                        CT_WHAT, ct_dtype_describe(t->dtype), (long long)alignment);
  }
  return CT_OK;
}

static void ct_tensor_byte_range(const ct_tensor* t, int64_t* lo, int64_t* hi) {
  const int64_t itemsize = ct_dtype_size(t->dtype);
  int64_t low = 0, high = 0;
  for (int32_t k = 0; k < t->ndim; ++k) {
    const int64_t reach = (t->shape[k] - 1) * ct_tensor_stride(t, k) * itemsize;
    if (reach < 0)
      low += reach;
    else
      high += reach;
  }
  *lo = low;
  *hi = high + itemsize;
}

typedef struct ct_dim_extent {
  int64_t stride; /* absolute, in bytes */
  int64_t extent;
} ct_dim_extent;

static int ct_compare_dim_extent(const void* a, const void* b) {
  const int64_t x = ((const ct_dim_extent*)a)->stride, y = ((const ct_dim_extent*)b)->stride;
  return (x > y) - (x < y);
}

bool ct_tensor_may_self_overlap(const ct_tensor* t) {
  if (ct_tensor_numel(t) <= 1) return false;
  /* Sufficient condition for distinct addresses: sorted by |stride|, each stride is at least the
   * span of all smaller dimensions plus one element. */
  ct_dim_extent dims[CT_MAX_NDIM];
  int32_t n = 0;
  const int64_t itemsize = ct_dtype_size(t->dtype);
  for (int32_t k = 0; k < t->ndim; ++k) {
    if (t->shape[k] == 1) continue;
    const int64_t s = ct_tensor_stride(t, k);
    dims[n].stride = (s < 0 ? -s : s) * itemsize;
    dims[n].extent = t->shape[k];
    ++n;
  }
  qsort(dims, (size_t)n, sizeof dims[0], ct_compare_dim_extent);
  int64_t span = itemsize; /* bytes covered by the dimensions seen so far */
  for (int32_t k = 0; k < n; ++k) {
    if (dims[k].stride < span) return true;
    span = dims[k].stride * (dims[k].extent - 1) + span;
  }
  return false;
}

bool ct_tensors_may_overlap(const ct_tensor* a, const ct_tensor* b) {
  if (ct_tensor_numel(a) == 0 || ct_tensor_numel(b) == 0) return false;
  if (a->device.device_type != b->device.device_type || a->device.device_id != b->device.device_id)
    return false;
  int64_t alo, ahi, blo, bhi;
  ct_tensor_byte_range(a, &alo, &ahi);
  ct_tensor_byte_range(b, &blo, &bhi);
  /* Unsigned: validation made sure that base + lo and base + hi stay inside the 64-bit range
   * (ct_tensor_validate_address), where a signed sum could overflow for high addresses. */
  uint64_t abase, bbase;
  if (ct_device_has_flat_addresses(a->device.device_type)) {
    abase = (uint64_t)(uintptr_t)ct_tensor_base(a);
    bbase = (uint64_t)(uintptr_t)ct_tensor_base(b);
  } else {
    if (a->data != b->data) return false;
    abase = a->byte_offset;
    bbase = b->byte_offset;
  }
  const uint64_t a_first = abase - (uint64_t)-alo, a_end = abase + (uint64_t)ahi;
  const uint64_t b_first = bbase - (uint64_t)-blo, b_end = bbase + (uint64_t)bhi;
  return a_first < b_end && b_first < a_end;
}

bool ct_tensors_same_view(const ct_tensor* a, const ct_tensor* b) {
  /* Same first element: producers may split the address between data and byte_offset
   * differently, so compare the sum where addresses are flat. */
  const bool same_start = ct_device_has_flat_addresses(a->device.device_type)
                              ? ct_tensor_base(a) == ct_tensor_base(b)
                              : a->data == b->data && a->byte_offset == b->byte_offset;
  if (!same_start || a->ndim != b->ndim || ct_dtype_size(a->dtype) != ct_dtype_size(b->dtype))
    return false;
  for (int32_t k = 0; k < a->ndim; ++k) {
    if (a->shape[k] != b->shape[k]) return false;
    if (a->shape[k] > 1 && ct_tensor_stride(a, k) != ct_tensor_stride(b, k)) return false;
  }
  return true;
}
