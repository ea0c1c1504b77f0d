/* cl_types.c - dtype tags and kernel registration for the OpenCL device. */
#include "cl_types.h"

const ct_cl_type_info ct_cl_types[CT_PL_TYPE_COUNT] = {
    {"b8", "int", "uint"},    {"i32", "int", "uint"},   {"i64", "long", "ulong"},
    {"f16", "float", "uint"}, {"f32", "float", "uint"}, {"f64", "double", "ulong"},
};

bool ct_cl_all_devices_fp64(void) {
  for (int32_t i = 0; i < ct_cl_device_count(); ++i) {
    if (!ct_cl_device_at(i)->has_fp64) return false;
  }
  return true;
}

int ct_cl_register(const char* op, const ct_pl_type* signature, int32_t length,
                   ct_kernel_run_fn run, ct_kernel_workspace_fn workspace,
                   const void* kernel_data) {
  for (int32_t i = 0; i < length; ++i) {
    if (signature[i] == CT_PL_F64 && !ct_cl_all_devices_fp64()) return CT_OK;
  }
  return ct_pl_register(ct_cl_host, CT_CL_BACKEND_NAME, CT_DEVICE_OPENCL, op, signature, length,
                        run, workspace, kernel_data);
}
