/* dynamic_output.c - the caller's allocator, called the same way by every dynamic kernel. */
#include "engine/dynamic_output.h"

int ct_cpu_allocate_output(const ct_kernel_call* call, int32_t index, const ct_tensor_info* info,
                           void** data) {
  *data = NULL;
  int status =
      call->allocator->allocate(call->allocator->user_data, index, info, CT_DEVICE_CPU, 0, data);
  int64_t numel = 1;
  for (int32_t k = 0; k < info->ndim; ++k) numel *= info->shape[k];
  if (status == CT_OK && !*data && numel > 0) status = CT_ERROR_OUT_OF_MEMORY;
  if (status == CT_OK) return CT_OK;
  if (status > 0) status = CT_ERROR_OUT_OF_MEMORY; /* not a ct_status: report it as a failure */
  const char* message = ct_last_error();
  if (message && message[0]) return status; /* the allocator said why */
  return ct_set_error(status, "%s: the caller's allocator failed for output %d (%lld elements)",
                      call->schema->name, index, (long long)numel);
}
