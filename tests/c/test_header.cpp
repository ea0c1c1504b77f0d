// test_header.cpp - <ctensor.h> from C++: extern "C" linkage, layout, and a run.
//
// tests/test_c_api.py compiles it with g++ (-std=c++11 and -std=c++17, -Wall -Wextra -pedantic
// -Werror), once alone and once with -DCT_TEST_DLPACK_FIRST after <dlpack/dlpack.h>, links it
// against libctensor and runs it. Linking proves the declarations have C linkage.
#if defined(CT_TEST_DLPACK_FIRST)
#include <dlpack/dlpack.h>
#endif
#include <ctensor.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

static_assert(std::is_standard_layout<ct_tensor>::value, "ct_tensor is standard layout");
static_assert(std::is_trivially_copyable<ct_tensor>::value, "ct_tensor is trivially copyable");
static_assert(std::is_standard_layout<ct_context>::value, "ct_context is standard layout");
static_assert(std::is_standard_layout<ct_attr>::value, "ct_attr is standard layout");
static_assert(sizeof(ct_device) == 8 && sizeof(ct_dtype) == 4, "DLDevice / DLDataType sizes");
static_assert(sizeof(void*) != 8 || sizeof(ct_tensor) == 48, "DLTensor is 48 bytes on 64-bit");
static_assert(sizeof(void*) != 8 || offsetof(ct_tensor, byte_offset) == 40, "byte_offset@40");
static_assert(CT_ABI_VERSION_MAJOR >= 1, "ABI version macros are usable in constant expressions");
static_assert(CT_ERROR_WRONG_ARITY < 0 && CT_OK == 0, "status values are constants");
#if defined(CT_TEST_DLPACK_FIRST)
static_assert(std::is_same<ct_tensor, DLTensor>::value, "ct_tensor is DLTensor");
static_assert(std::is_same<ct_device, DLDevice>::value, "ct_device is DLDevice");
static_assert(std::is_same<ct_dtype, DLDataType>::value, "ct_dtype is DLDataType");
#endif

namespace {

int failures = 0;

void check(bool cond, const std::string& what) {
  std::printf("%s - %s\n", cond ? "ok" : "not ok", what.c_str());
  if (!cond) ++failures;
}

// A C-linkage callback type can be filled from C++ code.
extern "C" int never_called_allocate(void*, int32_t, const ct_tensor_info*, int32_t, int32_t,
                                     void** data) {
  *data = nullptr;
  return CT_ERROR_OUT_OF_MEMORY;
}

}  // namespace

int main() {
  check((ct_abi_version() >> 16) == CT_ABI_VERSION_MAJOR, "ABI major version of the library");

  const ct_op* exp_op = nullptr;
  check(ct_op_find("exp", &exp_op) == CT_OK && exp_op != nullptr, "ct_op_find(\"exp\")");
  const ct_op_schema* schema = nullptr;
  check(ct_op_get_schema(exp_op, &schema) == CT_OK && std::string(schema->name) == "exp",
        "ct_op_get_schema(exp)");

  std::vector<float> x = {0.0f, 0.5f, -1.0f, 3.0f};
  std::vector<float> y(x.size(), 0.0f);
  std::vector<int64_t> shape = {static_cast<int64_t>(x.size())};

  ct_tensor in;
  std::memset(&in, 0, sizeof in);
  in.data = x.data();
#if defined(CT_TEST_DLPACK_FIRST)
  in.device.device_type = kDLCPU;  // DLPack's enum type: C++ needs DLPack's own constants
  in.dtype.code = kDLFloat;
#else
  in.device.device_type = CT_DEVICE_CPU;
  in.dtype.code = CT_DTYPE_FLOAT;
#endif
  in.device.device_id = 0;
  in.ndim = 1;
  in.dtype.bits = 32;
  in.dtype.lanes = 1;
  in.shape = shape.data();
  in.strides = nullptr;
  in.byte_offset = 0;
  ct_tensor out = in;
  out.data = y.data();

  const ct_tensor* inputs[] = {&in};
  const ct_tensor* outputs[] = {&out};
  ct_tensor_info info[1];
  int32_t n = 0;
  check(ct_op_infer(exp_op, inputs, 1, nullptr, 0, info, 1, &n) == CT_OK && n == 1 &&
            info[0].ndim == 1 && info[0].shape[0] == 4,
        "ct_op_infer(exp)");

  ct_allocator allocator;
  std::memset(&allocator, 0, sizeof allocator);
  allocator.struct_size = sizeof allocator;
  allocator.allocate = never_called_allocate;
  ct_context context;
  std::memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;
  context.allocator = &allocator;  // ignored by a shape-static op
  const int status = ct_op_run(exp_op, inputs, 1, outputs, 1, nullptr, 0, &context);
  if (status != CT_OK) std::printf("# %s: %s\n", ct_status_name(status), ct_last_error());
  check(status == CT_OK, "ct_op_run(exp) with a context");
  bool close = true;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    close = close && std::fabs(y[i] - want) <= 2e-6 * want;
  }
  check(close, "exp values");

  // Attributes are plain aggregates in C++ too; exp has none, so this one is refused.
  ct_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.name = "alpha";
  attr.value.type = CT_ATTR_FLOAT;
  attr.value.value.f = 1.0;
  const int bad = ct_op_run(exp_op, inputs, 1, outputs, 1, &attr, 1, nullptr);
  check(bad == CT_ERROR_UNKNOWN_ATTRIBUTE &&
            std::string(ct_last_error()).find("alpha") != std::string::npos,
        std::string("unknown attribute -> ") + ct_status_name(bad));

  if (failures) {
    std::printf("# %d check(s) failed\n", failures);
    return 1;
  }
  return 0;
}
