// ctensor's XLA FFI handler (internal header): one custom-call target, "ctensor_op", runs any
// ctensor operator on the buffers XLA gives. ctensor.jax (bindings/python/ctensor/jax) emits the
// calls and registers the target; docs/jax.md describes the whole path.
//
// The handler is written against XLA's FFI headers as jaxlib ships them (jax.ffi.include_dir()),
// which are header-only: nothing is linked from jaxlib. XLA's FFI ABI is versioned
// (XLA_FFI_API_MAJOR.XLA_FFI_API_MINOR, read back by ctensor_xla_api_version): XLA checks the
// version and struct sizes a handler was compiled with on every call and fails the call (an
// error, never a crash) when they do not fit the running jaxlib, e.g. a handler built against
// headers of a newer major version than the runtime supports. Rebuild ctensor against the
// installed jaxlib to clear it.

#ifndef CTENSOR_XLA_H_
#define CTENSOR_XLA_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctensor.h"
#include "xla/ffi/api/ffi.h"

namespace ctensor_xla {

// Names of the FFI attributes the Python side adds to every call, besides the operator's own
// attributes (which keep their ctensor names).
inline constexpr const char* kOpAttribute = "__op";          // the operator name (string)
inline constexpr const char* kAbsentAttribute = "__absent";  // bit i: optional input i absent

// What one instance of the custom call needs, made once when XLA instantiates the executable
// (instantiate stage): the operator and its attributes as ct_attr values, with the memory they
// point to. Execute only fills data pointers and runs.
struct CallState {
  static xla::ffi::TypeId id;

  const ct_op* op = nullptr;
  int32_t category = CT_OP_SHAPE_STATIC;
  uint64_t absent = 0;  // bit i set: fixed input slot i is an absent optional input
  // Set once XLA's scratch allocator failed on the CPU: workspace then comes from host memory.
  std::atomic<bool> host_workspace{false};
  std::vector<ct_attr> attrs;
  // Storage the entries of `attrs` point into (names, strings and lists), kept as separately
  // allocated blocks so that their addresses never move.
  std::vector<std::unique_ptr<char[]>> strings;
  std::vector<std::unique_ptr<int64_t[]>> int_lists;
  std::vector<std::unique_ptr<double[]>> float_lists;
};

// Fills `state` from the call's FFI attributes (see attrs.cc for the encoding).
xla::ffi::Error DecodeAttributes(const xla::ffi::Dictionary& attributes, CallState* state);

// Points `view` at an XLA buffer: its data, dimensions (row-major, as XLA's default layout) and
// dtype; fails for an XLA element type ctensor has no dtype for.
xla::ffi::Error ViewOf(const xla::ffi::AnyBuffer& buffer, ct_device device, ct_tensor* view);

// The error XLA reports for a failed ctensor call: the status name and ctensor's message.
xla::ffi::Error ErrorOf(int status);

}  // namespace ctensor_xla

#endif  // CTENSOR_XLA_H_
