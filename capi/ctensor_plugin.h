/*
 * ctensor_plugin.h - the ABI between libctensor and a backend plugin (a shared module).
 *
 * A plugin is built against the installed headers only; it does not link libctensor. It exports
 * two functions with C linkage:
 *
 *   uint32_t ct_plugin_abi_version(void);
 *       CT_PLUGIN_ABI_VERSION of the header it was built with. The host calls it first and
 *       refuses a plugin whose major version differs from its own (CT_ERROR_ABI_MISMATCH, the
 *       message names both versions), before calling anything else.
 *
 *   int ct_plugin_init(const ct_host_api* host, ct_plugin_info* info);
 *       Fills `info` (name, version, device type and count, memory functions) and registers its
 *       kernels through host->kernel_register. Returns CT_OK; or, when its device or driver is
 *       absent, records the reason with host->set_error and returns
 *       CT_ERROR_BACKEND_UNAVAILABLE (the host then skips it quietly and drops anything it
 *       registered); any other status marks the plugin failed. Called once per process.
 *
 * CT_PLUGIN_DEFINE_ABI_VERSION() defines the first function. Kernels report failures through
 * the host's set_error (keep the table in a static variable), never by printing or aborting.
 * The host never unloads a plugin, so pointers it hands out stay valid for the process.
 *
 * Build, for example:
 *   cc -shared -fPIC -o libmyplugin.so myplugin.c $(pkg-config --cflags ctensor)
 */
#ifndef CTENSOR_PLUGIN_H_
#define CTENSOR_PLUGIN_H_

#include "ctensor_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Major plugin ABI version: a plugin built for another major version is refused. */
#define CT_PLUGIN_ABI_MAJOR 1
/** Minor plugin ABI version: bumped when trailing fields are added to the tables below. */
#define CT_PLUGIN_ABI_MINOR 0
/** (major << 16) | minor, as ct_plugin_abi_version returns it. */
#define CT_PLUGIN_ABI_VERSION ((uint32_t)((CT_PLUGIN_ABI_MAJOR << 16) | CT_PLUGIN_ABI_MINOR))

/** Name of the version entry point, for dlsym. */
#define CT_PLUGIN_ABI_VERSION_SYMBOL "ct_plugin_abi_version"
/** Name of the init entry point, for dlsym. */
#define CT_PLUGIN_INIT_SYMBOL "ct_plugin_init"

#if defined(_WIN32)
#define CT_PLUGIN_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
#define CT_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define CT_PLUGIN_EXPORT
#endif

#ifdef __cplusplus
#define CT_PLUGIN_EXTERN_C extern "C"
#else
#define CT_PLUGIN_EXTERN_C
#endif

/** Defines ct_plugin_abi_version() returning the version of this header. */
#define CT_PLUGIN_DEFINE_ABI_VERSION()                                       \
  CT_PLUGIN_EXTERN_C CT_PLUGIN_EXPORT uint32_t ct_plugin_abi_version(void) { \
    return CT_PLUGIN_ABI_VERSION;                                            \
  }

/** What the host offers a plugin. Valid for the whole process. A plugin checks struct_size
 *  before using a field added after ABI 1.0. */
typedef struct ct_host_api {
  size_t struct_size;          /**< sizeof(ct_host_api) of the host */
  uint32_t abi_version;        /**< the host's CT_PLUGIN_ABI_VERSION */
  const char* library_version; /**< ct_version_string() of the host */
  /** ct_kernel_register: adds a kernel for (op, device, signature) under def->backend_name,
   *  which must be the plugin's own name (info->name). Kernels registered during
   *  ct_plugin_init are checked at once but take effect together when the init returns CT_OK;
   *  otherwise they are dropped. */
  int (*kernel_register)(const ct_kernel_def* def);
  /** ct_set_error: records this thread's message and returns `status`. */
  int (*set_error)(int status, const char* format, ...);
  /** ct_last_error: this thread's last message. */
  const char* (*last_error)(void);
  /** ct_op_find: an operator by name (to read its schema before registering). */
  int (*op_find)(const char* name, const ct_op** op);
  /** ct_op_get_schema. */
  int (*op_get_schema)(const ct_op* op, const ct_op_schema** schema);
} ct_host_api;

/** Memory functions of a device whose memory the host cannot touch directly (a GPU, an OpenCL
 *  device). `plugin_data` is ct_plugin_info.plugin_data. Each returns CT_OK or a status set
 *  through the host's set_error. They back ct_device_allocate, ct_device_free,
 *  ct_device_copy_from_host, ct_device_copy_to_host and ct_device_synchronize. */
typedef struct ct_device_memory_api {
  size_t struct_size; /**< sizeof(ct_device_memory_api) of the plugin */
  int (*allocate)(void* plugin_data, int32_t device_id, uint64_t bytes, void** data);
  int (*release)(void* plugin_data, int32_t device_id, void* data);
  int (*copy_from_host)(void* plugin_data, int32_t device_id, void* dst, uint64_t dst_offset,
                        const void* src, uint64_t bytes, void* stream);
  int (*copy_to_host)(void* plugin_data, int32_t device_id, void* dst, const void* src,
                      uint64_t src_offset, uint64_t bytes, void* stream);
  int (*synchronize)(void* plugin_data, int32_t device_id, void* stream);
} ct_device_memory_api;

/** What a plugin says about itself; the host zeroes it and sets struct_size, the plugin's init
 *  fills the rest (writing no field beyond struct_size). Strings and tables it points to must
 *  live as long as the process. */
typedef struct ct_plugin_info {
  size_t struct_size;                 /**< sizeof(ct_plugin_info) of the host */
  const char* name;                   /**< backend name, unique, e.g. "opencl" */
  const char* version;                /**< the plugin's own version string */
  int32_t device_type;                /**< ct_device_type its kernels run on */
  int32_t device_count;               /**< devices of that type it found */
  const ct_device_memory_api* memory; /**< NULL when its memory is host memory (a CPU plugin) */
  void* plugin_data;                  /**< handed back to the memory functions */
} ct_plugin_info;

/** Type of ct_plugin_abi_version. */
typedef uint32_t (*ct_plugin_abi_version_fn)(void);
/** Type of ct_plugin_init. */
typedef int (*ct_plugin_init_fn)(const ct_host_api* host, ct_plugin_info* info);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTENSOR_PLUGIN_H_ */
