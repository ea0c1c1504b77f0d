// The "ctensor_op" custom-call target: instantiate reads the operator and its attributes once
// per instance (CallState); execute points ctensor views at XLA's buffers, takes the workspace
// from XLA's scratch allocator, and runs ct_op_run on XLA's stream. Everything is exported as
// plain C symbols that ctensor.jax loads with ctypes and registers with jax.ffi.

#include <algorithm>
#include <cstdint>
#include <new>
#include <vector>

#include "ctensor_xla.h"

namespace ffi = xla::ffi;

namespace ctensor_xla {

ffi::TypeId CallState::id = {};

namespace {

// Most tensors of one call kept on the stack; a call with more (a long concat) uses the heap.
constexpr int kStackTensors = 16;
// Most attributes of one call copied on the stack when some come from operands.
constexpr size_t kStackAttrs = 16;

ffi::ErrorOr<std::unique_ptr<CallState>> Instantiate(ffi::Dictionary attributes) {
  auto state = std::make_unique<CallState>();
  ffi::Error error = DecodeAttributes(attributes, state.get());
  if (error.failure()) return ffi::Unexpected(error);
  return state;
}

// Views of the call's tensors: the stack for small calls, else the heap.
struct Views {
  explicit Views(size_t count) {
    if (count > kStackTensors) {
      heap_views.resize(count);
      heap_pointers.resize(count);
      views = heap_views.data();
      pointers = heap_pointers.data();
    }
  }
  ct_tensor stack_views[kStackTensors];
  const ct_tensor* stack_pointers[kStackTensors];
  std::vector<ct_tensor> heap_views;
  std::vector<const ct_tensor*> heap_pointers;
  ct_tensor* views = stack_views;
  const ct_tensor** pointers = stack_pointers;
};

// Host memory for the workspace where XLA's scratch allocator has none (XLA's CPU runtime
// gives no device allocator to FFI handlers): one grow-only block per thread, reused by every
// call the thread runs.
void* HostWorkspace(uint64_t bytes, uint64_t alignment) {
  thread_local std::unique_ptr<unsigned char[]> block;
  thread_local uint64_t capacity = 0;
  uint64_t needed = bytes + alignment;
  if (capacity < needed) {
    block.reset(new (std::nothrow) unsigned char[needed]);
    capacity = block ? needed : 0;
    if (!block) return nullptr;
  }
  uintptr_t address = reinterpret_cast<uintptr_t>(block.get());
  uintptr_t aligned = (address + alignment - 1) / alignment * alignment;
  return reinterpret_cast<void*>(aligned);
}

// The workspace of one run: from XLA's scratch allocator, or host memory on the CPU when XLA
// has none to give (remembered per instance, so the allocator is asked once).
void* Workspace(CallState* state, ffi::ScratchAllocator& scratch, ct_device device, uint64_t bytes,
                uint64_t alignment) {
  if (alignment == 0) alignment = 1;
  if (!state->host_workspace.load(std::memory_order_relaxed)) {
    std::optional<void*> memory = scratch.Allocate(bytes, alignment);
    if (memory.has_value()) return *memory;
    if (device.device_type != CT_DEVICE_CPU) return nullptr;
    state->host_workspace.store(true, std::memory_order_relaxed);
  }
  return HostWorkspace(bytes, alignment);
}

ffi::Error Run(CallState* state, ffi::RemainingArgs args, ffi::RemainingRets rets,
               ffi::ScratchAllocator& scratch, void* stream, ct_device device) {
  if (state->category == CT_OP_DYNAMIC) {
    // ctensor.jax refuses these at trace time; a hand-written call gets the same answer.
    return ffi::Error(ffi::ErrorCode::kUnimplemented,
                      "ctensor: dynamic operators allocate their outputs and cannot run in XLA");
  }
  // Operands: the input tensors (absent optional ones are not passed), then one 0-d integer per
  // attribute passed as an operand (state->operand_attrs).
  size_t num_operand_attrs = state->operand_attrs.size();
  if (args.size() < num_operand_attrs) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument,
                      "ctensor: fewer operands than attributes passed as operands");
  }
  // Input slots: the fixed inputs (absent optional ones are NULL), then the variadic ones.
  size_t num_buffers = args.size() - num_operand_attrs;
  size_t num_inputs = num_buffers + static_cast<size_t>(__builtin_popcountll(state->absent));
  size_t num_outputs = rets.size();
  Views inputs(num_inputs);
  Views outputs(num_outputs);
  size_t buffer = 0;
  for (size_t slot = 0; slot < num_inputs; ++slot) {
    if (slot < 64 && (state->absent >> slot) & 1) {
      inputs.pointers[slot] = nullptr;
      continue;
    }
    ffi::ErrorOr<ffi::AnyBuffer> arg = args.get<ffi::AnyBuffer>(buffer++);
    if (!arg.has_value()) return arg.error();
    ffi::Error error = ViewOf(*arg, device, &inputs.views[slot]);
    if (error.failure()) return error;
    inputs.pointers[slot] = &inputs.views[slot];
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    ffi::ErrorOr<ffi::Result<ffi::AnyBuffer>> ret = rets.get<ffi::AnyBuffer>(i);
    if (!ret.has_value()) return ret.error();
    ffi::Error error = ViewOf(**ret, device, &outputs.views[i]);
    if (error.failure()) return error;
    outputs.pointers[i] = &outputs.views[i];
  }
  // The attributes: the instance's own, or a copy of them whose operand entries this run fills
  // (an instance may run on several threads at once, so the state itself is never written).
  const ct_attr* attrs = state->attrs.empty() ? nullptr : state->attrs.data();
  int32_t num_attrs = static_cast<int32_t>(state->attrs.size());
  ct_attr stack_attrs[kStackAttrs];
  std::vector<ct_attr> heap_attrs;
  if (num_operand_attrs > 0) {
    ct_attr* filled = stack_attrs;
    if (state->attrs.size() > kStackAttrs) {
      heap_attrs = state->attrs;
      filled = heap_attrs.data();
    } else {
      std::copy(state->attrs.begin(), state->attrs.end(), stack_attrs);
    }
    for (size_t k = 0; k < num_operand_attrs; ++k) {
      ffi::ErrorOr<ffi::AnyBuffer> arg = args.get<ffi::AnyBuffer>(num_buffers + k);
      if (!arg.has_value()) return arg.error();
      ct_attr& entry = filled[state->operand_attrs[k]];
      ffi::Error error = ReadIntOperand(*arg, device, stream, entry.name, &entry.value.value.i);
      if (error.failure()) return error;
    }
    attrs = filled;
  }
  ct_context context = {};
  context.struct_size = sizeof(ct_context);
  context.stream = stream;
  // A device kernel may ask for scratch whatever the op's category (ct_op_workspace's contract):
  // on the CPU only workspace-category ops do.
  if (state->category == CT_OP_WORKSPACE || device.device_type != CT_DEVICE_CPU) {
    uint64_t bytes = 0;
    uint64_t alignment = 1;
    int status = ct_op_workspace(state->op, inputs.pointers, static_cast<int32_t>(num_inputs),
                                 outputs.pointers, static_cast<int32_t>(num_outputs), attrs,
                                 num_attrs, &bytes, &alignment);
    if (status != CT_OK) return ErrorOf(status);
    if (bytes > 0) {
      void* memory = Workspace(state, scratch, device, bytes, alignment);
      if (memory == nullptr) {
        return ffi::Error(
            ffi::ErrorCode::kResourceExhausted,
            "ctensor: no memory for " + std::to_string(bytes) + " bytes of workspace");
      }
      context.workspace = memory;
      context.workspace_size = bytes;
    }
  }
  int status = ct_op_run(state->op, inputs.pointers, static_cast<int32_t>(num_inputs),
                         outputs.pointers, static_cast<int32_t>(num_outputs), attrs, num_attrs,
                         stream != nullptr || context.workspace != nullptr ? &context : nullptr);
  if (status != CT_OK) return ErrorOf(status);
  return ffi::Error::Success();
}

