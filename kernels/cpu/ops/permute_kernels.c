/* permute_kernels.c - permute_dims: a copy through the iteration engine with the input's strides
 * permuted into the output's order. It never looks at the values, so there is one copy loop per
 * element size (engine/copy_loops.h, used by the other copy ops too), registered for every dtype of
 * that size. A transposing copy (the output's contiguous dim is strided in the input, and another
 * dim is contiguous in the input) is copied in CT_TRANSPOSE_TILE x CT_TRANSPOSE_TILE tiles instead,
 * so that both sides move whole cache lines; tiles run in parallel. With AVX2 (cpu_isa.h),
 * 4-byte elements move as 8x8 blocks transposed in registers. */
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__) && !defined(CT_NO_ISA_VARIANTS)
#include <immintrin.h>
#define CT_TRANSPOSE_AVX2 1
#endif

#include "engine/copy_loops.h"
#include "engine/cpu_isa.h"
#include "cpu_register.h"
#include "engine/elementwise_loops.h"
#include "engine/dims.h"

/* ----- tiled transposing copy ----- */

#define CT_TRANSPOSE_TILE 64
/* Both tile dims at least this long, or the plain strided copy is as good. */
#define CT_TRANSPOSE_MIN_EXTENT 32

/* A copy whose output is contiguous along dim `b` and whose input is contiguous along dim `a`:
 * the other dims (outer, byte strides xs/os) are looped over; tasks are (outer position, tile of
 * CT_TRANSPOSE_TILE x CT_TRANSPOSE_TILE along a and b): a tile touches few pages and cache lines
 * on both sides. */
typedef struct ct_transpose_job {
  const char* x;
  char* out;
  int32_t nouter;
  int64_t outer_shape[CT_MAX_NDIM], outer_xs[CT_MAX_NDIM], outer_os[CT_MAX_NDIM];
  int64_t na, nb, xa, xb, oa, ob; /* extents and byte strides of the tile dims */
  int64_t blocks_a, blocks_b;     /* tiles along a and along b */
  int64_t itemsize;
} ct_transpose_job;

#define CT_TRANSPOSE_TILES(BITS, WORD)                                                       \
  static void ct_transpose_tiles_##BITS(const ct_transpose_job* j, const char* x, char* out, \
                                        int64_t a0, int64_t a1, int64_t b0, int64_t b1) {    \
    typedef WORD word;                                                                       \
    for (int64_t a = a0; a < a1; ++a) {                                                      \
      const char* xr = x + a * j->xa;                                                        \
      word* orow = (word*)(out + a * j->oa);                                                 \
      for (int64_t b = b0; b < b1; ++b) orow[b] = *(const word*)(xr + b * j->xb);            \
    }                                                                                        \
  }
CT_TRANSPOSE_TILES(8, uint8_t)
CT_TRANSPOSE_TILES(16, uint16_t)
CT_TRANSPOSE_TILES(32, uint32_t)
CT_TRANSPOSE_TILES(64, uint64_t)
CT_TRANSPOSE_TILES(128, ct_cpu_word128)

#ifdef CT_TRANSPOSE_AVX2
/* out row j (byte stride oa) = column j of the 8x8 block of 4-byte words whose row i starts at
 * x + i * xb. */
