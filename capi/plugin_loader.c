/* plugin_loader.c - ct_backend_load: opens a plugin, checks its ABI version, runs its init with
 * the host API table, and registers the kernels it staged only when the init succeeds. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* One load at a time. Dispatch does not take it: staged kernels are invisible until commit. */
static pthread_mutex_t ct_load_lock = PTHREAD_MUTEX_INITIALIZER;

/* Kernels the plugin being initialised registered so far. */
typedef struct ct_load_stage {
  ct_staged_kernel* kernels;
  int32_t count;
  int32_t capacity;
  const ct_plugin_info* info; /* the plugin's info, to check kernel backend names against */
} ct_load_stage;

/* Set on the thread running a plugin's init, for the length of the init. */
static _Thread_local ct_load_stage* ct_current_stage = NULL;

static void ct_stage_discard(ct_load_stage* stage) {
  for (int32_t i = 0; i < stage->count; ++i) ct_kernel_discard(&stage->kernels[i]);
  free(stage->kernels);
  stage->kernels = NULL;
  stage->count = stage->capacity = 0;
}

/* host->kernel_register: during an init, validates and stages; otherwise registers directly. */
static int ct_host_kernel_register(const ct_kernel_def* def) {
  ct_load_stage* stage = ct_current_stage;
  if (!stage) return ct_kernel_register(def);
  ct_clear_error();
  const char* own = stage->info->name;
  if (def && def->backend_name && own && strcmp(def->backend_name, own) != 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "plugin '%s' may register kernels only under its own name, not '%s'", own,
                        def->backend_name);
  }
  if (stage->count == stage->capacity) {
    const int32_t capacity = stage->capacity ? stage->capacity * 2 : 64;
    ct_staged_kernel* kernels =
        realloc(stage->kernels, sizeof(ct_staged_kernel) * (size_t)capacity);
    if (!kernels) return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_kernel_register: out of memory");
    stage->kernels = kernels;
    stage->capacity = capacity;
  }
  const int status = ct_kernel_prepare(def, &stage->kernels[stage->count]);
  if (status == CT_OK) ++stage->count;
  return status;
}

static const ct_host_api ct_host = {
    .struct_size = sizeof(ct_host_api),
    .abi_version = CT_PLUGIN_ABI_VERSION,
    .library_version = CT_VERSION_STRING,
    .kernel_register = ct_host_kernel_register,
    .set_error = ct_set_error,
    .last_error = ct_last_error,
    .op_find = ct_op_find,
    .op_get_schema = ct_op_get_schema,
};

static char* ct_strdup_or_empty(const char* text) {
  return strdup(text ? text : "");
}

static const char* ct_file_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* Records the outcome of one attempt as a new row and returns `status` with `reason` as this
 * thread's message. `row` holds what is known so far (its strings owned). */
static int ct_finish_row(ct_backend_entry* row, int32_t state, int status, const char* reason,
                         int32_t* index) {
  row->info.struct_size = sizeof(ct_backend_info);
  row->info.state = state;
  row->info.status = status;
  char* owned_reason = ct_strdup_or_empty(reason);
  row->info.reason = owned_reason ? owned_reason : "";
  const int appended = ct_backend_table_append(row, index);
  if (appended != CT_OK) return appended;
  if (status == CT_OK) {
    ct_clear_error();
    return CT_OK;
  }
  return ct_set_error(status, "%s", row->info.reason);
}

