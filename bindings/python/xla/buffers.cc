// XLA buffers as ctensor views, and ctensor statuses as XLA errors.

#include <cstring>
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

ffi::Error ReadIntOperand(const ffi::AnyBuffer& buffer, ct_device device, void* stream,
                          std::string_view name, int64_t* value) {
  ct_dtype dtype{};
  bool integer = DtypeOf(buffer.element_type(), &dtype) &&
                 (dtype.code == CT_DTYPE_INT || dtype.code == CT_DTYPE_UINT);
  if (!integer || buffer.element_count() != 1) {
    return ffi::Error(
        ffi::ErrorCode::kInvalidArgument,
        "ctensor: the operand of attribute '" + std::string(name) + "' must be one integer");
  }
  unsigned char bytes[8] = {};
  const size_t size = dtype.bits / 8;
  if (device.device_type == CT_DEVICE_CPU) {
    std::memcpy(bytes, buffer.untyped_data(), size);
  } else {
    int status = ct_device_copy_to_host(device, bytes, buffer.untyped_data(), 0, size, stream);
    if (status != CT_OK) return ErrorOf(status);
  }
  const bool is_signed = dtype.code == CT_DTYPE_INT;
  switch (size) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, bytes, 1);
      *value = is_signed ? static_cast<int64_t>(static_cast<int8_t>(v)) : static_cast<int64_t>(v);
      break;
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, bytes, 2);
      *value = is_signed ? static_cast<int64_t>(static_cast<int16_t>(v)) : static_cast<int64_t>(v);
      break;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, bytes, 4);
      *value = is_signed ? static_cast<int64_t>(static_cast<int32_t>(v)) : static_cast<int64_t>(v);
      break;
    }
    default:
      std::memcpy(value, bytes, 8);  // int64 or uint64: the bits as they are
      break;
  }
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
