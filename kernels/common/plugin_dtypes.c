/* plugin_dtypes.c - dtype tags and kernel registration by tag for the device plugins. */
#include "plugin_dtypes.h"

static const struct {
  ct_dtype dtype;
  int32_t size;
  bool is_float;
} ct_pl_types[CT_PL_TYPE_COUNT] = {
    {{CT_DTYPE_BOOL, 8, 1}, 1, false},  {{CT_DTYPE_INT, 32, 1}, 4, false},
    {{CT_DTYPE_INT, 64, 1}, 8, false},  {{CT_DTYPE_FLOAT, 16, 1}, 2, true},
    {{CT_DTYPE_FLOAT, 32, 1}, 4, true}, {{CT_DTYPE_FLOAT, 64, 1}, 8, true},
};

ct_dtype ct_pl_dtype(ct_pl_type type) {
  return ct_pl_types[type].dtype;
}

int32_t ct_pl_type_size(ct_pl_type type) {
  return ct_pl_types[type].size;
}

bool ct_pl_type_is_float(ct_pl_type type) {
  return ct_pl_types[type].is_float;
}

int ct_pl_type_of(ct_dtype dtype) {
  for (int i = 0; i < CT_PL_TYPE_COUNT; ++i) {
    const ct_dtype t = ct_pl_types[i].dtype;
    if (t.code == dtype.code && t.bits == dtype.bits && dtype.lanes == 1) return i;
  }
  return -1;
}

int ct_pl_register(const ct_host_api* host, const char* backend, int32_t device_type,
                   const char* op, const ct_pl_type* signature, int32_t length,
                   ct_kernel_run_fn run, ct_kernel_workspace_fn workspace,
                   const void* kernel_data) {
  ct_dtype dtypes[16];
  if (length > 16) return host->set_error(CT_ERROR_INVALID_ARGUMENT, "%s: signature too long", op);
  for (int32_t i = 0; i < length; ++i) dtypes[i] = ct_pl_types[signature[i]].dtype;
  const ct_kernel_def def = {
      sizeof(ct_kernel_def), op, backend, device_type, length, dtypes, run, workspace,
      (void*)kernel_data};
  return host->kernel_register(&def);
}
