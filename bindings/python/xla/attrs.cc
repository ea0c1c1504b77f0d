// FFI attributes -> ct_attr values, read once per instance of a call.
//
// ctensor.jax (ctensor/jax/_call.py) encodes each attribute with an FFI type that says its
// ctensor type, so no schema lookup is needed here:
//   int64 scalar -> CT_ATTR_INT             float64 scalar -> CT_ATTR_FLOAT
//   bool scalar  -> CT_ATTR_BOOL            string         -> CT_ATTR_STRING
//   int64 array  -> CT_ATTR_INT_LIST        float64 array  -> CT_ATTR_FLOAT_LIST
//   uint8 array of two [code, bits]         -> CT_ATTR_DTYPE
//   uint8 array of none                     -> CT_ATTR_NONE
// plus "__op" (the operator name) and "__absent" (the absent optional inputs, a bit mask).

#include <cstring>
#include <string_view>

#include "ctensor_xla.h"

namespace ffi = xla::ffi;

namespace ctensor_xla {

namespace {

const char* Keep(CallState* state, std::string_view text) {
  auto copy = std::make_unique<char[]>(text.size() + 1);
  std::memcpy(copy.get(), text.data(), text.size());
  copy[text.size()] = '\0';
  state->strings.push_back(std::move(copy));
  return state->strings.back().get();
}

template <typename T>
const T* KeepList(std::vector<std::unique_ptr<T[]>>* store, ffi::Span<const T> values) {
  auto copy = std::make_unique<T[]>(values.size() > 0 ? values.size() : 1);
  for (size_t i = 0; i < values.size(); ++i) copy[i] = values[i];
  store->push_back(std::move(copy));
  return store->back().get();
}

ffi::Error Invalid(std::string message) {
  return ffi::Error(ffi::ErrorCode::kInvalidArgument, std::move(message));
}

// One attribute's value, by the FFI type it was encoded with. (The Dictionary reads attributes
// by name: its iterator-based accessors do not compile for spans and strings in these headers.)
ffi::Error DecodeValue(const ffi::Dictionary& attributes, std::string_view name, CallState* state,
                       ct_attr_value* value) {
  *value = ct_attr_value{};
  if (auto i = attributes.get<int64_t>(name); i.has_value()) {
    value->type = CT_ATTR_INT;
    value->value.i = *i;
  } else if (auto f = attributes.get<double>(name); f.has_value()) {
    value->type = CT_ATTR_FLOAT;
    value->value.f = *f;
  } else if (auto b = attributes.get<bool>(name); b.has_value()) {
    value->type = CT_ATTR_BOOL;
    value->value.b = *b ? 1 : 0;
  } else if (auto s = attributes.get<std::string_view>(name); s.has_value()) {
    value->type = CT_ATTR_STRING;
    value->value.s = Keep(state, *s);
  } else if (auto ints = attributes.get<ffi::Span<const int64_t>>(name); ints.has_value()) {
    value->type = CT_ATTR_INT_LIST;
    value->count = static_cast<int64_t>(ints->size());
    value->value.ints = KeepList(&state->int_lists, *ints);
  } else if (auto floats = attributes.get<ffi::Span<const double>>(name); floats.has_value()) {
    value->type = CT_ATTR_FLOAT_LIST;
    value->count = static_cast<int64_t>(floats->size());
    value->value.floats = KeepList(&state->float_lists, *floats);
  } else if (auto bytes = attributes.get<ffi::Span<const uint8_t>>(name); bytes.has_value()) {
    if (bytes->size() == 0) {
      value->type = CT_ATTR_NONE;
    } else if (bytes->size() == 2) {
      value->type = CT_ATTR_DTYPE;
      value->value.dtype = ct_dtype{(*bytes)[0], (*bytes)[1], 1};
    } else {
      return Invalid("ctensor: attribute '" + std::string(name) + "' has an unknown encoding");
    }
  } else {
    return Invalid("ctensor: attribute '" + std::string(name) + "' has an unsupported FFI type");
  }
  return ffi::Error::Success();
}

}  // namespace

ffi::Error DecodeAttributes(const ffi::Dictionary& attributes, CallState* state) {
  std::vector<std::string_view> names;
  std::vector<ct_attr_value> values;
  bool have_op = false;
  for (auto it = attributes.begin(); it != attributes.end(); ++it) {
    std::string_view name = *it;
    if (name == kOpAttribute) {
      ffi::ErrorOr<std::string_view> op_name = attributes.get<std::string_view>(name);
      if (!op_name.has_value()) return Invalid("ctensor: '__op' must be a string");
      std::string text(*op_name);
      int status = ct_op_find(text.c_str(), &state->op);
      if (status != CT_OK) return ErrorOf(status);
      const ct_op_schema* schema = nullptr;
      status = ct_op_get_schema(state->op, &schema);
      if (status != CT_OK) return ErrorOf(status);
      state->category = schema->category;
      have_op = true;
    } else if (name == kAbsentAttribute) {
      ffi::ErrorOr<int64_t> mask = attributes.get<int64_t>(name);
      if (!mask.has_value()) return Invalid("ctensor: '__absent' must be an int64");
      state->absent = static_cast<uint64_t>(*mask);
    } else {
      ct_attr_value value;
      ffi::Error error = DecodeValue(attributes, name, state, &value);
      if (error.failure()) return error;
      names.push_back(name);
      values.push_back(value);
    }
  }
  if (!have_op) return Invalid("ctensor: the call names no operator ('__op')");
  state->attrs.resize(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    state->attrs[i].name = Keep(state, names[i]);
    state->attrs[i].value = values[i];
  }
  return ffi::Error::Success();
}

}  // namespace ctensor_xla
