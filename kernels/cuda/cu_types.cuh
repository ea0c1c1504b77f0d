/* cu_types.cuh - device-side view of the dtype tags: storage type, compute type (bool computes
 * as int 0/1 and float16 as float, as the OpenCL and CPU backends do), the unsigned type of the
 * computation's width (wrapping integer arithmetic), and loads and stores at byte addresses.
 * Stores convert from any compute type and round float16 to nearest even. */
#ifndef CTENSOR_CU_TYPES_CUH_
#define CTENSOR_CU_TYPES_CUH_

#include <cuda_fp16.h>

#include <type_traits>

#include "cu_plugin.h"

template <ct_pl_type Tag>
struct ct_cu_traits;

#define CT_CU_TRAITS(tag, storage_type, compute_type, unsigned_of_compute) \
  template <>                                                              \
  struct ct_cu_traits<tag> {                                               \
    using storage = storage_type;                                          \
    using compute = compute_type;                                          \
    using unsigned_type = unsigned_of_compute;                             \
  };
CT_CU_TRAITS(CT_PL_B8, uint8_t, int, unsigned)
CT_CU_TRAITS(CT_PL_I32, int32_t, int, unsigned)
CT_CU_TRAITS(CT_PL_I64, long long, long long, unsigned long long)
CT_CU_TRAITS(CT_PL_F16, __half, float, unsigned)
CT_CU_TRAITS(CT_PL_F32, float, float, unsigned)
CT_CU_TRAITS(CT_PL_F64, double, double, unsigned long long)
#undef CT_CU_TRAITS

template <ct_pl_type Tag>
using ct_cu_compute_t = typename ct_cu_traits<Tag>::compute;

/* The value at byte address `p`, in its compute type. */
template <ct_pl_type Tag>
__device__ __forceinline__ ct_cu_compute_t<Tag> ct_cu_load(const char* p) {
  using S = typename ct_cu_traits<Tag>::storage;
  if constexpr (Tag == CT_PL_F16) {
    return __half2float(*reinterpret_cast<const __half*>(p));
  } else {
    return static_cast<ct_cu_compute_t<Tag>>(*reinterpret_cast<const S*>(p));
  }
}

/* `v` converted to integer type S as the CPU backend converts: toward zero, saturating at the
 * range, NaN to 0 (PTX's conversion gives INT64_MIN for a NaN). */
template <class S, class V>
__device__ __forceinline__ S ct_cu_float_to_int(V v) {
  constexpr V high = static_cast<V>(sizeof(S) == 8 ? 9223372036854775808.0 : 2147483648.0);
  if (v != v) return 0;
  if (v >= high) return sizeof(S) == 8 ? (S)9223372036854775807LL : (S)2147483647;
  if (v <= -high) return sizeof(S) == 8 ? (S)(-9223372036854775807LL - 1) : (S)(-2147483647 - 1);
  return static_cast<S>(v);
}

/* Stores `v` (any arithmetic type) at byte address `p` as `Tag`. Float to integer conversions
 * truncate toward zero, saturate at the range and take NaN to 0. */
template <ct_pl_type Tag, class V>
__device__ __forceinline__ void ct_cu_store(char* p, V v) {
  using S = typename ct_cu_traits<Tag>::storage;
  if constexpr (Tag == CT_PL_B8) {
    *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v != V(0));
  } else if constexpr (Tag == CT_PL_F16) {
    if constexpr (std::is_same_v<V, float>) {
      *reinterpret_cast<__half*>(p) = __float2half_rn(v);
    } else {
      *reinterpret_cast<__half*>(p) = __double2half(static_cast<double>(v));
    }
  } else if constexpr (std::is_floating_point_v<V> && std::is_integral_v<S>) {
    *reinterpret_cast<S*>(p) = ct_cu_float_to_int<S>(v);
  } else {
    *reinterpret_cast<S*>(p) = static_cast<S>(v);
  }
}

/* Whether a tag computes as a float. */
template <ct_pl_type Tag>
inline constexpr bool ct_cu_is_float_v = Tag == CT_PL_F16 || Tag == CT_PL_F32 || Tag == CT_PL_F64;

/* Tag lists that families register their kernels for. */
template <ct_pl_type... Tags>
struct ct_cu_tags {};
using ct_cu_all_tags = ct_cu_tags<CT_PL_B8, CT_PL_I32, CT_PL_I64, CT_PL_F16, CT_PL_F32, CT_PL_F64>;
using ct_cu_float_tags = ct_cu_tags<CT_PL_F16, CT_PL_F32, CT_PL_F64>;
using ct_cu_int_tags = ct_cu_tags<CT_PL_I32, CT_PL_I64>;

/* Calls add(std::integral_constant<ct_pl_type, Tag>{}) for each tag in order (the callee reads
 * decltype(tag)::value) until one returns a status other than CT_OK, and returns that. */
template <class Add, ct_pl_type... Tags>
int ct_cu_for_each_tag(ct_cu_tags<Tags...>, Add add) {
  int status = CT_OK;
  ((status = status == CT_OK ? add(std::integral_constant<ct_pl_type, Tags>{}) : status), ...);
  return status;
}

#endif /* CTENSOR_CU_TYPES_CUH_ */