ffi::Error ExecuteCpu(CallState* state, ffi::RemainingArgs args, ffi::RemainingRets rets,
                      ffi::ScratchAllocator scratch) {
  return Run(state, args, rets, scratch, nullptr, ct_device{CT_DEVICE_CPU, 0});
}

ffi::Error ExecuteCuda(CallState* state, ffi::RemainingArgs args, ffi::RemainingRets rets,
                       ffi::ScratchAllocator scratch, void* stream, int32_t ordinal) {
  return Run(state, args, rets, scratch, stream, ct_device{CT_DEVICE_CUDA, ordinal});
}

}  // namespace

}  // namespace ctensor_xla

#define CTENSOR_XLA_EXPORT extern "C" __attribute__((visibility("default")))

XLA_FFI_DEFINE_HANDLER(ctensor_xla_instantiate_handler, ctensor_xla::Instantiate,
                       ffi::Ffi::BindInstantiate().Attrs<ffi::Dictionary>());

XLA_FFI_DEFINE_HANDLER(ctensor_xla_execute_cpu_handler, ctensor_xla::ExecuteCpu,
                       ffi::Ffi::Bind()
                           .Ctx<ffi::State<ctensor_xla::CallState>>()
                           .RemainingArgs()
                           .RemainingRets()
                           .Ctx<ffi::ScratchAllocator>());

