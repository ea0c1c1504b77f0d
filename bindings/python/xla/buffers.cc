// XLA buffers as ctensor views, and ctensor statuses as XLA errors.

#include <string>

#include "ctensor_xla.h"

namespace ffi = xla::ffi;

namespace ctensor_xla {

namespace {

// XLA's element types that ctensor computes on, as DLPack (code, bits).
bool DtypeOf(ffi::DataType type, ct_dtype* dtype) {
  switch (type) {
    case ffi::DataType::PRED:
      *dtype = {CT_DTYPE_BOOL, 8, 1};
      return true;
    case ffi::DataType::S8:
      *dtype = {CT_DTYPE_INT, 8, 1};
      return true;
    case ffi::DataType::S16:
      *dtype = {CT_DTYPE_INT, 16, 1};
      return true;
    case ffi::DataType::S32:
      *dtype = {CT_DTYPE_INT, 32, 1};
      return true;
    case ffi::DataType::S64:
      *dtype = {CT_DTYPE_INT, 64, 1};
      return true;
    case ffi::DataType::U8:
      *dtype = {CT_DTYPE_UINT, 8, 1};
      return true;
    case ffi::DataType::U16:
      *dtype = {CT_DTYPE_UINT, 16, 1};
      return true;
    case ffi::DataType::U32:
      *dtype = {CT_DTYPE_UINT, 32, 1};
      return true;
    case ffi::DataType::U64:
      *dtype = {CT_DTYPE_UINT, 64, 1};
      return true;
    case ffi::DataType::F16:
      *dtype = {CT_DTYPE_FLOAT, 16, 1};
      return true;
    case ffi::DataType::F32:
      *dtype = {CT_DTYPE_FLOAT, 32, 1};
      return true;
    case ffi::DataType::F64:
      *dtype = {CT_DTYPE_FLOAT, 64, 1};
      return true;
    case ffi::DataType::BF16:
      *dtype = {CT_DTYPE_BFLOAT, 16, 1};
      return true;
    case ffi::DataType::C64:
      *dtype = {CT_DTYPE_COMPLEX, 64, 1};
      return true;
    case ffi::DataType::C128:
      *dtype = {CT_DTYPE_COMPLEX, 128, 1};
      return true;
    default:
      return false;
  }
}

}  // namespace

ffi::Error ViewOf(const ffi::AnyBuffer& buffer, ct_device device, ct_tensor* view) {
  if (!DtypeOf(buffer.element_type(), &view->dtype)) {
    return ffi::Error(ffi::ErrorCode::kUnimplemented,
                      "ctensor: XLA element type " +
                          std::to_string(static_cast<int>(buffer.element_type())) +
                          " has no ctensor dtype");
  }
  ffi::AnyBuffer::Dimensions dims = buffer.dimensions();
  view->data = buffer.untyped_data();
  view->device = device;
  view->ndim = static_cast<int32_t>(dims.size());
  // ctensor only reads the extents; XLA's dims stay valid for the whole call.
  view->shape = const_cast<int64_t*>(dims.begin());
  view->strides = nullptr;  // ffi_call asks for XLA's default layout: compact row-major
  view->byte_offset = 0;
  return ffi::Error::Success();
}

ffi::Error ErrorOf(int status) {
  ffi::ErrorCode code = ffi::ErrorCode::kInvalidArgument;
  if (status == CT_ERROR_OUT_OF_MEMORY) {
    code = ffi::ErrorCode::kResourceExhausted;
  } else if (status == CT_ERROR_UNSUPPORTED_DTYPE || status == CT_ERROR_UNSUPPORTED_DEVICE) {
    code = ffi::ErrorCode::kUnimplemented;
  }
  std::string message = ct_last_error();  // read before any other ctensor call replaces it
  return ffi::Error(code, std::string(ct_status_name(status)) + ": " + message);
}

}  // namespace ctensor_xla
