/* cpu_isa.c - detection of the CPU's instruction-set level (see cpu_isa.h). */
#include "engine/cpu_isa.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_int ct_cpu_isa_cached = -1;

static ct_cpu_isa_level ct_cpu_isa_supported(void) {
#if defined(__GNUC__) && defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
      !__builtin_cpu_supports("f16c")) {
    return CT_CPU_ISA_GENERIC;
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return CT_CPU_ISA_AVX512;
  }
  return CT_CPU_ISA_AVX2;
#else
  return CT_CPU_ISA_GENERIC;
#endif
}

static ct_cpu_isa_level ct_cpu_isa_detect(void) {
  ct_cpu_isa_level level = ct_cpu_isa_supported();
  const char* request = getenv("CTENSOR_CPU_ISA");
  if (request) {
    ct_cpu_isa_level wanted = level;
    if (strcmp(request, "generic") == 0) wanted = CT_CPU_ISA_GENERIC;
    if (strcmp(request, "avx2") == 0) wanted = CT_CPU_ISA_AVX2;
    if (strcmp(request, "avx512") == 0) wanted = CT_CPU_ISA_AVX512;
    if (wanted < level) level = wanted;
  }
  return level;
}

ct_cpu_isa_level ct_cpu_isa(void) {
  int level = atomic_load_explicit(&ct_cpu_isa_cached, memory_order_relaxed);
  if (level < 0) {
    level = (int)ct_cpu_isa_detect(); /* idempotent: racing threads store the same value */
    atomic_store_explicit(&ct_cpu_isa_cached, level, memory_order_relaxed);
  }
  return (ct_cpu_isa_level)level;
}

const char* ct_cpu_isa_name(ct_cpu_isa_level level) {
  switch (level) {
    case CT_CPU_ISA_AVX512:
      return "avx512";
    case CT_CPU_ISA_AVX2:
      return "avx2";
    default:
      return "generic";
  }
}
