/* device_memory.c - ct_device_*: memory of a device through the backend that serves it; plain
 * host memory (64-byte aligned) for the CPU and for CPU plugins without memory functions. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CT_HOST_ALIGNMENT 64

/* The memory functions for `device`, or NULL for host memory; fails when nobody serves it. */
static int ct_memory_of(ct_device device, const char* what, const ct_backend_entry** backend) {
  *backend = NULL;
  if (device.device_type == CT_DEVICE_CPU) {
    if (device.device_id != 0) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DEVICE, "%s: the CPU is device 0, not %d", what,
                          device.device_id);
    }
    const ct_backend_entry* row = ct_backend_table_find_device(CT_DEVICE_CPU);
    if (row && row->memory) *backend = row;
    return CT_OK;
  }
  const ct_backend_entry* row = ct_backend_table_find_device(device.device_type);
  if (!row) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DEVICE,
                        "%s: no loaded backend manages memory of device type %d", what,
                        device.device_type);
  }
  if (device.device_id < 0 || device.device_id >= row->info.device_count) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DEVICE,
                        "%s: backend '%s' has %d device%s of type %d; there is no device %d", what,
                        row->info.name, row->info.device_count,
                        row->info.device_count == 1 ? "" : "s", device.device_type,
                        device.device_id);
  }
  *backend = row;
  return CT_OK;
}

/* A plugin's status: CT_OK or negative (anything else is a broken plugin). */
static int ct_plugin_status(int status, const ct_backend_entry* backend, const char* what) {
  if (status > 0) {
    return ct_set_error(CT_ERROR_BACKEND, "%s: backend '%s' returned status %d", what,
                        backend->info.name, status);
  }
  return status;
}

int ct_device_allocate(ct_device device, uint64_t bytes, void** data) {
  ct_clear_error();
  if (!data) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_device_allocate: data is NULL");
  const ct_backend_entry* backend;
  int status = ct_memory_of(device, "ct_device_allocate", &backend);
  if (status != CT_OK) return status;
  if (backend) {
    return ct_plugin_status(
        backend->memory->allocate(backend->plugin_data, device.device_id, bytes, data), backend,
        "ct_device_allocate");
  }
  *data = NULL;
  if (bytes == 0) return CT_OK;
  if (bytes > (uint64_t)SIZE_MAX - CT_HOST_ALIGNMENT) {
    return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_device_allocate: %llu bytes do not fit",
                        (unsigned long long)bytes);
  }
  /* aligned_alloc wants a multiple of the alignment. */
  const size_t rounded =
      (size_t)((bytes + CT_HOST_ALIGNMENT - 1) / CT_HOST_ALIGNMENT) * CT_HOST_ALIGNMENT;
  *data = aligned_alloc(CT_HOST_ALIGNMENT, rounded);
  if (!*data) {
    return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_device_allocate: %llu bytes: out of memory",
                        (unsigned long long)bytes);
  }
  return CT_OK;
}

int ct_device_free(ct_device device, void* data) {
  ct_clear_error();
  const ct_backend_entry* backend;
  int status = ct_memory_of(device, "ct_device_free", &backend);
  if (status != CT_OK) return status;
  if (!data) return CT_OK;
  if (backend) {
    return ct_plugin_status(backend->memory->release(backend->plugin_data, device.device_id, data),
                            backend, "ct_device_free");
  }
  free(data);
  return CT_OK;
}

/* Whether [offset, offset + bytes) past `base` leaves the 64-bit range (for host pointers, the
 * address space). */
static bool ct_copy_range_wraps(const void* base, uint64_t offset, uint64_t bytes) {
  uint64_t end;
  return __builtin_add_overflow(offset, bytes, &end) ||
         __builtin_add_overflow((uint64_t)(uintptr_t)base, end, &end);
}

int ct_device_copy_from_host(ct_device device, void* dst, uint64_t dst_offset, const void* src,
                             uint64_t bytes, void* stream) {
  ct_clear_error();
  if (bytes > 0 && (!dst || !src)) {
    return ct_set_error(CT_ERROR_NULL_POINTER, "ct_device_copy_from_host: dst or src is NULL");
  }
  if (ct_copy_range_wraps(dst, dst_offset, bytes)) {
    return ct_set_error(
        CT_ERROR_SIZE_OVERFLOW,
        "ct_device_copy_from_host: dst_offset %llu plus %llu bytes wraps around the address space",
        (unsigned long long)dst_offset, (unsigned long long)bytes);
  }
  const ct_backend_entry* backend;
  int status = ct_memory_of(device, "ct_device_copy_from_host", &backend);
  if (status != CT_OK) return status;
  if (bytes == 0) return CT_OK;
  if (backend) {
    return ct_plugin_status(backend->memory->copy_from_host(backend->plugin_data, device.device_id,
                                                            dst, dst_offset, src, bytes, stream),
                            backend, "ct_device_copy_from_host");
  }
  memcpy((char*)dst + dst_offset, src, (size_t)bytes);
  return CT_OK;
}

int ct_device_copy_to_host(ct_device device, void* dst, const void* src, uint64_t src_offset,
                           uint64_t bytes, void* stream) {
  ct_clear_error();
  if (bytes > 0 && (!dst || !src)) {
    return ct_set_error(CT_ERROR_NULL_POINTER, "ct_device_copy_to_host: dst or src is NULL");
  }
  if (ct_copy_range_wraps(src, src_offset, bytes)) {
    return ct_set_error(
        CT_ERROR_SIZE_OVERFLOW,
        "ct_device_copy_to_host: src_offset %llu plus %llu bytes wraps around the address space",
        (unsigned long long)src_offset, (unsigned long long)bytes);
  }
  const ct_backend_entry* backend;
  int status = ct_memory_of(device, "ct_device_copy_to_host", &backend);
  if (status != CT_OK) return status;
  if (bytes == 0) return CT_OK;
  if (backend) {
    return ct_plugin_status(backend->memory->copy_to_host(backend->plugin_data, device.device_id,
                                                          dst, src, src_offset, bytes, stream),
                            backend, "ct_device_copy_to_host");
  }
  memcpy(dst, (const char*)src + src_offset, (size_t)bytes);
  return CT_OK;
}

int ct_device_synchronize(ct_device device, void* stream) {
  ct_clear_error();
  const ct_backend_entry* backend;
  int status = ct_memory_of(device, "ct_device_synchronize", &backend);
  if (status != CT_OK) return status;
  if (backend) {
    return ct_plugin_status(
        backend->memory->synchronize(backend->plugin_data, device.device_id, stream), backend,
        "ct_device_synchronize");
  }
  return CT_OK; /* host memory: copies are done when they return */
}
