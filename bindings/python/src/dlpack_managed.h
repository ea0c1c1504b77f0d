/* dlpack_managed.h - DLPack's managed tensors: the payloads of "dltensor" and "dltensor_versioned"
 * capsules, as the DLPack specification defines them (DLManagedTensorVersioned since DLPack 0.8).
 *
 * capi/ctensor.h declares only the tensor itself (ct_tensor, which is DLTensor). When dlpack.h is
 * included first, its own declarations are used; build_cffi.py reads the #else branch into
 * cffi's declarations. */
#ifndef CTENSOR_PY_DLPACK_MANAGED_H_
#define CTENSOR_PY_DLPACK_MANAGED_H_

#include <stdint.h>

#include "ctensor.h"

#if defined(DLPACK_DLPACK_H_)
#else
typedef ct_tensor DLTensor;

typedef struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/* A DLPack 0.x capsule's payload: the tensor first, then who owns its memory. */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

/* A DLPack 1.x capsule's payload: version and flags, then the tensor. */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define DLPACK_FLAG_BITMASK_READ_ONLY 1
#define DLPACK_FLAG_BITMASK_IS_COPIED 2
#endif

#endif /* CTENSOR_PY_DLPACK_MANAGED_H_ */
