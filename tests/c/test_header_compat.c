/*
 * test_header_compat.c - <ctensor.h> in C99, alone and next to DLPack's own header.
 *
 * tests/test_c_api.py compiles this file (with -std=c99 -pedantic -Wall -Wextra -Werror) in
 * three ways:
 *
 *   (no macro)              <ctensor.h> alone: ctensor's own DLPack-compatible declarations.
 *   CT_TEST_DLPACK_FIRST    <dlpack/dlpack.h> before <ctensor.h>: ct_tensor, ct_device and
 *                           ct_dtype ARE DLTensor, DLDevice and DLDataType, so a DLTensor* goes
 *                           straight into ct_op_run (checked at compile time: -Werror turns an
 *                           incompatible pointer into an error).
 *   CT_TEST_DLPACK_AFTER    <ctensor.h> before <dlpack/dlpack.h>: two sets of types that must
 *                           agree field by field (checked at compile time against the real
 *                           DLPack header).
 *
 * The DLPack header comes from PyTorch's include directory; it is never copied into this tree.
 * Then the program runs `exp` on a tensor described the way that mode allows.
 */
#if defined(CT_TEST_DLPACK_FIRST)
#include <dlpack/dlpack.h>
#include <ctensor.h>
#elif defined(CT_TEST_DLPACK_AFTER)
#include <ctensor.h>
#include <dlpack/dlpack.h>
#else
#include <ctensor.h>
#endif

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* C99 has no _Static_assert: a negative array size stops the build. */
#define CT_STATIC_ASSERT(cond, name) typedef char ct_static_assert_##name[(cond) ? 1 : -1]

/* Layout facts that hold in every mode (64-bit table for DLTensor). */
CT_STATIC_ASSERT(sizeof(ct_device) == 8, device_size);
CT_STATIC_ASSERT(offsetof(ct_device, device_id) == 4, device_id_offset);
CT_STATIC_ASSERT(sizeof(ct_dtype) == 4, dtype_size);
CT_STATIC_ASSERT(offsetof(ct_dtype, bits) == 1, dtype_bits_offset);
CT_STATIC_ASSERT(offsetof(ct_dtype, lanes) == 2, dtype_lanes_offset);
#if UINTPTR_MAX == 0xffffffffffffffffu
CT_STATIC_ASSERT(sizeof(ct_tensor) == 48, tensor_size);
CT_STATIC_ASSERT(offsetof(ct_tensor, data) == 0, tensor_data);
CT_STATIC_ASSERT(offsetof(ct_tensor, device) == 8, tensor_device);
CT_STATIC_ASSERT(offsetof(ct_tensor, ndim) == 16, tensor_ndim);
CT_STATIC_ASSERT(offsetof(ct_tensor, dtype) == 20, tensor_dtype);
CT_STATIC_ASSERT(offsetof(ct_tensor, shape) == 24, tensor_shape);
CT_STATIC_ASSERT(offsetof(ct_tensor, strides) == 32, tensor_strides);
CT_STATIC_ASSERT(offsetof(ct_tensor, byte_offset) == 40, tensor_byte_offset);
#endif