XLA_FFI_DEFINE_HANDLER(ctensor_xla_execute_cuda_handler, ctensor_xla::ExecuteCuda,
                       ffi::Ffi::Bind()
                           .Ctx<ffi::State<ctensor_xla::CallState>>()
                           .RemainingArgs()
                           .RemainingRets()
                           .Ctx<ffi::ScratchAllocator>()
                           .Ctx<ffi::PlatformStream<void*>>()
                           .Ctx<ffi::DeviceOrdinal>());

/** Instantiate stage of "ctensor_op" (both platforms). */
CTENSOR_XLA_EXPORT XLA_FFI_Error* ctensor_xla_instantiate(XLA_FFI_CallFrame* frame) {
  return ctensor_xla_instantiate_handler(frame);
}

/** Execute stage of "ctensor_op" on the CPU. */
CTENSOR_XLA_EXPORT XLA_FFI_Error* ctensor_xla_execute_cpu(XLA_FFI_CallFrame* frame) {
  return ctensor_xla_execute_cpu_handler(frame);
}

/** Execute stage of "ctensor_op" on CUDA: XLA's stream and device ordinal. */
CTENSOR_XLA_EXPORT XLA_FFI_Error* ctensor_xla_execute_cuda(XLA_FFI_CallFrame* frame) {
  return ctensor_xla_execute_cuda_handler(frame);
}

/** The type id XLA assigns to CallState when ctensor.jax registers it (register_ffi_type). */
CTENSOR_XLA_EXPORT XLA_FFI_TypeId* ctensor_xla_state_type_id(void) {
  return &ctensor_xla::CallState::id;
}

/** How XLA destroys a CallState when the executable holding it goes away. */
CTENSOR_XLA_EXPORT const XLA_FFI_TypeInfo* ctensor_xla_state_type_info(void) {
  static const XLA_FFI_TypeInfo info = {XLA_FFI_TypeInfo_STRUCT_SIZE, nullptr, [](void* state) {
                                          delete static_cast<ctensor_xla::CallState*>(state);
                                        }};
  return &info;
}

/** The XLA FFI API version of the headers this handler was compiled with:
 *  (major << 16) | minor. */
CTENSOR_XLA_EXPORT uint32_t ctensor_xla_api_version(void) {
  return (static_cast<uint32_t>(XLA_FFI_API_MAJOR) << 16) | XLA_FFI_API_MINOR;
}
