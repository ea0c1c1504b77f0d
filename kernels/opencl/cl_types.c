/* cl_types.c - dtype tags and kernel registration for the OpenCL device. */
#include "cl_types.h"

const ct_cl_type_info ct_cl_types[CT_CL_TYPE_COUNT] = {
    {"b8", "int", "uint", 1, {CT_DTYPE_BOOL, 8, 1}, false},
    {"i32", "int", "uint", 4, {CT_DTYPE_INT, 32, 1}, false},
    {"i64", "long", "ulong", 8, {CT_DTYPE_INT, 64, 1}, false},
    {"f16", "float", "uint", 2, {CT_DTYPE_FLOAT, 16, 1}, true},
    {"f32", "float", "uint", 4, {CT_DTYPE_FLOAT, 32, 1}, true},
    {"f64", "double", "ulong", 8, {CT_DTYPE_FLOAT, 64, 1}, true},
};

int ct_cl_type_of(ct_dtype dtype) {
  for (int i = 0; i < CT_CL_TYPE_COUNT; ++i) {
    const ct_dtype t = ct_cl_types[i].dtype;
    if (t.code == dtype.code && t.bits == dtype.bits && dtype.lanes == 1) return i;
  }
  return -1;
}

bool ct_cl_all_devices_fp64(void) {
  for (int32_t i = 0; i < ct_cl_device_count(); ++i) {
    if (!ct_cl_device_at(i)->has_fp64) return false;
  }
  return true;
}

int ct_cl_register(const char* op, const ct_cl_type* signature, int32_t length,
                   ct_kernel_run_fn run, ct_kernel_workspace_fn workspace,
                   const void* kernel_data) {
  ct_dtype dtypes[8];
  for (int32_t i = 0; i < length; ++i) {
    if (signature[i] == CT_CL_F64 && !ct_cl_all_devices_fp64()) return CT_OK;
    dtypes[i] = ct_cl_types[signature[i]].dtype;
  }
  const ct_kernel_def def = {sizeof(ct_kernel_def),
                             op,
                             CT_CL_BACKEND_NAME,
                             CT_DEVICE_OPENCL,
                             length,
                             dtypes,
                             run,
                             workspace,
                             (void*)kernel_data};
  return ct_cl_host->kernel_register(&def);
}
