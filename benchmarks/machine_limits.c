/* The machine's own limits, measured by the benchmark harness in the same run as the operators:
 * STREAM-style memory kernels (copy, add, read) and a floating-point FMA peak kernel.
 *
 * Built at run time by benchmarks/machine.py with the system C compiler
 * (-O3 -march=native -fopenmp) and loaded with ctypes. Each function runs its kernel once
 * and returns nothing but a checksum the compiler cannot drop; the harness times it. */

#include <stddef.h>
#include <stdint.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Uses n threads for the kernels below (n <= 0: leave OpenMP's default). */
void ml_set_threads(int n) {
#ifdef _OPENMP
  if (n > 0) omp_set_num_threads(n);
#else
  (void)n;
#endif
}

/* dst[i] = src[i]: 2 streams (read + write). */
void ml_copy(float* restrict dst, const float* restrict src, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

/* dst[i] = a[i] + b[i]: 3 streams (two reads, one write). */
void ml_add(float* restrict dst, const float* restrict a, const float* restrict b, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}

/* The sum of src (one read stream); 16 partial sums so the adds are not latency-bound. */
float ml_read(const float* restrict src, int64_t n) {
  float total = 0.0f;
#pragma omp parallel reduction(+ : total)
  {
    float acc[16] = {0};
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n - n % 16; i += 16) {
      for (int k = 0; k < 16; ++k) acc[k] += src[i + k];
    }
    for (int k = 0; k < 16; ++k) total += acc[k];
  }
  for (int64_t i = n - n % 16; i < n; ++i) total += src[i];
  return total;
}

/* FMA peak: per thread, `iters` rounds of ML_CHAINS independent vector FMA chains (enough to
 * hide the FMA latency on current cores, few enough to stay in registers), vectors as wide as
 * the build target's widest (16 lanes with AVX-512, else 8). Each round is ML_CHAINS * ML_LANES
 * fused multiply-adds, 2 flops each. Returns the flop count done, so the caller needs no knowledge
 * of the widths. */
#ifdef __AVX512F__
#define ML_LANES 16
#else
#define ML_LANES 8
#endif
#define ML_CHAINS 12
typedef float ml_vec __attribute__((vector_size(ML_LANES * sizeof(float))));

double ml_fma_peak(int64_t iters, float* sink) {
  double flops = 0.0;
#pragma omp parallel reduction(+ : flops)
  {
    ml_vec acc[ML_CHAINS];
    const ml_vec mul = {0};
    ml_vec add;
    for (int l = 0; l < ML_LANES; ++l) add[l] = 1e-7f * (float)(l + 1);
    for (int c = 0; c < ML_CHAINS; ++c) {
      for (int l = 0; l < ML_LANES; ++l) acc[c][l] = (float)(c + l);
    }
    ml_vec scale = mul + 0.999999f;
    for (int64_t it = 0; it < iters; ++it) {
      for (int c = 0; c < ML_CHAINS; ++c) acc[c] = acc[c] * scale + add;
    }
    ml_vec total = acc[0];
    for (int c = 1; c < ML_CHAINS; ++c) total += acc[c];
    float s = 0.0f;
    for (int l = 0; l < ML_LANES; ++l) s += total[l];
#pragma omp critical
    *sink += s;
    flops += 2.0 * ML_LANES * ML_CHAINS * (double)iters;
  }
  return flops;
}
