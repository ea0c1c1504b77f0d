/* internal.h - declarations shared inside libctensor (registry, op definitions, CPU backend).
 * Nothing here is part of the ABI. */
#ifndef CTENSOR_INTERNAL_H_
#define CTENSOR_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>

#include "ctensor.h"
#include "ctensor_backend.h"
#include "ctensor_plugin.h"

#define CT_INTERNAL __attribute__((visibility("hidden")))

/* Most attributes and tensors any op declares; checked when ops are registered. */
#define CT_MAX_ATTRS 16
#define CT_MAX_CALL_TENSORS 256

/* Sizes of the versioned structs as ABI 1.0 defined them: the smallest struct_size accepted.
 * Fields a caller's struct lacks (it was built against an older header) read as defaults. */
#define CT_CONTEXT_SIZE_1_0 (offsetof(ct_context, allocator) + sizeof(const ct_allocator*))
#define CT_ALLOCATOR_SIZE_1_0 (offsetof(ct_allocator, allocate) + sizeof(void*))
#define CT_KERNEL_INFO_SIZE_1_0 (offsetof(ct_kernel_info, signature) + sizeof(const ct_dtype*))
#define CT_KERNEL_DEF_SIZE_1_0 (offsetof(ct_kernel_def, kernel_data) + sizeof(void*))

/* ----- errors (error.c) ----- */
CT_INTERNAL void ct_clear_error(void);

/* ----- dtypes (dtype.c) ----- */

/* The dtypes ctensor computes on, in NumPy's type order (the order promotion searches). */
typedef enum ct_dtype_id {
  CT_DT_BOOL,
  CT_DT_I8,
  CT_DT_U8,
  CT_DT_I16,
  CT_DT_U16,
  CT_DT_I32,
  CT_DT_U32,
  CT_DT_I64,
  CT_DT_U64,
  CT_DT_F16,
  CT_DT_BF16,
  CT_DT_F32,
  CT_DT_F64,
  CT_DT_C64,  /* complex64: two float32, real first */
  CT_DT_C128, /* complex128: two float64 */
  CT_DT_COUNT,
  CT_DT_INVALID = -1
} ct_dtype_id;

CT_INTERNAL ct_dtype_id ct_dtype_to_id(ct_dtype dtype);
CT_INTERNAL ct_dtype ct_dtype_from_id(ct_dtype_id id);
CT_INTERNAL bool ct_dtype_equal(ct_dtype a, ct_dtype b);
CT_INTERNAL int64_t ct_dtype_size(ct_dtype dtype);    /* bytes per element */
CT_INTERNAL bool ct_dtype_is_float(ct_dtype dtype);   /* float16/bfloat16/float32/float64 */
CT_INTERNAL bool ct_dtype_is_integer(ct_dtype dtype); /* signed or unsigned, not bool */
CT_INTERNAL bool ct_dtype_is_signed_integer(ct_dtype dtype);
CT_INTERNAL bool ct_dtype_is_bool(ct_dtype dtype);
CT_INTERNAL bool ct_dtype_is_complex(ct_dtype dtype); /* complex64/complex128 */
/* The real dtype of a complex one's parts (float32 for complex64); other dtypes unchanged. */
CT_INTERNAL ct_dtype ct_dtype_real_part(ct_dtype dtype);
/* "float32", or "<code 9 bits 8 lanes 1>" in a thread-local buffer for dtypes ctensor lacks. */
CT_INTERNAL const char* ct_dtype_describe(ct_dtype dtype);
/* "cpu", "cuda", "opencl", ... for a DLPack device type; "other" for one ctensor does not name. */
CT_INTERNAL const char* ct_device_name(int32_t device_type);

#define CT_DTYPE_BOOL_V ((ct_dtype){CT_DTYPE_BOOL, 8, 1})
#define CT_DTYPE_I64_V ((ct_dtype){CT_DTYPE_INT, 64, 1})
#define CT_DTYPE_U64_V ((ct_dtype){CT_DTYPE_UINT, 64, 1})
#define CT_DTYPE_F64_V ((ct_dtype){CT_DTYPE_FLOAT, 64, 1})

/* ----- tensor views (tensor.c) ----- */

/* Row-major strides (in elements) of `shape`, written to `strides`. */
CT_INTERNAL void ct_compact_strides(int32_t ndim, const int64_t* shape, int64_t* strides);
/* Stride of dim k of t, in elements, treating NULL strides as compact row-major. */
CT_INTERNAL int64_t ct_tensor_stride(const ct_tensor* t, int32_t k);
/* Number of elements (the view was validated, so it fits in int64). */
CT_INTERNAL int64_t ct_tensor_numel(const ct_tensor* t);
/* Address of the first element: data + byte_offset. */
static inline char* ct_tensor_base(const ct_tensor* t) {
  return (char*)t->data + t->byte_offset;
}
/* Names a tensor in error messages ("add: input 'x1'", "concat: input 'arrays'[2]"). Formatted
 * only when a message is written, so the success path does no string work. */