CT_CPU_TARGET_AVX2 static void ct_transpose_8x8_avx2(const char* x, int64_t xb, char* out,
                                                     int64_t oa) {
  const __m256 r0 = _mm256_loadu_ps((const float*)(x + 0 * xb));
  const __m256 r1 = _mm256_loadu_ps((const float*)(x + 1 * xb));
  const __m256 r2 = _mm256_loadu_ps((const float*)(x + 2 * xb));
  const __m256 r3 = _mm256_loadu_ps((const float*)(x + 3 * xb));
  const __m256 r4 = _mm256_loadu_ps((const float*)(x + 4 * xb));
  const __m256 r5 = _mm256_loadu_ps((const float*)(x + 5 * xb));
  const __m256 r6 = _mm256_loadu_ps((const float*)(x + 6 * xb));
  const __m256 r7 = _mm256_loadu_ps((const float*)(x + 7 * xb));
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  _mm256_storeu_ps((float*)(out + 0 * oa), _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps((float*)(out + 1 * oa), _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps((float*)(out + 2 * oa), _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps((float*)(out + 3 * oa), _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps((float*)(out + 4 * oa), _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps((float*)(out + 5 * oa), _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps((float*)(out + 6 * oa), _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps((float*)(out + 7 * oa), _mm256_permute2f128_ps(s3, s7, 0x31));
}

/* ct_transpose_tiles_32 with whole 8x8 blocks in registers, the edges element by element. The
 * words are moved as floats, bit for bit (loads, shuffles and stores never touch the values). */
CT_CPU_TARGET_AVX2 static void ct_transpose_tiles_32_avx2(const ct_transpose_job* j, const char* x,
                                                          char* out, int64_t a0, int64_t a1,
                                                          int64_t b0, int64_t b1) {
  const int64_t a8 = a0 + (a1 - a0) / 8 * 8;
  const int64_t b8 = b0 + (b1 - b0) / 8 * 8;
  for (int64_t a = a0; a < a8; a += 8) {
    for (int64_t b = b0; b < b8; b += 8) {
      ct_transpose_8x8_avx2(x + a * j->xa + b * j->xb, j->xb, out + a * j->oa + b * 4, j->oa);
    }
  }
  for (int64_t a = a0; a < a1; ++a) {
    const char* xr = x + a * j->xa;
    uint32_t* orow = (uint32_t*)(out + a * j->oa);
    for (int64_t b = a < a8 ? b8 : b0; b < b1; ++b) orow[b] = *(const uint32_t*)(xr + b * j->xb);
  }
}
#endif

static void ct_transpose_tasks(int64_t begin, int64_t end, void* context) {
  const ct_transpose_job* j = context;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t b0 = (t % j->blocks_b) * CT_TRANSPOSE_TILE;
    const int64_t b1 = b0 + CT_TRANSPOSE_TILE < j->nb ? b0 + CT_TRANSPOSE_TILE : j->nb;
    int64_t rest = t / j->blocks_b;
    const int64_t a0 = (rest % j->blocks_a) * CT_TRANSPOSE_TILE;
    const int64_t a1 = a0 + CT_TRANSPOSE_TILE < j->na ? a0 + CT_TRANSPOSE_TILE : j->na;
    rest /= j->blocks_a;
    const char* x = j->x;
    char* out = j->out;
    for (int32_t k = j->nouter - 1; k >= 0; --k) {
      const int64_t i = rest % j->outer_shape[k];
      rest /= j->outer_shape[k];
      x += i * j->outer_xs[k];
      out += i * j->outer_os[k];
    }
    switch (j->itemsize) {
      case 1:
        ct_transpose_tiles_8(j, x, out, a0, a1, b0, b1);
        break;
      case 2:
        ct_transpose_tiles_16(j, x, out, a0, a1, b0, b1);
        break;
      case 4:
#ifdef CT_TRANSPOSE_AVX2
        if (ct_cpu_isa() >= CT_CPU_ISA_AVX2) {
          ct_transpose_tiles_32_avx2(j, x, out, a0, a1, b0, b1);
          break;
        }
#endif
        ct_transpose_tiles_32(j, x, out, a0, a1, b0, b1);
        break;
      case 8:
        ct_transpose_tiles_64(j, x, out, a0, a1, b0, b1);
        break;
      default: /* 16 (complex128); ct_transpose_copy takes no other size */
        ct_transpose_tiles_128(j, x, out, a0, a1, b0, b1);
        break;
    }
  }
}

/* Declared in copy_loops.h. */
bool ct_transpose_copy(const char* x, char* out, int32_t ndim, const int64_t* shape,
                       const int64_t* xs, const int64_t* os, int64_t itemsize) {
  if (itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8 && itemsize != 16) {
    return false;
  }
  int64_t dims[CT_MAX_NDIM], dxs[CT_MAX_NDIM], dos[CT_MAX_NDIM];
  int32_t n = 0;
  for (int32_t k = 0; k < ndim; ++k) {
    if (shape[k] == 0) return false;
    if (shape[k] == 1) continue;
    dims[n] = shape[k];
    dos[n] = os[k];
    dxs[n++] = xs[k];
  }
  int64_t* strides[2] = {dos, dxs};
  ct_cpu_sort_dims(n, dims, strides, 2);
  n = ct_cpu_merge_dims(n, dims, strides, 2);
  if (n < 2 || dos[n - 1] != itemsize || dxs[n - 1] == itemsize) return false;
  int32_t a = -1;
  for (int32_t k = 0; k < n - 1; ++k) {
    if (dxs[k] == itemsize) a = k;
  }
  const int32_t b = n - 1;
  if (a < 0 || dims[a] < CT_TRANSPOSE_MIN_EXTENT || dims[b] < CT_TRANSPOSE_MIN_EXTENT) return false;
  ct_transpose_job j;
  j.x = x;
  j.out = out;
  j.itemsize = itemsize;
  j.na = dims[a];
  j.nb = dims[b];
  j.xa = dxs[a];
  j.xb = dxs[b];
  j.oa = dos[a];
  j.ob = dos[b];
  j.nouter = 0;
  int64_t outer = 1;
  for (int32_t k = 0; k < n - 1; ++k) {
    if (k == a) continue;
    j.outer_shape[j.nouter] = dims[k];
    j.outer_xs[j.nouter] = dxs[k];
    j.outer_os[j.nouter++] = dos[k];
    outer *= dims[k];
  }
  j.blocks_a = (j.na + CT_TRANSPOSE_TILE - 1) / CT_TRANSPOSE_TILE;
  j.blocks_b = (j.nb + CT_TRANSPOSE_TILE - 1) / CT_TRANSPOSE_TILE;
  ct_cpu_parallel_for(outer * j.blocks_a * j.blocks_b, CT_TRANSPOSE_TILE * CT_TRANSPOSE_TILE,
                      ct_transpose_tasks, &j);
  return true;
}

/* out[i0, ..., in-1] = x[j...] with j[axes[k]] = ik: output dim k walks input dim axes[k]. */
static int ct_cpu_permute_dims_run(const ct_kernel_call* call) {
  const ct_tensor* x = call->inputs[0];
  const ct_tensor* out = call->outputs[0];
  const ct_attr_value* axes = &call->attrs[0];
  const int32_t ndim = out->ndim;
  const int64_t itemsize = ct_dtype_size(x->dtype);
  int64_t strides[2 * CT_MAX_NDIM];
  for (int32_t k = 0; k < ndim; ++k) {
    int64_t axis = axes->value.ints[k];
    if (axis < 0) axis += ndim;
    if (axis < 0 || axis >= ndim) { /* infer rejects these; never index out of x's dims */
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "permute_dims: axis %lld is out of range",
                          (long long)axes->value.ints[k]);
    }
    strides[k] = ct_tensor_stride(x, (int32_t)axis) * itemsize;
    strides[ndim + k] = ct_tensor_stride(out, k) * itemsize;
  }
  if (ct_transpose_copy(ct_tensor_base(x), ct_tensor_base(out), ndim, out->shape, strides,
                        strides + ndim, itemsize)) {
    return CT_OK;
  }
  char* const bases[2] = {ct_tensor_base(x), ct_tensor_base(out)};
  const ct_cpu_loop_entry* entry = call->kernel_data;
  ct_cpu_iterate_raw(2, bases, strides, ndim, out->shape, entry->loop, NULL);
  return CT_OK;
}

#define CT_PERMUTE_REG_X(A, SFX, T, C, U, ID) \
  {"permute_dims", 2, {ID, ID}, ct_cpu_permute_dims_run, NULL, CT_CPU_COPY_ENTRY(T)},

static const ct_cpu_kernel ct_cpu_permute_kernels[] = {
    CT_CPU_ALL_TYPES(CT_PERMUTE_REG_X, _) CT_CPU_COMPLEX_TYPES(CT_PERMUTE_REG_X, _)};

int ct_cpu_register_permute(void) {
  return ct_cpu_register_all(ct_cpu_permute_kernels, CT_CPU_KERNEL_COUNT(ct_cpu_permute_kernels));
}
