/* registry.c - the one registry: operators from the op table, kernels per (op, device, dtypes). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const ct_op_def* const ct_builtin_op_defs[] = {
#define CT_OP(name) &ct_op_def_##name,
#include "ops/op_list.h"
#undef CT_OP
};

#define CT_NUM_BUILTIN_OPS ((int32_t)(sizeof ct_builtin_op_defs / sizeof ct_builtin_op_defs[0]))

/* Ops sorted by name; the array never changes after initialisation. */
static ct_op ct_ops[CT_NUM_BUILTIN_OPS];
/* Kernel lists grow when backends register; readers take the lock shared. */
static pthread_rwlock_t ct_kernel_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_once_t ct_init_once = PTHREAD_ONCE_INIT;
static int ct_init_status = CT_OK;
static char ct_init_message[256];
/* Set while built-in kernels are being registered (inside the once-routine). */
static bool ct_registering_builtins = false;

static int ct_compare_op_names(const void* a, const void* b) {
  return strcmp(((const ct_op*)a)->def->schema.name, ((const ct_op*)b)->def->schema.name);
}

/* Runs the init of each backend linked into the library with the host API a plugin gets; their
 * kernels register directly (no staging: nothing is visible before initialisation ends). A
 * built-in init runs inside the registry's initialisation, so it must not call op_find. */
static int ct_register_builtin_backends(void) {
  static const ct_host_api host = {
      .struct_size = sizeof(ct_host_api),
      .abi_version = CT_PLUGIN_ABI_VERSION,
      .library_version = CT_VERSION_STRING,
      .kernel_register = ct_kernel_register,
      .set_error = ct_set_error,
      .last_error = ct_last_error,
      .op_find = ct_op_find,
      .op_get_schema = ct_op_get_schema,
  };
  for (int32_t i = 0; i < ct_builtin_backend_count; ++i) {
    ct_plugin_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    const int status = ct_builtin_backends[i](&host, &info);
    if (status != CT_OK) return status;
  }
  return CT_OK;
}

static void ct_registry_init_once(void) {
  for (int32_t i = 0; i < CT_NUM_BUILTIN_OPS; ++i) ct_ops[i].def = ct_builtin_op_defs[i];
  qsort(ct_ops, CT_NUM_BUILTIN_OPS, sizeof ct_ops[0], ct_compare_op_names);
  ct_registering_builtins = true;
  ct_init_status = ct_register_builtin_backends();
  ct_registering_builtins = false;
  if (ct_init_status != CT_OK) {
    strncpy(ct_init_message, ct_last_error(), sizeof ct_init_message - 1);
  }
}

int ct_registry_init(void) {
  pthread_once(&ct_init_once, ct_registry_init_once);
  if (ct_init_status != CT_OK) {
    return ct_set_error(ct_init_status, "ctensor failed to initialise: %s", ct_init_message);
  }
  return CT_OK;
}

int ct_op_count(int32_t* count) {
  ct_clear_error();
  if (!count) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_op_count: count is NULL");
  const int status = ct_registry_init();
  if (status != CT_OK) return status;
  *count = CT_NUM_BUILTIN_OPS;
  return CT_OK;
}

int ct_op_at(int32_t index, const ct_op** op) {
  ct_clear_error();
  if (!op) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_op_at: op is NULL");
  const int status = ct_registry_init();
  if (status != CT_OK) return status;
  if (index < 0 || index >= CT_NUM_BUILTIN_OPS) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "ct_op_at: index %d is outside [0, %d)", index,
                        CT_NUM_BUILTIN_OPS);
  }
  *op = &ct_ops[index];
  return CT_OK;
}