#if defined(CT_TEST_DLPACK_FIRST) || defined(CT_TEST_DLPACK_AFTER)
/* DLPack's codes are ctensor's codes (compared as ints: they are different enum types). */
#define CT_SAME(a, b) ((int)(a) == (int)(b))
CT_STATIC_ASSERT(CT_SAME(kDLCPU, CT_DEVICE_CPU) && CT_SAME(kDLCUDA, CT_DEVICE_CUDA) &&
                     CT_SAME(kDLCUDAHost, CT_DEVICE_CUDA_HOST) &&
                     CT_SAME(kDLOpenCL, CT_DEVICE_OPENCL) && CT_SAME(kDLVulkan, CT_DEVICE_VULKAN) &&
                     CT_SAME(kDLMetal, CT_DEVICE_METAL) && CT_SAME(kDLVPI, CT_DEVICE_VPI) &&
                     CT_SAME(kDLROCM, CT_DEVICE_ROCM) &&
                     CT_SAME(kDLROCMHost, CT_DEVICE_ROCM_HOST) &&
                     CT_SAME(kDLExtDev, CT_DEVICE_EXT_DEV) &&
                     CT_SAME(kDLCUDAManaged, CT_DEVICE_CUDA_MANAGED) &&
                     CT_SAME(kDLOneAPI, CT_DEVICE_ONEAPI) && CT_SAME(kDLWebGPU, CT_DEVICE_WEBGPU) &&
                     CT_SAME(kDLHexagon, CT_DEVICE_HEXAGON),
                 device_codes);
CT_STATIC_ASSERT(CT_SAME(kDLInt, CT_DTYPE_INT) && CT_SAME(kDLUInt, CT_DTYPE_UINT) &&
                     CT_SAME(kDLFloat, CT_DTYPE_FLOAT) &&
                     CT_SAME(kDLOpaqueHandle, CT_DTYPE_OPAQUE_HANDLE) &&
                     CT_SAME(kDLBfloat, CT_DTYPE_BFLOAT) && CT_SAME(kDLComplex, CT_DTYPE_COMPLEX) &&
                     CT_SAME(kDLBool, CT_DTYPE_BOOL),
                 dtype_codes);
#endif

#if defined(CT_TEST_DLPACK_FIRST)
/* The same types, not look-alikes: these initialisations only compile without a diagnostic if
 * the pointer types are compatible. */
static DLTensor* const ct_same_tensor_type = (ct_tensor*)0;
static DLDevice* const ct_same_device_type = (ct_device*)0;
static DLDataType* const ct_same_dtype_type = (ct_dtype*)0;
#endif

#if defined(CT_TEST_DLPACK_AFTER)
/* Distinct types with the same layout, field by field. */
CT_STATIC_ASSERT(sizeof(ct_tensor) == sizeof(DLTensor), dl_tensor_size);
CT_STATIC_ASSERT(offsetof(ct_tensor, data) == offsetof(DLTensor, data), dl_data);
CT_STATIC_ASSERT(offsetof(ct_tensor, device) == offsetof(DLTensor, device), dl_device);
CT_STATIC_ASSERT(offsetof(ct_tensor, ndim) == offsetof(DLTensor, ndim), dl_ndim);
CT_STATIC_ASSERT(offsetof(ct_tensor, dtype) == offsetof(DLTensor, dtype), dl_dtype);
CT_STATIC_ASSERT(offsetof(ct_tensor, shape) == offsetof(DLTensor, shape), dl_shape);
CT_STATIC_ASSERT(offsetof(ct_tensor, strides) == offsetof(DLTensor, strides), dl_strides);
CT_STATIC_ASSERT(offsetof(ct_tensor, byte_offset) == offsetof(DLTensor, byte_offset),
                 dl_byte_offset);
CT_STATIC_ASSERT(sizeof(((ct_tensor*)0)->byte_offset) == sizeof(((DLTensor*)0)->byte_offset),
                 dl_byte_offset_size);
CT_STATIC_ASSERT(sizeof(ct_device) == sizeof(DLDevice), dl_device_size);
CT_STATIC_ASSERT(offsetof(ct_device, device_id) == offsetof(DLDevice, device_id), dl_device_id);
CT_STATIC_ASSERT(sizeof(((ct_device*)0)->device_type) == sizeof(((DLDevice*)0)->device_type),
                 dl_device_type_size);
CT_STATIC_ASSERT(sizeof(ct_dtype) == sizeof(DLDataType), dl_dtype_size);
CT_STATIC_ASSERT(offsetof(ct_dtype, bits) == offsetof(DLDataType, bits), dl_bits);
CT_STATIC_ASSERT(offsetof(ct_dtype, lanes) == offsetof(DLDataType, lanes), dl_lanes);
#endif