typedef struct ct_tensor_label {
  const char* op;   /* operator name */
  const char* role; /* "input" or "output" */
  const char* name; /* parameter name */
  int32_t index;    /* position within a variadic parameter, or -1 */
} ct_tensor_label;
CT_INTERNAL const char* ct_label_text(const ct_tensor_label* label, char* buffer, size_t size);
/* Checks one view: NULL, ndim, extents, element/byte overflow, dtype known, data non-NULL when
 * non-empty (only with `need_data`: ct_op_infer reads no data, so its views may have none),
 * strides extent. */
CT_INTERNAL int ct_tensor_validate(const ct_tensor* t, const ct_tensor_label* label,
                                   bool need_data);
/* With data: the addresses of t's elements stay inside the address space (data + byte_offset
 * and the strides' reach do not wrap) and its first element is aligned to the dtype's alignment
 * (CT_ERROR_SIZE_OVERFLOW, CT_ERROR_INVALID_ARGUMENT). ct_tensor_validate calls it when it needs
 * data; plans call it again when their data pointers change. */
CT_INTERNAL int ct_tensor_validate_address(const ct_tensor* t, const ct_tensor_label* label);
/* True when t is compact row-major. */
CT_INTERNAL bool ct_tensor_is_contiguous(const ct_tensor* t);
/* Memory overlap checks used by dispatch. */
CT_INTERNAL bool ct_tensor_may_self_overlap(const ct_tensor* t);
CT_INTERNAL bool ct_tensors_may_overlap(const ct_tensor* a, const ct_tensor* b);
CT_INTERNAL bool ct_tensors_same_view(const ct_tensor* a, const ct_tensor* b);
/* Overflow-checked int64 arithmetic: store the result and return true, or return false on
 * overflow. */
CT_INTERNAL bool ct_checked_mul_i64(int64_t a, int64_t b, int64_t* out);
CT_INTERNAL bool ct_checked_add_i64(int64_t a, int64_t b, int64_t* out);
/* Saturating arithmetic on non-negative byte and element counts (workspace and scratch sizes):
 * CT_SIZE_TOO_LARGE (INT64_MAX) stands for "does not fit" and stays so through later steps, so a
 * size formula is written plainly and checked once at its end. */
#define CT_SIZE_TOO_LARGE INT64_MAX
static inline int64_t ct_size_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) || r == CT_SIZE_TOO_LARGE ? CT_SIZE_TOO_LARGE : r;
}
static inline int64_t ct_size_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) || r == CT_SIZE_TOO_LARGE ? CT_SIZE_TOO_LARGE : r;
}
/* ceil(a / b) for a >= 0 and b > 0, without forming a + b - 1 (which overflows for a b taken
 * from an attribute, such as a stride of INT64_MAX). */
static inline int64_t ct_ceil_div(int64_t a, int64_t b) {
  return a > 0 ? (a - 1) / b + 1 : 0;
}
/* a rounded up to a multiple of m (m > 0). */
static inline int64_t ct_size_round_up(int64_t a, int64_t m) {
  const int64_t r = ct_size_add(a, m - 1);
  return r == CT_SIZE_TOO_LARGE ? r : r / m * m;
}

/* ----- attributes (attrs.c) ----- */

/* Fills resolved[0..schema->num_attrs) from the schema's defaults and the caller's attributes. */
CT_INTERNAL int ct_attrs_resolve(const ct_op_schema* schema, const ct_attr* attrs,
                                 int32_t num_attrs, ct_attr_value* resolved);
/* Index of the attribute called `name` in the schema, or -1. */
CT_INTERNAL int32_t ct_schema_attr_index(const ct_op_schema* schema, const char* name);

/* ----- operator definitions (ops/) ----- */

/* What an infer function sees: validated inputs and resolved attributes. */
typedef struct ct_infer_call {
  const ct_op_schema* schema;
  const ct_tensor* const* inputs; /* NULL entries for absent optional inputs */
  int32_t num_inputs;
  const ct_attr_value* attrs; /* one per schema attribute */
} ct_infer_call;

/* Computes output infos; `capacity` >= the schema's fixed output count, and for a variadic
 * output the function checks capacity itself. */
typedef int (*ct_infer_fn)(const ct_infer_call* call, ct_tensor_info* outputs, int32_t capacity,
                           int32_t* num_outputs);

/* An operator as defined in the op table: schema plus its device-independent infer. */
typedef struct ct_op_def {
  ct_op_schema schema;
  ct_infer_fn infer;
} ct_op_def;

/* The op table: every built-in operator (ops/op_list.h). */
#define CT_OP(name) extern const ct_op_def ct_op_def_##name;
#include "ops/op_list.h"
#undef CT_OP

/* ----- registry (registry.c) ----- */