static const ct_op* ct_lookup(const char* name) {
  int32_t lo = 0, hi = CT_NUM_BUILTIN_OPS;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    const int c = strcmp(ct_ops[mid].def->schema.name, name);
    if (c == 0) return &ct_ops[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

int ct_op_find(const char* name, const ct_op** op) {
  ct_clear_error();
  if (!name || !op) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_op_find: NULL argument");
  const int status = ct_registry_init();
  if (status != CT_OK) return status;
  *op = ct_lookup(name);
  if (!*op) return ct_set_error(CT_ERROR_UNKNOWN_OP, "no operator named '%s'", name);
  return CT_OK;
}

int32_t ct_op_index(const ct_op* op) {
  const uintptr_t first = (uintptr_t)&ct_ops[0], address = (uintptr_t)op;
  if (address < first || address >= (uintptr_t)&ct_ops[CT_NUM_BUILTIN_OPS]) return -1;
  if ((address - first) % sizeof ct_ops[0] != 0) return -1;
  return (int32_t)((address - first) / sizeof ct_ops[0]);
}

int ct_op_get_schema(const ct_op* op, const ct_op_schema** schema) {
  ct_clear_error();
  if (!op || !schema) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_op_get_schema: NULL argument");
  *schema = &op->def->schema;
  return CT_OK;
}

static int32_t ct_signature_length(const ct_op_schema* schema) {
  return schema->num_inputs + schema->num_outputs;
}

static bool ct_signature_matches(const ct_dtype* registered, const ct_dtype* wanted, int32_t n) {
  for (int32_t i = 0; i < n; ++i) {
    if (wanted[i].bits == 0) continue; /* absent optional input */
    if (!ct_dtype_equal(registered[i], wanted[i])) return false;
  }
  return true;
}

static bool ct_signature_equal(const ct_dtype* a, const ct_dtype* b, int32_t n) {
  for (int32_t i = 0; i < n; ++i) {
    if (!ct_dtype_equal(a[i], b[i])) return false;
  }
  return true;
}

/* Registration order: dispatch without a backend name picks the newest matching kernel. */
static uint64_t ct_kernel_sequence = 0;

int ct_kernel_prepare(const ct_kernel_def* def, ct_staged_kernel* staged) {
  memset(staged, 0, sizeof *staged);
  if (!def) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_kernel_register: def is NULL");
  if (def->struct_size < CT_KERNEL_DEF_SIZE_1_0) {
    return ct_set_error(CT_ERROR_ABI_MISMATCH, "ct_kernel_register: struct_size %zu < %zu",
                        def->struct_size, (size_t)CT_KERNEL_DEF_SIZE_1_0);
  }
  if (!def->op_name || !def->backend_name || !def->run || !def->signature) {
    return ct_set_error(
        CT_ERROR_NULL_POINTER,
        "ct_kernel_register: op_name, backend_name, run and signature are required");
  }
  if (!def->backend_name[0]) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "ct_kernel_register: backend_name is empty");
  }
  if (!ct_registering_builtins) {
    const int status = ct_registry_init();
    if (status != CT_OK) return status;
  }
  ct_op* op = (ct_op*)ct_lookup(def->op_name);
  if (!op)
    return ct_set_error(CT_ERROR_UNKNOWN_OP, "ct_kernel_register: no operator named '%s'",
                        def->op_name);
  const int32_t length = ct_signature_length(&op->def->schema);
  if (def->signature_length != length) {
    return ct_set_error(CT_ERROR_WRONG_ARITY,
                        "ct_kernel_register: %s takes a signature of %d dtypes, got %d",
                        def->op_name, length, def->signature_length);
  }
  for (int32_t i = 0; i < length; ++i) {
    if (ct_dtype_to_id(def->signature[i]) == CT_DT_INVALID) {
      return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                          "ct_kernel_register: %s: signature entry %d is %s", def->op_name, i,
                          ct_dtype_describe(def->signature[i]));
    }
  }
  /* Own copies of the signature and the name: the caller's may not outlive the call. */
  ct_dtype* signature = malloc(sizeof(ct_dtype) * (size_t)length);
  char* backend = strdup(def->backend_name);
  if (!signature || !backend) {
    free(signature);
    free(backend);
    return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_kernel_register: out of memory");
  }
  memcpy(signature, def->signature, sizeof(ct_dtype) * (size_t)length);
  staged->op = op;
  staged->entry.def = *def;
  staged->entry.def.struct_size = sizeof(ct_kernel_def);
  staged->entry.def.signature = signature;
  staged->entry.def.backend_name = backend;
  staged->entry.signature = signature;
  return CT_OK;
}

void ct_kernel_discard(ct_staged_kernel* staged) {
  free(staged->entry.signature);
  free((char*)staged->entry.def.backend_name);
  memset(staged, 0, sizeof *staged);
}