static int failures = 0;

static void check(int cond, const char* what) {
  printf("%s - %s\n", cond ? "ok" : "not ok", what);
  if (!cond) ++failures;
}

int main(void) {
  const ct_op* exp_op = NULL;
  float x[4] = {0.0f, 1.0f, -1.0f, 2.0f};
  float y[4] = {0, 0, 0, 0};
  int64_t shape[1] = {4};
  int status;
  int i, close = 1;

#if defined(CT_TEST_DLPACK_FIRST)
  const char* mode = "DLPack first: a DLTensor* passed as is";
  /* A framework's own DLTensor, described with DLPack's names only. */
  DLTensor in, out;
  const DLTensor* inputs[1];
  const DLTensor* outputs[1];
  (void)ct_same_tensor_type;
  (void)ct_same_device_type;
  (void)ct_same_dtype_type;
  memset(&in, 0, sizeof in);
  in.data = x;
  in.device.device_type = kDLCPU;
  in.device.device_id = 0;
  in.ndim = 1;
  in.dtype.code = kDLFloat;
  in.dtype.bits = 32;
  in.dtype.lanes = 1;
  in.shape = shape;
  in.strides = NULL;
  in.byte_offset = 0;
  out = in;
  out.data = y;
#elif defined(CT_TEST_DLPACK_AFTER)
  const char* mode = "ctensor first, DLPack after: a DLTensor* cast to ct_tensor*";
  DLTensor dl_in, dl_out;
  const ct_tensor* inputs[1];
  const ct_tensor* outputs[1];
  memset(&dl_in, 0, sizeof dl_in);
  dl_in.data = x;
  dl_in.device.device_type = kDLCPU;
  dl_in.ndim = 1;
  dl_in.dtype.code = kDLFloat;
  dl_in.dtype.bits = 32;
  dl_in.dtype.lanes = 1;
  dl_in.shape = shape;
  dl_out = dl_in;
  dl_out.data = y;
#else
  const char* mode = "ctensor.h alone";
  ct_tensor in, out;
  const ct_tensor* inputs[1];
  const ct_tensor* outputs[1];
  memset(&in, 0, sizeof in);
  in.data = x;
  in.device.device_type = CT_DEVICE_CPU;
  in.ndim = 1;
  in.dtype.code = CT_DTYPE_FLOAT;
  in.dtype.bits = 32;
  in.dtype.lanes = 1;
  in.shape = shape;
  out = in;
  out.data = y;
#endif

#if defined(CT_TEST_DLPACK_AFTER)
  inputs[0] = (const ct_tensor*)&dl_in;
  outputs[0] = (const ct_tensor*)&dl_out;
#else
  inputs[0] = &in;
  outputs[0] = &out;
#endif

  printf("# %s\n", mode);
  check((ct_abi_version() >> 16) == CT_ABI_VERSION_MAJOR, "ABI major version of the library");
  status = ct_op_find("exp", &exp_op);
  check(status == CT_OK && exp_op != NULL, "ct_op_find(\"exp\")");
  status = ct_op_run(exp_op, inputs, 1, outputs, 1, NULL, 0, NULL);
  if (status != CT_OK) printf("# %s: %s\n", ct_status_name(status), ct_last_error());
  check(status == CT_OK, "ct_op_run(exp) on the tensor as this mode describes it");
  for (i = 0; i < 4; ++i) {
    const double want = exp((double)x[i]);
    if (fabs((double)y[i] - want) > 2e-6 * want) close = 0;
  }
  check(close, "exp values");
  check(x[0] == 0.0f && x[1] == 1.0f && x[2] == -1.0f && x[3] == 2.0f, "input untouched");
  if (failures) {
    printf("# %d check(s) failed\n", failures);
    return 1;
  }
  return 0;
}
