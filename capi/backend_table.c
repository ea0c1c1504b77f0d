/* backend_table.c - the table of backends: the built-in CPU backend (row 0), then one row per
 * plugin load attempt. Rows are appended under a write lock and never change or go away, so a
 * row pointer read under the lock stays valid after it is released. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static ct_backend_entry ct_builtin_cpu_backend = {
    .info =
        {
            .struct_size = sizeof(ct_backend_info),
            .name = "cpu",
            .version = CT_VERSION_STRING,
            .path = NULL,
            .state = CT_BACKEND_LOADED,
            .status = CT_OK,
            .reason = "",
            .device_type = CT_DEVICE_CPU,
            .device_count = 1,
            .abi_version = CT_PLUGIN_ABI_VERSION,
        },
    .key = NULL,
    .memory = NULL,
    .plugin_data = NULL,
};

static pthread_rwlock_t ct_backend_table_lock = PTHREAD_RWLOCK_INITIALIZER;
static ct_backend_entry* ct_builtin_rows[1] = {&ct_builtin_cpu_backend};
static ct_backend_entry** ct_backend_rows = ct_builtin_rows;
static int32_t ct_backend_rows_count = 1;
static int32_t ct_backend_rows_capacity = 1;

int ct_backend_table_append(ct_backend_entry* entry, int32_t* index) {
  int status = CT_OK;
  pthread_rwlock_wrlock(&ct_backend_table_lock);
  if (ct_backend_rows_count == ct_backend_rows_capacity) {
    const int32_t capacity = ct_backend_rows_capacity * 2 + 4;
    ct_backend_entry** rows = malloc(sizeof(ct_backend_entry*) * (size_t)capacity);
    if (!rows) {
      status = ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_backend_load: out of memory");
    } else {
      memcpy(rows, ct_backend_rows, sizeof(ct_backend_entry*) * (size_t)ct_backend_rows_count);
      /* The old array is dropped only when it was heap memory; readers copy row pointers out
       * under the lock, so nobody holds it. */
      if (ct_backend_rows != ct_builtin_rows) free(ct_backend_rows);
      ct_backend_rows = rows;
      ct_backend_rows_capacity = capacity;
    }
  }
  if (status == CT_OK) {
    if (index) *index = ct_backend_rows_count;
    ct_backend_rows[ct_backend_rows_count++] = entry;
  }
  pthread_rwlock_unlock(&ct_backend_table_lock);
  return status;
}

const ct_backend_entry* ct_backend_table_find_key(const char* key, int32_t* index) {
  const ct_backend_entry* found = NULL;
  pthread_rwlock_rdlock(&ct_backend_table_lock);
  for (int32_t i = 1; i < ct_backend_rows_count && !found; ++i) {
    if (ct_backend_rows[i]->key && strcmp(ct_backend_rows[i]->key, key) == 0) {
      found = ct_backend_rows[i];
      if (index) *index = i;
    }
  }
  pthread_rwlock_unlock(&ct_backend_table_lock);
  return found;
}

const ct_backend_entry* ct_backend_table_find_name(const char* name) {
  const ct_backend_entry* found = NULL;
  pthread_rwlock_rdlock(&ct_backend_table_lock);
  for (int32_t i = 0; i < ct_backend_rows_count && !found; ++i) {
    const ct_backend_entry* row = ct_backend_rows[i];
    if (row->info.state == CT_BACKEND_LOADED && strcmp(row->info.name, name) == 0) found = row;
  }
  pthread_rwlock_unlock(&ct_backend_table_lock);
  return found;
}

const ct_backend_entry* ct_backend_table_find_device(int32_t device_type) {
  const ct_backend_entry* found = NULL;
  pthread_rwlock_rdlock(&ct_backend_table_lock);
  for (int32_t i = ct_backend_rows_count - 1; i >= 0 && !found; --i) {
    const ct_backend_entry* row = ct_backend_rows[i];
    if (row->info.state == CT_BACKEND_LOADED && row->info.device_type == device_type &&
        (row->memory || device_type == CT_DEVICE_CPU)) {
      found = row;
    }
  }
  pthread_rwlock_unlock(&ct_backend_table_lock);
  return found;
}

int ct_backend_count(int32_t* count) {
  ct_clear_error();
  if (!count) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_backend_count: count is NULL");
  pthread_rwlock_rdlock(&ct_backend_table_lock);
  *count = ct_backend_rows_count;
  pthread_rwlock_unlock(&ct_backend_table_lock);
  return CT_OK;
}

int ct_backend_get_info(int32_t index, ct_backend_info* info) {
  ct_clear_error();
  if (!info) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_backend_get_info: info is NULL");
  if (info->struct_size < CT_BACKEND_INFO_SIZE_1_0) {
    return ct_set_error(CT_ERROR_ABI_MISMATCH, "ct_backend_get_info: struct_size %zu < %zu",
                        info->struct_size, (size_t)CT_BACKEND_INFO_SIZE_1_0);
  }
  const ct_backend_entry* row = NULL;
  int32_t count;
  pthread_rwlock_rdlock(&ct_backend_table_lock);
  count = ct_backend_rows_count;
  if (index >= 0 && index < count) row = ct_backend_rows[index];
  pthread_rwlock_unlock(&ct_backend_table_lock);
  if (!row) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "ct_backend_get_info: index %d is outside [0, %d)", index, count);
  }
  /* Fields the caller's (older or newer) struct has room for; its struct_size stays. */
  const size_t caller_size = info->struct_size;
  const size_t size = caller_size < sizeof *info ? caller_size : sizeof *info;
  memcpy(info, &row->info, size);
  info->struct_size = caller_size;
  return CT_OK;
}