/* Everything after the row exists: open, check the version, init, commit. */
static int ct_load_into(ct_backend_entry* row, const char* path, int32_t* index) {
  char reason[2048];
  void* handle = dlopen(row->key, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    snprintf(reason, sizeof reason, "cannot open plugin %s: %s", path, why ? why : "dlopen failed");
    return ct_finish_row(row, CT_BACKEND_FAILED, CT_ERROR_BACKEND, reason, index);
  }
  /* Never dlclose: kernels, strings and tables of a plugin must live as long as the process. */
  ct_plugin_abi_version_fn version_fn;
  *(void**)&version_fn = dlsym(handle, CT_PLUGIN_ABI_VERSION_SYMBOL);
  if (!version_fn) {
    snprintf(reason, sizeof reason, "%s is not a ctensor plugin: it exports no %s()", path,
             CT_PLUGIN_ABI_VERSION_SYMBOL);
    return ct_finish_row(row, CT_BACKEND_FAILED, CT_ERROR_BACKEND, reason, index);
  }
  const uint32_t version = version_fn();
  row->info.abi_version = version;
  if ((version >> 16) != CT_PLUGIN_ABI_MAJOR) {
    snprintf(reason, sizeof reason,
             "plugin %s was built for plugin ABI %u.%u; this libctensor %s speaks plugin ABI "
             "%u.%u (major versions must match)",
             path, (unsigned)(version >> 16), (unsigned)(version & 0xFFFF), CT_VERSION_STRING,
             (unsigned)CT_PLUGIN_ABI_MAJOR, (unsigned)CT_PLUGIN_ABI_MINOR);
    return ct_finish_row(row, CT_BACKEND_FAILED, CT_ERROR_ABI_MISMATCH, reason, index);
  }
  ct_plugin_init_fn init_fn;
  *(void**)&init_fn = dlsym(handle, CT_PLUGIN_INIT_SYMBOL);
  if (!init_fn) {
    snprintf(reason, sizeof reason, "%s is not a ctensor plugin: it exports no %s()", path,
             CT_PLUGIN_INIT_SYMBOL);
    return ct_finish_row(row, CT_BACKEND_FAILED, CT_ERROR_BACKEND, reason, index);
  }

  ct_plugin_info plugin;
  memset(&plugin, 0, sizeof plugin);
  plugin.struct_size = sizeof plugin;
  ct_load_stage stage = {NULL, 0, 0, &plugin};
  ct_current_stage = &stage;
  ct_clear_error();
  int status = init_fn(&ct_host, &plugin);
  ct_current_stage = NULL;
  char message[1024]; /* what the plugin said with set_error */
  snprintf(message, sizeof message, "%s", ct_last_error());

  /* What the plugin said about itself, whatever became of its init. */
  if (plugin.name && plugin.name[0]) {
    char* name = strdup(plugin.name);
    if (name) {
      free((char*)row->info.name);
      row->info.name = name;
    }
  }
  char* plugin_version = ct_strdup_or_empty(plugin.version);
  if (plugin_version) {
    free((char*)row->info.version);
    row->info.version = plugin_version;
  }
  row->info.device_type = plugin.device_type;
  row->info.device_count = plugin.device_count;

  if (status == CT_ERROR_BACKEND_UNAVAILABLE) {
    ct_stage_discard(&stage);
    snprintf(reason, sizeof reason, "%s", message[0] ? message : "its device or driver is absent");
    return ct_finish_row(row, CT_BACKEND_UNAVAILABLE, CT_ERROR_BACKEND_UNAVAILABLE, reason, index);
  }
  if (status != CT_OK) {
    ct_stage_discard(&stage);
    snprintf(reason, sizeof reason, "%s() of %s returned %s%s%s", CT_PLUGIN_INIT_SYMBOL, path,
             ct_status_name(status), message[0] ? ": " : "", message);
    return ct_finish_row(row, CT_BACKEND_FAILED, CT_ERROR_BACKEND, reason, index);
  }

  /* The init succeeded: check what it said before anything becomes visible. */
  reason[0] = '\0';
  if (!plugin.name || !plugin.name[0]) {
    snprintf(reason, sizeof reason, "plugin %s gave no name in ct_plugin_info", path);
  } else if (ct_backend_table_find_name(plugin.name)) {
    snprintf(reason, sizeof reason, "plugin %s calls itself '%s', the name of a loaded backend",
             path, plugin.name);
  } else if (plugin.device_type <= 0 || plugin.device_count < 0) {
    snprintf(reason, sizeof reason, "plugin %s gave device type %d and device count %d", path,
             plugin.device_type, plugin.device_count);
  } else if (plugin.memory && (plugin.memory->struct_size < CT_DEVICE_MEMORY_API_SIZE_1_0 ||
                               !plugin.memory->allocate || !plugin.memory->release ||
                               !plugin.memory->copy_from_host || !plugin.memory->copy_to_host ||
                               !plugin.memory->synchronize)) {
    snprintf(reason, sizeof reason, "plugin %s gave an incomplete ct_device_memory_api", path);
  }
  for (int32_t i = 0; i < stage.count && !reason[0]; ++i) {
    const ct_kernel_def* def = &stage.kernels[i].entry.def;
    if (strcmp(def->backend_name, plugin.name) != 0) {
      snprintf(reason, sizeof reason,
               "plugin %s calls itself '%s' but registered %s under backend name '%s'", path,
               plugin.name, def->op_name, def->backend_name);
    }
  }
  if (reason[0]) {
    ct_stage_discard(&stage);
    return ct_finish_row(row, CT_BACKEND_FAILED, CT_ERROR_BACKEND, reason, index);
  }
  status = ct_registry_commit(stage.kernels, stage.count);
  if (status != CT_OK) {
    snprintf(reason, sizeof reason, "%s", ct_last_error());
    ct_stage_discard(&stage);
    return ct_finish_row(row, CT_BACKEND_FAILED, status, reason, index);
  }
  free(stage.kernels); /* the entries now belong to the registry */
  row->memory = plugin.memory;
  row->plugin_data = plugin.plugin_data;
  return ct_finish_row(row, CT_BACKEND_LOADED, CT_OK, "", index);
}

int ct_backend_load(const char* path, int32_t* index) {
  ct_clear_error();
  if (!path) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_backend_load: path is NULL");
  if (!path[0]) return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "ct_backend_load: path is empty");
  int status = ct_registry_init();
  if (status != CT_OK) return status;

  /* The same file under another name is the same plugin. */
  char resolved[PATH_MAX];
  const char* key = realpath(path, resolved) ? resolved : path;

  pthread_mutex_lock(&ct_load_lock);
  const ct_backend_entry* seen = ct_backend_table_find_key(key, index);
  if (seen) {
    status = seen->info.status;
    if (status == CT_OK) {
      ct_clear_error();
    } else {
      ct_set_error(status, "%s", seen->info.reason);
    }
    pthread_mutex_unlock(&ct_load_lock);
    return status;
  }
  ct_backend_entry* row = calloc(1, sizeof *row);
  char* owned_key = strdup(key);
  char* owned_path = strdup(path);
  char* name = strdup(ct_file_name(path));
  char* version = strdup("");
  if (!row || !owned_key || !owned_path || !name || !version) {
    free(row);
    free(owned_key);
    free(owned_path);
    free(name);
    free(version);
    pthread_mutex_unlock(&ct_load_lock);
    return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_backend_load: out of memory");
  }
  row->key = owned_key;
  row->info.path = owned_path;
  row->info.name = name;
  row->info.version = version;
  status = ct_load_into(row, path, index);
  pthread_mutex_unlock(&ct_load_lock);
  return status;
}
