/* dtype.c - the dtypes ctensor knows: ids, names, sizes, kinds. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct ct_dtype_entry {
  const char* name;
  ct_dtype dtype;
} ct_dtype_entry;

/* Indexed by ct_dtype_id. */
static const ct_dtype_entry ct_dtype_table[CT_DT_COUNT] = {
    [CT_DT_BOOL] = {"bool", {CT_DTYPE_BOOL, 8, 1}},
    [CT_DT_I8] = {"int8", {CT_DTYPE_INT, 8, 1}},
    [CT_DT_U8] = {"uint8", {CT_DTYPE_UINT, 8, 1}},
    [CT_DT_I16] = {"int16", {CT_DTYPE_INT, 16, 1}},
    [CT_DT_U16] = {"uint16", {CT_DTYPE_UINT, 16, 1}},
    [CT_DT_I32] = {"int32", {CT_DTYPE_INT, 32, 1}},
    [CT_DT_U32] = {"uint32", {CT_DTYPE_UINT, 32, 1}},
    [CT_DT_I64] = {"int64", {CT_DTYPE_INT, 64, 1}},
    [CT_DT_U64] = {"uint64", {CT_DTYPE_UINT, 64, 1}},
    [CT_DT_F16] = {"float16", {CT_DTYPE_FLOAT, 16, 1}},
    [CT_DT_BF16] = {"bfloat16", {CT_DTYPE_BFLOAT, 16, 1}},
    [CT_DT_F32] = {"float32", {CT_DTYPE_FLOAT, 32, 1}},
    [CT_DT_F64] = {"float64", {CT_DTYPE_FLOAT, 64, 1}},
    [CT_DT_C64] = {"complex64", {CT_DTYPE_COMPLEX, 64, 1}},
    [CT_DT_C128] = {"complex128", {CT_DTYPE_COMPLEX, 128, 1}},
};

bool ct_dtype_equal(ct_dtype a, ct_dtype b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

ct_dtype_id ct_dtype_to_id(ct_dtype dtype) {
  for (int i = 0; i < CT_DT_COUNT; ++i) {
    if (ct_dtype_equal(ct_dtype_table[i].dtype, dtype)) return (ct_dtype_id)i;
  }
  return CT_DT_INVALID;
}

ct_dtype ct_dtype_from_id(ct_dtype_id id) {
  return ct_dtype_table[id].dtype;
}

int64_t ct_dtype_size(ct_dtype dtype) {
  return ((int64_t)dtype.bits * dtype.lanes + 7) / 8;
}

bool ct_dtype_is_float(ct_dtype dtype) {
  return dtype.lanes == 1 && (dtype.code == CT_DTYPE_FLOAT || dtype.code == CT_DTYPE_BFLOAT);
}

bool ct_dtype_is_integer(ct_dtype dtype) {
  return dtype.lanes == 1 && (dtype.code == CT_DTYPE_INT || dtype.code == CT_DTYPE_UINT);
}

bool ct_dtype_is_signed_integer(ct_dtype dtype) {
  return dtype.lanes == 1 && dtype.code == CT_DTYPE_INT;
}

bool ct_dtype_is_bool(ct_dtype dtype) {
  return dtype.lanes == 1 && dtype.code == CT_DTYPE_BOOL;
}

bool ct_dtype_is_complex(ct_dtype dtype) {
  return dtype.lanes == 1 && dtype.code == CT_DTYPE_COMPLEX &&
         (dtype.bits == 64 || dtype.bits == 128);
}

ct_dtype ct_dtype_real_part(ct_dtype dtype) {
  if (!ct_dtype_is_complex(dtype)) return dtype;
  return (ct_dtype){CT_DTYPE_FLOAT, (uint8_t)(dtype.bits / 2), 1};
}

const char* ct_dtype_name(ct_dtype dtype) {
  ct_dtype_id id = ct_dtype_to_id(dtype);
  return id == CT_DT_INVALID ? NULL : ct_dtype_table[id].name;
}

const char* ct_dtype_describe(ct_dtype dtype) {
  static _Thread_local char buffer[64];
  const char* name = ct_dtype_name(dtype);
  if (name) return name;
  snprintf(buffer, sizeof buffer, "<dtype code %u bits %u lanes %u>", dtype.code, dtype.bits,
           dtype.lanes);
  return buffer;
}

int ct_dtype_from_name(const char* name, ct_dtype* dtype) {
  ct_clear_error();
  if (!name || !dtype)
    return ct_set_error(CT_ERROR_NULL_POINTER, "ct_dtype_from_name: NULL argument");
  for (int i = 0; i < CT_DT_COUNT; ++i) {
    if (strcmp(ct_dtype_table[i].name, name) == 0) {
      *dtype = ct_dtype_table[i].dtype;
      return CT_OK;
    }
  }
  return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE, "unknown dtype name '%s'", name);
}