/* Makes room for `extra` more kernels of op. Grows into a new block; the old one stays
 * allocated (chained from the new one) so that readers still holding an entry pointer remain
 * valid. Registration is rare and bounded. Called with the write lock held. */
static int ct_op_reserve(ct_op* op, int32_t extra) {
  /* In int64: num_kernels + extra and the doubling below must not overflow int32. */
  const int64_t needed = (int64_t)op->num_kernels + extra;
  if (needed <= op->kernel_capacity) return CT_OK;
  if (needed > INT32_MAX / 2) {
    return ct_set_error(CT_ERROR_OUT_OF_MEMORY,
                        "ct_kernel_register: %s would have %lld kernels; at most %d fit",
                        op->def->schema.name, (long long)needed, INT32_MAX / 2);
  }
  int32_t capacity = op->kernel_capacity ? op->kernel_capacity : 16;
  while (capacity < needed) capacity *= 2;
  ct_kernel_block* block =
      malloc(sizeof(ct_kernel_block) + sizeof(ct_kernel_entry) * (size_t)capacity);
  if (!block) return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_kernel_register: out of memory");
  block->previous = op->kernel_block;
  if (op->num_kernels) {
    memcpy(block->entries, op->kernels, sizeof(ct_kernel_entry) * (size_t)op->num_kernels);
  }
  op->kernel_block = block;
  op->kernels = block->entries;
  op->kernel_capacity = capacity;
  return CT_OK;
}

/* Adds or replaces (same op, device, signature and backend) one kernel; room was reserved. */
static void ct_op_insert(ct_op* op, ct_kernel_entry* entry) {
  const int32_t length = entry->def.signature_length;
  ct_kernel_entry* slot = NULL;
  for (int32_t k = 0; k < op->num_kernels && !slot; ++k) {
    ct_kernel_entry* existing = &op->kernels[k];
    if (existing->def.device_type == entry->def.device_type &&
        strcmp(existing->def.backend_name, entry->def.backend_name) == 0 &&
        ct_signature_equal(existing->signature, entry->signature, length)) {
      slot = existing;
    }
  }
  if (slot) {
    /* Replaced in place. The key is the same, so the old copies of the signature and the name
     * stay (readers may hold them) and the new ones go. */
    free(entry->signature);
    free((char*)entry->def.backend_name);
    entry->signature = slot->signature;
    entry->def.signature = slot->signature;
    entry->def.backend_name = slot->def.backend_name;
    op->replaced = true;
  } else {
    slot = &op->kernels[op->num_kernels++];
  }
  *slot = *entry;
  /* Atomic: ct_registry_generation reads it without the lock. */
  slot->sequence = __atomic_add_fetch(&ct_kernel_sequence, 1, __ATOMIC_RELEASE);
}

int ct_registry_commit(ct_staged_kernel* kernels, int32_t count) {
  int status = CT_OK;
  pthread_rwlock_wrlock(&ct_kernel_lock);
  /* Room for all first, so that the batch goes in whole or not at all. */
  for (int32_t i = 0; i < count && status == CT_OK; ++i) {
    bool first_of_op = true;
    for (int32_t j = 0; j < i && first_of_op; ++j) first_of_op = kernels[j].op != kernels[i].op;
    if (!first_of_op) continue;
    int32_t extra = 0;
    for (int32_t j = i; j < count; ++j) extra += kernels[j].op == kernels[i].op;
    status = ct_op_reserve(kernels[i].op, extra);
  }
  if (status == CT_OK) {
    for (int32_t i = 0; i < count; ++i) {
      ct_op_insert(kernels[i].op, &kernels[i].entry);
      memset(&kernels[i], 0, sizeof kernels[i]); /* the registry owns the copies now */
    }
  }
  pthread_rwlock_unlock(&ct_kernel_lock);
  return status;
}

uint64_t ct_registry_generation(void) {
  return __atomic_load_n(&ct_kernel_sequence, __ATOMIC_ACQUIRE);
}

int ct_kernel_register(const ct_kernel_def* def) {
  ct_clear_error();
  ct_staged_kernel staged;
  int status = ct_kernel_prepare(def, &staged);
  if (status != CT_OK) return status;
  status = ct_registry_commit(&staged, 1);
  if (status != CT_OK) ct_kernel_discard(&staged);
  return status;
}

