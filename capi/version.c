/* version.c - ABI and release version queries. */
#include "internal.h"

#ifndef CT_VERSION_STRING
#error "the build defines CT_VERSION_STRING"
#endif

uint32_t ct_abi_version(void) {
  return ((uint32_t)CT_ABI_VERSION_MAJOR << 16) | (uint32_t)CT_ABI_VERSION_MINOR;
}

const char* ct_version_string(void) {
  return CT_VERSION_STRING;
}