/* A registered kernel. */
typedef struct ct_kernel_entry {
  ct_kernel_def def;   /* backend_name and signature point to owned copies */
  ct_dtype* signature; /* owned copy */
  uint64_t sequence;   /* registration order (the newest matching kernel wins) */
} ct_kernel_entry;

/* A kernel validated and copied, not yet visible to dispatch. */
typedef struct ct_staged_kernel {
  ct_op* op;
  ct_kernel_entry entry;
} ct_staged_kernel;

/* Kernel storage of one op: blocks only grow, older blocks stay reachable from newer ones. */
typedef struct ct_kernel_block {
  struct ct_kernel_block* previous;
  ct_kernel_entry entries[];
} ct_kernel_block;

struct ct_op {
  const ct_op_def* def;
  ct_kernel_block* kernel_block;
  ct_kernel_entry* kernels; /* kernel_block->entries */
  int32_t num_kernels;
  int32_t kernel_capacity;
  bool replaced; /* a kernel was replaced in place: entries are no longer in sequence order */
};

/* Makes sure built-in ops and kernels are registered; returns CT_OK or an error. */
CT_INTERNAL int ct_registry_init(void);
/* Validates a registration and copies it into `staged` (nothing is registered yet). */
CT_INTERNAL int ct_kernel_prepare(const ct_kernel_def* def, ct_staged_kernel* staged);
/* Frees what ct_kernel_prepare copied. */
CT_INTERNAL void ct_kernel_discard(ct_staged_kernel* staged);
/* Registers staged kernels, all or none (on failure they stay staged for the caller to
 * discard). A kernel with the same (op, device, signature, backend) as a registered one
 * replaces it. */
CT_INTERNAL int ct_registry_commit(ct_staged_kernel* kernels, int32_t count);
/* Finds the kernel for a device and a full dtype signature (one dtype per parameter; absent
 * optional inputs have bits == 0 and match anything): the newest registered one, or with a
 * `backend` name only that backend's. Fails with UNSUPPORTED_DEVICE or UNSUPPORTED_DTYPE. The
 * entry stays valid (entries are never freed). */
CT_INTERNAL int ct_registry_find_kernel(const ct_op* op, int32_t device_type, const char* backend,
                                        const ct_dtype* signature, int32_t signature_length,
                                        const ct_kernel_entry** kernel);
/* The position of op in ct_op_at order, or -1 when op is not a registry handle. */
CT_INTERNAL int32_t ct_op_index(const ct_op* op);
/* True when any kernel of op runs on device_type. */
CT_INTERNAL bool ct_registry_has_device(const ct_op* op, int32_t device_type);

/* ----- backends (backend_table.c, plugin_loader.c, device_memory.c) ----- */

/* One row of the backend table. Rows are never freed or changed once appended. */
typedef struct ct_backend_entry {
  ct_backend_info info;               /* strings owned by the row (path NULL for "cpu") */
  const char* key;                    /* the plugin's real path (or its path as given) */
  const ct_device_memory_api* memory; /* NULL: host memory, or no memory functions */
  void* plugin_data;                  /* handed back to the memory functions */
} ct_backend_entry;

/* Appends a row (the table takes ownership) and stores its index. */
CT_INTERNAL int ct_backend_table_append(ct_backend_entry* entry, int32_t* index);
/* The row loaded from `key`, or NULL. */
CT_INTERNAL const ct_backend_entry* ct_backend_table_find_key(const char* key, int32_t* index);
/* The loaded row called `name`, or NULL. */
CT_INTERNAL const ct_backend_entry* ct_backend_table_find_name(const char* name);
/* The newest loaded row serving `device_type`, or NULL. */
CT_INTERNAL const ct_backend_entry* ct_backend_table_find_device(int32_t device_type);

/* Size of ct_backend_info as ABI 1.0 defined it. */
#define CT_BACKEND_INFO_SIZE_1_0 (offsetof(ct_backend_info, abi_version) + sizeof(uint32_t))
/* Sizes of the plugin tables as plugin ABI 1.0 defined them. */
#define CT_PLUGIN_INFO_SIZE_1_0 (offsetof(ct_plugin_info, plugin_data) + sizeof(void*))
#define CT_DEVICE_MEMORY_API_SIZE_1_0 (offsetof(ct_device_memory_api, synchronize) + sizeof(void*))

/* ----- backends built into libctensor ----- */
/* The ct_plugin_init of every backend linked into the library; ct_registry_init runs each once,
 * as ct_backend_load runs a plugin's. capi knows them only through this table, which the linked
 * backend defines (the CPU backend: kernels/cpu/cpu_backend.c). */
CT_INTERNAL extern const ct_plugin_init_fn ct_builtin_backends[];
CT_INTERNAL extern const int32_t ct_builtin_backend_count;

/* The thread count CPU kernels use (ct_set_num_threads; 1 inside an OpenMP parallel region). */
CT_INTERNAL int ct_cpu_num_threads(void);

#endif /* CTENSOR_INTERNAL_H_ */