int ct_registry_find_kernel(const ct_op* op, int32_t device_type, const char* backend,
                            const ct_dtype* signature, int32_t signature_length,
                            const ct_kernel_entry** kernel) {
  const ct_kernel_entry* found = NULL;
  bool device_seen = false;
  pthread_rwlock_rdlock(&ct_kernel_lock);
  /* Newest first: entries are in registration order unless one was replaced in place, and then
   * every entry is looked at for the highest sequence number. */
  const bool ordered = !op->replaced;
  for (int32_t k = op->num_kernels - 1; k >= 0; --k) {
    const ct_kernel_entry* entry = &op->kernels[k];
    if (entry->def.device_type != device_type) continue;
    if (backend && strcmp(entry->def.backend_name, backend) != 0) continue;
    device_seen = true;
    if (ct_signature_matches(entry->signature, signature, signature_length) &&
        (!found || entry->sequence > found->sequence)) {
      found = entry;
      if (ordered) break;
    }
  }
  pthread_rwlock_unlock(&ct_kernel_lock);
  *kernel = found;
  if (found) return CT_OK;
  const char* name = op->def->schema.name;
  char by[160] = "";
  if (backend) snprintf(by, sizeof by, " of backend '%s'", backend);
  if (!device_seen) {
    return ct_set_error(CT_ERROR_UNSUPPORTED_DEVICE,
                        "%s has no kernel%s for device type %d (%s): no loaded backend runs it "
                        "there",
                        name, by, device_type, ct_device_name(device_type));
  }
  char text[512];
  size_t used = 0;
  for (int32_t i = 0; i < signature_length && used < sizeof text; ++i) {
    int n = snprintf(text + used, sizeof text - used, "%s%s", i ? ", " : "",
                     signature[i].bits ? ct_dtype_describe(signature[i]) : "-");
    if (n < 0) break;
    used += (size_t)n;
  }
  return ct_set_error(CT_ERROR_UNSUPPORTED_DTYPE,
                      "%s%s does not support dtypes (%s) on device type %d", name, by, text,
                      device_type);
}

bool ct_registry_has_device(const ct_op* op, int32_t device_type) {
  bool seen = false;
  pthread_rwlock_rdlock(&ct_kernel_lock);
  for (int32_t k = 0; k < op->num_kernels && !seen; ++k)
    seen = op->kernels[k].def.device_type == device_type;
  pthread_rwlock_unlock(&ct_kernel_lock);
  return seen;
}

int ct_op_kernel_count(const ct_op* op, int32_t* count) {
  ct_clear_error();
  if (!op || !count)
    return ct_set_error(CT_ERROR_NULL_POINTER, "ct_op_kernel_count: NULL argument");
  pthread_rwlock_rdlock(&ct_kernel_lock);
  *count = op->num_kernels;
  pthread_rwlock_unlock(&ct_kernel_lock);
  return CT_OK;
}

int ct_op_kernel_info(const ct_op* op, int32_t index, ct_kernel_info* info) {
  ct_clear_error();
  if (!op || !info) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_op_kernel_info: NULL argument");
  if (info->struct_size < CT_KERNEL_INFO_SIZE_1_0) {
    return ct_set_error(CT_ERROR_ABI_MISMATCH, "ct_op_kernel_info: struct_size %zu < %zu",
                        info->struct_size, (size_t)CT_KERNEL_INFO_SIZE_1_0);
  }
  int status = CT_OK;
  pthread_rwlock_rdlock(&ct_kernel_lock);
  if (index < 0 || index >= op->num_kernels) {
    status = ct_set_error(CT_ERROR_INVALID_ARGUMENT, "ct_op_kernel_info: %s has no kernel %d",
                          op->def->schema.name, index);
  } else {
    const ct_kernel_entry* entry = &op->kernels[index];
    info->backend = entry->def.backend_name;
    info->device_type = entry->def.device_type;
    info->signature_length = entry->def.signature_length;
    info->signature = entry->signature;
  }
  pthread_rwlock_unlock(&ct_kernel_lock);
  return status;
}
