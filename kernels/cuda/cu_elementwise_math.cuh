/* cu_elementwise_math.cuh - the helpers the element-wise table's formulas call
 * (capi/ops/elementwise_table.h; kernels/opencl/cl_elementwise.c defines the same names): NumPy's
 * divmod for float floor_divide and remainder, the integer versions (division by zero gives 0, MIN
 * // -1 wraps), integer pow by squaring (wrapping), and selu, hardswish and gelu as the CPU backend
 * computes them. T is a compute type (float, double, int, long long). */
#ifndef CTENSOR_CU_ELEMENTWISE_MATH_CUH_
#define CTENSOR_CU_ELEMENTWISE_MATH_CUH_

#include <type_traits>

template <class T>
__device__ __forceinline__ T ct_divmod(T a, T b, T* modulus) {
  T mod = fmod(a, b);
  if (b == 0) {
    *modulus = mod;
    return a / b;
  }
  T div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= (T)1;
    }
  } else {
    mod = copysign((T)0, b);
  }
  T floordiv;
  if (div != 0) {
    floordiv = floor(div);
    if (div - floordiv > (T)0.5) floordiv += (T)1;
  } else {
    floordiv = copysign((T)0, a / b);
  }
  *modulus = mod;
  return floordiv;
}

template <class T>
__device__ __forceinline__ T ct_floor_divide(T a, T b) {
  T mod;
  return b != 0 ? ct_divmod(a, b, &mod) : a / b;
}

template <class T>
__device__ __forceinline__ T ct_remainder(T a, T b) {
  T mod = fmod(a, b);
  if (b != 0) ct_divmod(a, b, &mod);
  return mod;
}

/* hypot without overflow where the result is finite: CUDA's double hypot gives inf near
 * DBL_MAX. The float version is CUDA's own (computed wider, within an ulp). */
template <class T>
__device__ __forceinline__ T ct_hypot(T a, T b) {
  if constexpr (sizeof(T) == 4) {
    return hypot(a, b);
  } else {
    a = fabs(a);
    b = fabs(b);
    if (isinf(a) || isinf(b)) return (T)INFINITY;
    if (a != a || b != b) return a + b;
    const T large = a > b ? a : b, small = a > b ? b : a;
    if (large == 0) return 0;
    const T ratio = small / large;
    return large * sqrt(fma(ratio, ratio, (T)1));
  }
}

template <class T>
__device__ __forceinline__ T ct_selu(T x) {
  const T alpha = (T)1.6732632423543772848170429916717;
  const T scale = (T)1.0507009873554804934193349852946;
  return x > 0 ? scale * x : scale * alpha * expm1(x);
}

template <class T>
__device__ __forceinline__ T ct_hardswish(T x) {
  if (x >= 3) return x;
  const T t = x + (T)3 < 0 ? (T)0 : x + (T)3;
  return x * t / (T)6;
}

template <class T>
__device__ __forceinline__ T ct_gelu(T x, T approximate) {
  if (approximate != 0) {
    const T k = (T)0.7978845608028654;
    const T u = k * (x + (T)0.044715 * x * x * x);
    /* tanh saturates exactly, so that 1 + tanh(u) is 0 for very negative u. */
    const T t = fabs(u) >= (T)20 ? copysign((T)1, u) : tanh(u);
    return (T)0.5 * x * ((T)1 + t);
  }
  return (T)0.5 * x * ((T)1 + erf(x * (T)0.70710678118654752440));
}

template <class T>
__device__ __forceinline__ T ct_int_floor_divide(T a, T b) {
  using U = std::make_unsigned_t<T>;
  if (b == 0) return 0;
  if (b == -1) return (T)((U)0 - (U)a);
  const T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

template <class T>
__device__ __forceinline__ T ct_int_remainder(T a, T b) {
  if (b == 0 || b == -1) return 0;
  const T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

template <class T>
__device__ __forceinline__ T ct_int_pow(T a, T b) {
  using U = std::make_unsigned_t<T>;
  U base = (U)a, exponent = (U)b, result = 1;
  while (exponent) {
    if (exponent & 1) result *= base;
    base *= base;
    exponent >>= 1;
  }
  return (T)result;
}

#endif /* CTENSOR_CU_ELEMENTWISE_MATH_CUH_ */
