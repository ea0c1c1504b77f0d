/*
 * ctensor.h - the public C ABI of ctensor, a framework-neutral operator library.
 *
 * Callers own every byte: tensors are non-owning views (byte-identical to DLPack's DLTensor),
 * scratch memory is passed in by the caller, and the few operators whose output size depends on
 * the data ask the caller's allocator for their outputs. Every function returns a status
 * (CT_OK == 0, a negative ct_status otherwise) and leaves a message readable with
 * ct_last_error() on the calling thread. The library never aborts, exits or prints.
 *
 * ABI promises:
 *   - enum values are explicit and only ever appended;
 *   - structs that may grow start with `struct_size` (set it to sizeof(the struct) as you compiled
 *     it) and only ever gain fields at their end; structs without it (tensor views, dtypes,
 *     attribute values, parameter and attribute schemas, tensor infos) have a fixed layout
 *     forever, since callers index arrays of them; their `reserved` fields are zero;
 *   - every extent, stride, count and byte size is 64-bit.
 *
 * The header is C99, self-contained and usable from C++.
 */
#ifndef CTENSOR_H_
#define CTENSOR_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define CT_API __declspec(dllimport)
#elif defined(__GNUC__)
#define CT_API __attribute__((visibility("default")))
#else
#define CT_API
#endif

/* ---------------------------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------------------------- */

/** Major ABI version: bumped only when a binary built against an older header would break. */
#define CT_ABI_VERSION_MAJOR 1
/** Minor ABI version: bumped when functions, enum values or trailing struct fields are added. */
#define CT_ABI_VERSION_MINOR 3

/** The ABI version of the loaded library, as (major << 16) | minor. Compare the major part with
 *  CT_ABI_VERSION_MAJOR before relying on anything else. */
CT_API uint32_t ct_abi_version(void);

/** The library's release version, e.g. "0.1.0". The string is static. */
CT_API const char* ct_version_string(void);

/* ---------------------------------------------------------------------------------------------
 * Tensor views (DLPack-compatible)
 *
 * ct_device, ct_dtype and ct_tensor have exactly the layout of DLPack's DLDevice, DLDataType and
 * DLTensor, and the codes below are DLPack's. When <dlpack/dlpack.h> is included before this
 * header, the ct_ names are typedefs of DLPack's own types, so a DLTensor* is passed as is.
 * ------------------------------------------------------------------------------------------- */

/** Device kinds: DLPack's DLDeviceType values. */
typedef enum ct_device_type {
  CT_DEVICE_CPU = 1,           /**< host memory */
  CT_DEVICE_CUDA = 2,          /**< CUDA device memory */
  CT_DEVICE_CUDA_HOST = 3,     /**< pinned host memory from cudaMallocHost */
  CT_DEVICE_OPENCL = 4,        /**< OpenCL: `data` is a cl_mem */
  CT_DEVICE_VULKAN = 7,        /**< Vulkan buffer */
  CT_DEVICE_METAL = 8,         /**< Metal buffer */
  CT_DEVICE_VPI = 9,           /**< Verilog simulator buffer */
  CT_DEVICE_ROCM = 10,         /**< ROCm/HIP device memory */
  CT_DEVICE_ROCM_HOST = 11,    /**< pinned host memory from hipMallocHost */
  CT_DEVICE_EXT_DEV = 12,      /**< reserved for extension devices */
  CT_DEVICE_CUDA_MANAGED = 13, /**< CUDA managed (unified) memory */
  CT_DEVICE_ONEAPI = 14,       /**< oneAPI unified shared memory */
  CT_DEVICE_WEBGPU = 15,       /**< WebGPU buffer */
  CT_DEVICE_HEXAGON = 16       /**< Qualcomm Hexagon DSP */
} ct_device_type;

/** Type codes: DLPack's DLDataTypeCode values. */
typedef enum ct_dtype_code {
  CT_DTYPE_INT = 0,           /**< signed two's-complement integer */
  CT_DTYPE_UINT = 1,          /**< unsigned integer */
  CT_DTYPE_FLOAT = 2,         /**< IEEE-754 binary floating point (16, 32, 64 bits) */
  CT_DTYPE_OPAQUE_HANDLE = 3, /**< opaque handle; never computed on */
  CT_DTYPE_BFLOAT = 4,        /**< bfloat16 */
  CT_DTYPE_COMPLEX = 5,       /**< complex of two IEEE floats (64 = 2x32, 128 = 2x64 bits) */
  CT_DTYPE_BOOL = 6           /**< boolean, 8 bits, 0 or 1 */
} ct_dtype_code;

#if defined(DLPACK_DLPACK_H_)
typedef DLDevice ct_device;
typedef DLDataType ct_dtype;
typedef DLTensor ct_tensor;
#else
/** Where a tensor's memory lives (DLPack's DLDevice). */
typedef struct ct_device {
  int32_t device_type; /**< a ct_device_type value */
  int32_t device_id;   /**< index of the device of that kind; 0 for the CPU */
} ct_device;

/** Element type (DLPack's DLDataType). ctensor computes on lanes == 1 only. */
typedef struct ct_dtype {
  uint8_t code;   /**< a ct_dtype_code value */
  uint8_t bits;   /**< bits per element: 8, 16, 32, 64 or 128 */
  uint16_t lanes; /**< vector lanes; 1 for scalars */
} ct_dtype;

/** A non-owning view of an n-dimensional array (DLPack's DLTensor, byte for byte).
 *  The element at index (i0, ..., in-1) sits at
 *  (char*)data + byte_offset + sizeof(element) * sum(ik * strides[k]).
 *  Rules every call checks (as cuDNN and cuBLAS do, kernels read elements through typed
 *  pointers): a non-empty view's first element, data + byte_offset, is aligned to its element
 *  type (the element's size, a complex type's part size, at most 8 bytes), otherwise
 *  CT_ERROR_INVALID_ARGUMENT; byte_offset is at most INT64_MAX, and no element's address wraps
 *  around the address space (CT_ERROR_SIZE_OVERFLOW). Copy misaligned data to an aligned buffer
 *  first. */
typedef struct ct_tensor {
  void* data;           /**< base pointer (a cl_mem for OpenCL); may be NULL when a dim is 0 */
  ct_device device;     /**< device of `data` */
  int32_t ndim;         /**< number of dimensions, 0 to CT_MAX_NDIM */
  ct_dtype dtype;       /**< element type */
  int64_t* shape;       /**< ndim extents, each >= 0; may be NULL when ndim == 0 */
  int64_t* strides;     /**< ndim strides in elements (zero and negative allowed on inputs);
                             NULL means compact row-major */
  uint64_t byte_offset; /**< bytes from `data` to the first element */
} ct_tensor;
#endif

/** Most dimensions a tensor may have (as NumPy 2). */
#define CT_MAX_NDIM 64

/* ---------------------------------------------------------------------------------------------
 * Status and errors
 * ------------------------------------------------------------------------------------------- */

/** Status returned by every function. One code per kind of failure. */
typedef enum ct_status {
  CT_OK = 0,                          /**< success */
  CT_ERROR_INVALID_ARGUMENT = -1,     /**< a value is out of its domain (bad axis, bad mode...) */
  CT_ERROR_UNSUPPORTED_DTYPE = -2,    /**< no kernel for these element types */
  CT_ERROR_UNSUPPORTED_DEVICE = -3,   /**< no kernel for this device */
  CT_ERROR_CONTIGUOUS_REQUIRED = -4,  /**< the kernel needs a compact input */
  CT_ERROR_OUT_OF_MEMORY = -5,        /**< an allocation (or the caller's allocator) failed */
  CT_ERROR_BACKEND = -6,              /**< the device runtime reported an error */
  CT_ERROR_UNKNOWN_OP = -7,           /**< no operator of that name */
  CT_ERROR_ABI_MISMATCH = -8,         /**< struct_size or version not understood */
  CT_ERROR_SHAPE_MISMATCH = -9,       /**< shapes do not broadcast or do not fit the op */
  CT_ERROR_UNKNOWN_ATTRIBUTE = -10,   /**< the op has no attribute of that name */
  CT_ERROR_ATTRIBUTE_TYPE = -11,      /**< an attribute value has the wrong type */
  CT_ERROR_DEVICE_MISMATCH = -12,     /**< tensors of one call live on different devices */
  CT_ERROR_NULL_POINTER = -13,        /**< a required pointer is NULL */
  CT_ERROR_INVALID_SHAPE = -14,       /**< negative extent, ndim out of range, bad strides */
  CT_ERROR_SIZE_OVERFLOW = -15,       /**< element or byte count does not fit in int64 */
  CT_ERROR_ALIASING = -16,            /**< an output overlaps itself, another output or an input */
  CT_ERROR_WORKSPACE_TOO_SMALL = -17, /**< the workspace is smaller or less aligned than asked */
  CT_ERROR_WRONG_ARITY = -18,         /**< wrong number of inputs or outputs */
  CT_ERROR_BACKEND_UNAVAILABLE = -19  /**< a backend's device or driver is absent on this machine */
} ct_status;

/** The message of the last failing call made on this thread ("" if none). The pointer stays
 *  valid until the next ctensor call on this thread. */
CT_API const char* ct_last_error(void);

/** A static, stable name for a status value, e.g. "CT_ERROR_SHAPE_MISMATCH". */
CT_API const char* ct_status_name(int status);

/* ---------------------------------------------------------------------------------------------
 * Attributes
 * ------------------------------------------------------------------------------------------- */

/** Attribute value types. */
typedef enum ct_attr_type {
  CT_ATTR_INT = 0,        /**< int64_t, in `value.i` */
  CT_ATTR_FLOAT = 1,      /**< double, in `value.f` */
  CT_ATTR_BOOL = 2,       /**< 0 or 1, in `value.b` */
  CT_ATTR_STRING = 3,     /**< NUL-terminated UTF-8, in `value.s` */
  CT_ATTR_INT_LIST = 4,   /**< `count` int64_t at `value.ints` */
  CT_ATTR_FLOAT_LIST = 5, /**< `count` doubles at `value.floats` */
  CT_ATTR_DTYPE = 6,      /**< a ct_dtype, in `value.dtype` */
  CT_ATTR_NONE = 7        /**< no value (Python's None); accepted where the schema is nullable */
} ct_attr_type;

/** A typed attribute value. A caller may pass an INT where the schema wants an INT_LIST (a list
 *  of one) or a FLOAT; no other type converts. */
typedef struct ct_attr_value {
  int32_t type;     /**< a ct_attr_type */
  int32_t reserved; /**< zero */
  int64_t count;    /**< number of list elements; 0 for scalars */
  union {
    int64_t i;
    double f;
    int64_t b;
    const char* s;
    const int64_t* ints;
    const double* floats;
    ct_dtype dtype;
  } value; /**< the payload selected by `type` */
} ct_attr_value;

/** A named attribute, as a caller passes it. Attributes not passed take the schema's default;
 *  unknown names and mistyped values are errors. The memory is only read during the call. */
typedef struct ct_attr {
  const char* name;    /**< attribute name from the op's schema */
  ct_attr_value value; /**< the value */
} ct_attr;

/* ---------------------------------------------------------------------------------------------
 * Operators and their schemas
 * ------------------------------------------------------------------------------------------- */

/** An operator: a schema plus kernels per device. Handles live as long as the library. */
typedef struct ct_op ct_op;

/** The three operator categories, by what the caller must provide. */
typedef enum ct_op_category {
  CT_OP_SHAPE_STATIC = 0, /**< caller allocates outputs from ct_op_infer, then runs */
  CT_OP_WORKSPACE = 1,    /**< as SHAPE_STATIC, plus scratch memory sized by ct_op_workspace */
  CT_OP_DYNAMIC = 2       /**< output extents depend on the data: the kernel calls the caller's
                               allocator once per output (it may also ask for workspace) */
} ct_op_category;

/** Operator flags (bit set in ct_op_schema.flags). */
typedef enum ct_op_flag {
  CT_OP_FLAG_ELEMENTWISE = 1 << 0,   /**< output element i depends on input element i only */
  CT_OP_FLAG_BROADCASTING = 1 << 1,  /**< inputs broadcast against each other (NumPy rules) */
  CT_OP_FLAG_INPLACE = 1 << 2,       /**< an output may be exactly the same view as an input */
  CT_OP_FLAG_DETERMINISTIC = 1 << 3, /**< bitwise identical results run to run */
  CT_OP_FLAG_GRAPH_SAFE = 1 << 4     /**< safe under CUDA graph capture (no host sync/alloc) */
} ct_op_flag;

/** Input/output parameter flags (bit set in ct_param_schema.flags). */
typedef enum ct_param_flag {
  CT_PARAM_OPTIONAL = 1 << 0, /**< the tensor may be absent (pass NULL) */
  CT_PARAM_VARIADIC = 1 << 1  /**< last parameter only: stands for zero or more tensors */
} ct_param_flag;

/** Attribute flags (bit set in ct_attr_schema.flags). */
typedef enum ct_attr_flag {
  CT_ATTR_REQUIRED = 1 << 0, /**< the caller must pass it; `default_value` is meaningless */
  CT_ATTR_NULLABLE = 1 << 1  /**< CT_ATTR_NONE is a valid value */
} ct_attr_flag;

/** One input or output of an operator. */
typedef struct ct_param_schema {
  const char* name; /**< e.g. "x1", "out" */
  const char* doc;  /**< one line */
  uint32_t flags;   /**< ct_param_flag bits */
  int32_t reserved; /**< zero */
} ct_param_schema;

/** One attribute of an operator. */
typedef struct ct_attr_schema {
  const char* name;            /**< e.g. "axis" */
  const char* doc;             /**< one line */
  int32_t type;                /**< ct_attr_type the kernel receives */
  uint32_t flags;              /**< ct_attr_flag bits */
  ct_attr_value default_value; /**< used when the caller does not pass it */
} ct_attr_schema;

/** What an operator is, as its registry entry says. */
typedef struct ct_op_schema {
  size_t struct_size;             /**< sizeof(ct_op_schema) of the library */
  const char* name;               /**< unique name, e.g. "matmul" */
  const char* doc;                /**< what it computes, a few lines */
  int32_t category;               /**< ct_op_category */
  uint32_t flags;                 /**< ct_op_flag bits */
  int32_t num_inputs;             /**< entries in `inputs`; 0 for sources (arange, random_*) */
  int32_t num_outputs;            /**< entries in `outputs` */
  int32_t num_attrs;              /**< entries in `attrs` */
  int32_t reserved;               /**< zero */
  const ct_param_schema* inputs;  /**< input parameters in call order (NULL when none) */
  const ct_param_schema* outputs; /**< output parameters in call order */
  const ct_attr_schema* attrs;    /**< attributes; kernels receive them in this order */
} ct_op_schema;

/** Number of registered operators. */
CT_API int ct_op_count(int32_t* count);

/** The operator at `index` (0 <= index < count), in name order. */
CT_API int ct_op_at(int32_t index, const ct_op** op);

/** Looks an operator up by name; CT_ERROR_UNKNOWN_OP if there is none. */
CT_API int ct_op_find(const char* name, const ct_op** op);

/** The schema of an operator. The pointer lives as long as the library. */
CT_API int ct_op_get_schema(const ct_op* op, const ct_op_schema** schema);

/** One registered kernel of an operator: the device it runs on and the dtypes it takes. */
typedef struct ct_kernel_info {
  size_t struct_size;        /**< set by the caller to sizeof(ct_kernel_info) */
  const char* backend;       /**< name of the backend that registered it, e.g. "cpu" */
  int32_t device_type;       /**< ct_device_type */
  int32_t signature_length;  /**< one dtype per input parameter then per output parameter */
  const ct_dtype* signature; /**< lives as long as the kernel */
} ct_kernel_info;

/** Number of kernels registered for an operator, over all devices. */
CT_API int ct_op_kernel_count(const ct_op* op, int32_t* count);

/** Describes kernel `index` of an operator (0 <= index < count). */
CT_API int ct_op_kernel_info(const ct_op* op, int32_t index, ct_kernel_info* info);

/** Writes the schema and kernels of `op` as JSON (format in docs/schema-json.md). Pass op NULL to
 *  describe the whole registry. Like snprintf: writes at most `capacity` bytes including the NUL
 *  and always stores the full length (without NUL) in `*length`. */
CT_API int ct_op_schema_json(const ct_op* op, char* buffer, size_t capacity, size_t* length);

/* ---------------------------------------------------------------------------------------------
 * Gradients (added in ABI 1.2): each operator's vector-Jacobian product as a small program of
 * registered operators, so that a framework builds autograd for any op from its entry alone.
 *
 * An entry is a list of steps. Each step calls a registered op on values taken from the forward
 * call (its inputs, its outputs, the cotangents of its outputs) or from earlier steps, with
 * attributes copied from the forward call or given as constants. `input_grads` then says which
 * value is the cotangent of each forward input. To run an entry for the inputs that need a
 * cotangent, run (in order) the steps those values depend on; every step output has the shape
 * and dtype its op's ct_op_infer gives, and each input's cotangent has that input's shape and
 * dtype. Entries describe floating-point calls: integer and bool tensors take no cotangent.
 * Subgradients follow PyTorch (relu'(0) = 0, abs'(0) = 0, max ties as torch); `note` says so
 * where it applies. docs/gradients.md lists every entry.
 * ------------------------------------------------------------------------------------------- */

/** Where a value of a gradient program comes from. */
typedef enum ct_grad_source {
  CT_GRAD_NONE = 0,      /**< no value: an absent optional input, or no cotangent */
  CT_GRAD_INPUT = 1,     /**< forward input parameter `index` (the whole list when variadic) */
  CT_GRAD_OUTPUT = 2,    /**< forward output parameter `index` */
  CT_GRAD_COTANGENT = 3, /**< the cotangent of forward output `index` (its shape and dtype) */
  CT_GRAD_STEP = 4       /**< output parameter `output` of step `index` */
} ct_grad_source;

/** One value of a gradient program. */
typedef struct ct_grad_value {
  int32_t source;   /**< a ct_grad_source */
  int32_t index;    /**< parameter or step index, as `source` says */
  int32_t output;   /**< for CT_GRAD_STEP: which output of the step; 0 otherwise */
  int32_t reserved; /**< zero */
} ct_grad_value;

/** Where a step's attribute value comes from. */
typedef enum ct_grad_attr_source {
  CT_GRAD_ATTR_FORWARD = 0,  /**< the forward call's resolved attribute number `index` */
  CT_GRAD_ATTR_CONSTANT = 1, /**< `value` */
  CT_GRAD_ATTR_DTYPE_OF = 2  /**< the dtype (a CT_ATTR_DTYPE) of forward input `index` */
} ct_grad_attr_source;

/** One attribute passed to a step. Attributes a step does not list take their defaults. */
typedef struct ct_grad_attr {
  const char* name;    /**< the step op's attribute name */
  int32_t source;      /**< a ct_grad_attr_source */
  int32_t index;       /**< forward attribute or input index, as `source` says */
  ct_attr_value value; /**< for CT_GRAD_ATTR_CONSTANT */
} ct_grad_attr;

/** One call of a gradient program. */
typedef struct ct_grad_step {
  const ct_op* op;             /**< the registered operator called */
  int32_t num_inputs;          /**< the op's input parameter count */
  int32_t num_attrs;           /**< entries in `attrs` */
  const ct_grad_value* inputs; /**< one per input parameter (CT_GRAD_NONE: absent optional) */
  const ct_grad_attr* attrs;   /**< attributes passed */
  int32_t num_outputs;         /**< the op's output parameter count */
  int32_t reserved;            /**< zero */
} ct_grad_step;

/** The gradient entry of an operator. */
typedef struct ct_gradient {
  size_t struct_size;               /**< sizeof(ct_gradient) of the library */
  const char* formula;              /**< the program as text ("" when not differentiable) */
  const char* note;                 /**< subgradient choices, or why the op is not differentiable */
  int32_t differentiable;           /**< 1 when some input takes a cotangent */
  int32_t num_steps;                /**< entries in `steps` */
  const ct_grad_step* steps;        /**< the program, in order */
  int32_t num_inputs;               /**< the forward op's input parameter count */
  int32_t num_outputs;              /**< the forward op's output parameter count */
  const ct_grad_value* input_grads; /**< per forward input: its cotangent, or CT_GRAD_NONE
                                         when it is not differentiable */
  const uint8_t* saved_inputs;      /**< per forward input: 1 when the program reads it */
  const uint8_t* saved_outputs;     /**< per forward output: 1 when the program reads it */
  const uint8_t* output_takes_cotangent; /**< per forward output: 1 when the program reads its
                                              cotangent (pass zeros if the framework has none) */
} ct_gradient;

/** The gradient entry of `op` (every operator has one; check `differentiable`). The entry lives
 *  as long as the library. Added in ABI 1.2. */
CT_API int ct_op_gradient(const ct_op* op, const ct_gradient** gradient);

/* ---------------------------------------------------------------------------------------------
 * Running operators: infer, workspace, run
 * ------------------------------------------------------------------------------------------- */

/** Shape and type of an output, as ct_op_infer predicts it. Extents that depend on the data
 *  (dynamic ops) are -1. */
typedef struct ct_tensor_info {
  ct_dtype dtype;             /**< element type */
  int32_t ndim;               /**< number of dimensions */
  int64_t shape[CT_MAX_NDIM]; /**< the first `ndim` entries are meaningful */
} ct_tensor_info;

/** The caller's allocator, used by dynamic ops for their outputs. */
typedef struct ct_allocator {
  size_t struct_size; /**< sizeof(ct_allocator) */
  void* user_data;    /**< passed back to `allocate` */
  /** Allocates output `output_index` with the given dtype and shape, compact row-major, on the
   *  given device, and stores its base pointer in `*data` (NULL is fine for zero elements).
   *  Called exactly once per output; the memory belongs to the caller, also when the run then
   *  fails. Returns CT_OK, or a negative ct_status that the run returns in turn. */
  int (*allocate)(void* user_data, int32_t output_index, const ct_tensor_info* info,
                  int32_t device_type, int32_t device_id, void** data);
} ct_allocator;

/** How a call runs: stream, scratch memory and allocator. Pass NULL for all defaults. */
typedef struct ct_context {
  size_t struct_size;            /**< sizeof(ct_context) */
  void* stream;                  /**< cudaStream_t / cl_command_queue; NULL: default; CPU: unused */
  void* workspace;               /**< scratch of at least the size ct_op_workspace asked for */
  uint64_t workspace_size;       /**< bytes at `workspace` */
  const ct_allocator* allocator; /**< required by CT_OP_DYNAMIC ops */
  /** Name of the backend whose kernel must run the call (ct_backend_info.name, e.g. "cpu");
   *  NULL: the kernel registered last for (op, device, signature), so that a plugin loaded later
   *  overrides a built-in kernel. With a name and no kernel of that backend for the call, the
   *  run fails with CT_ERROR_UNSUPPORTED_DTYPE (or _DEVICE) and never falls back to another.
   *  Added in ABI 1.0; a context whose struct_size ends before it means NULL. */
  const char* backend;
} ct_context;

/** Predicts the outputs of `op` from the inputs' shapes and dtypes and the attributes; never
 *  reads tensor data: an input's data may be NULL even when it has elements (its layout is
 *  still checked; ct_op_workspace and ct_op_run require data for non-empty views). `outputs`
 *  has room for `capacity` entries; `*num_outputs` receives the count (variadic outputs count
 *  one each). Optional inputs that are absent are NULL entries in `inputs`. An output whose
 *  non-zero extents have more bytes than int64 counts is CT_ERROR_SIZE_OVERFLOW, so that no
 *  caller sizes an allocation from a wrapped product. */
CT_API int ct_op_infer(const ct_op* op, const ct_tensor* const* inputs, int32_t num_inputs,
                       const ct_attr* attrs, int32_t num_attrs, ct_tensor_info* outputs,
                       int32_t capacity, int32_t* num_outputs);

/** Scratch memory the kernel for these tensors will need: `*bytes` (0 when none) aligned to
 *  `*alignment`. Outputs may be NULL/0 for dynamic ops. On the CPU only CT_OP_WORKSPACE and
 *  CT_OP_DYNAMIC ops' kernels ask for scratch; a device plugin's kernel may ask for it whatever
 *  the op's category (a vendor library's scan, say), so callers on a device ask for every op,
 *  and ct_op_run refuses a call without it (CT_ERROR_WORKSPACE_TOO_SMALL, naming the size). */
CT_API int ct_op_workspace(const ct_op* op, const ct_tensor* const* inputs, int32_t num_inputs,
                           const ct_tensor* const* outputs, int32_t num_outputs,
                           const ct_attr* attrs, int32_t num_attrs, uint64_t* bytes,
                           uint64_t* alignment);

/** As ct_op_workspace, for the kernel ct_op_run picks with this context (its `backend`
 *  field); context NULL gives what ct_op_workspace gives. */
CT_API int ct_op_workspace_with_context(const ct_op* op, const ct_tensor* const* inputs,
                                        int32_t num_inputs, const ct_tensor* const* outputs,
                                        int32_t num_outputs, const ct_attr* attrs,
                                        int32_t num_attrs, const ct_context* context,
                                        uint64_t* bytes, uint64_t* alignment);

/** Runs `op`. Outputs must have the shapes and dtypes ct_op_infer gives and must not overlap
 *  each other or themselves, nor overlap an input unless they are exactly the same view and
 *  the op has CT_OP_FLAG_INPLACE. Dynamic ops take no outputs (pass NULL, 0) and hand theirs out
 *  through context->allocator. On any error, outputs are left untouched where the error could
 *  be detected before computing (all argument errors are). */
CT_API int ct_op_run(const ct_op* op, const ct_tensor* const* inputs, int32_t num_inputs,
                     const ct_tensor* const* outputs, int32_t num_outputs, const ct_attr* attrs,
                     int32_t num_attrs, const ct_context* context);

/* ---------------------------------------------------------------------------------------------
 * Plans: a call checked once and run many times (as cuDNN execution plans and XNNPACK's
 * create/setup/run)
 * ------------------------------------------------------------------------------------------- */

/** A checked call of one operator on fixed tensor layouts: the kernel, the views (shapes and
 *  strides copied), the resolved attributes (copied) and the context. Opaque; added in ABI 1.1. */
typedef struct ct_plan ct_plan;

/** Checks a call exactly as ct_op_run does (and fails with the same statuses and messages),
 *  without running it, and stores the result in `*plan` (NULL on failure). The plan copies the
 *  views' shapes and strides and the attributes; it keeps the data pointers, the context's
 *  stream, workspace and allocator as they are, and that memory must stay valid while the plan
 *  runs. A context's workspace must already have the size and alignment the kernel asks for
 *  (ct_op_workspace_with_context). CT_ERROR_OUT_OF_MEMORY when the plan cannot be allocated.
 *  Added in ABI 1.1. */
CT_API int ct_plan_create(const ct_op* op, const ct_tensor* const* inputs, int32_t num_inputs,
                          const ct_tensor* const* outputs, int32_t num_outputs,
                          const ct_attr* attrs, int32_t num_attrs, const ct_context* context,
                          ct_plan** plan);

/** Points the plan at other buffers of the same layouts: `data[i]` for input i, then
 *  `data[num_inputs + j]` for output j (`count` = inputs + outputs as created; a NULL entry
 *  keeps that tensor's pointer; an absent optional input ignores its entry). The aliasing rules
 *  of ct_op_run are checked again; on any error the plan is left as it was. Read-only memory
 *  cannot be detected here: the caller vouches that outputs are writable. Added in ABI 1.1. */
CT_API int ct_plan_set_data(ct_plan* plan, void* const* data, int32_t count);

/** Runs the plan's call: the kernel alone, with no further checks. A plan runs on one thread at
 *  a time (its workspace is shared between runs). Added in ABI 1.1. */
CT_API int ct_plan_run(const ct_plan* plan);

/** Frees a plan (NULL is a no-op). Added in ABI 1.1. */
CT_API void ct_plan_destroy(ct_plan* plan);

/** A number that grows whenever a kernel is registered or replaced (a plugin loaded,
 *  ct_kernel_register), starting at 0 before the built-in kernels are registered. A plan keeps
 *  the kernel it was created with, while ct_op_run picks the newest: a caller that caches plans
 *  creates them again when this number has changed. Added in ABI 1.1. */
CT_API uint64_t ct_registry_generation(void);

/* ---------------------------------------------------------------------------------------------
 * Profiling: a caller's begin/end callbacks around every kernel run (as cuDNN's and oneDNN's
 * hooks). With no profiler installed, a run pays one predictable branch.
 * ------------------------------------------------------------------------------------------- */

/** Where a profiled run comes from (ct_profile_event.source). */
typedef enum ct_profile_source {
  CT_PROFILE_OP_RUN = 0,  /**< ct_op_run */
  CT_PROFILE_PLAN_RUN = 1 /**< ct_plan_run */
} ct_profile_source;

/** One run, as the profiler's callbacks see it. The library owns it: it and everything it
 *  points to are valid only during the callback (begin and end of one run receive the same
 *  event, unchanged). Fields may be appended (check struct_size). Added in ABI 1.3. */
typedef struct ct_profile_event {
  size_t struct_size;              /**< sizeof(ct_profile_event) of the library */
  uint64_t call_id;                /**< unique per run in the process (from 1); begin and end of
                                        one run carry the same id */
  const ct_op* op;                 /**< the operator */
  const char* op_name;             /**< its name, e.g. "conv2d" (static) */
  const char* backend;             /**< the backend whose kernel runs, e.g. "cpu" (static) */
  ct_device device;                /**< the device the kernel runs on */
  int32_t source;                  /**< a ct_profile_source */
  int32_t num_inputs;              /**< entries in `inputs` (one per input tensor) */
  const ct_tensor* const* inputs;  /**< the call's validated input views (ndim, shape, dtype,
                                        strides, data); NULL entries for absent optional inputs */
  int32_t num_outputs;             /**< entries in `outputs` (0 for dynamic ops) */
  int32_t reserved;                /**< zero */
  const ct_tensor* const* outputs; /**< the call's output views (written by the time end runs) */
} ct_profile_event;

/** A caller's profiler: two callbacks around every ct_op_run and ct_plan_run that passed its
 *  checks (so the kernel, and with it the backend and device, is known). `begin` runs just
 *  before the kernel, `end` just after it with the status the run returns (also for calls
 *  whose outputs are all empty, where no kernel runs and the status is CT_OK); both run on the
 *  calling thread, and on several threads at once when several threads run ops. Either may be
 *  NULL. Calls that fail their checks are not reported. Runs started from inside a callback (a
 *  callback calling ct_op_run) are not reported either. Callbacks must not call
 *  ct_set_profiler. Added in ABI 1.3. */
typedef struct ct_profiler {
  size_t struct_size; /**< sizeof(ct_profiler) as the caller compiled it */
  void* user_data;    /**< passed back to both callbacks */
  /** Called before the kernel runs. */
  void (*begin)(void* user_data, const ct_profile_event* event);
  /** Called after the kernel returned `status` (CT_OK or a negative ct_status); the error
   *  message of a failed run is in ct_last_error() during the call. */
  void (*end)(void* user_data, const ct_profile_event* event, int status);
} ct_profiler;

/** Installs `profiler` for the whole process, replacing the one installed before; NULL
 *  uninstalls. The library copies the struct, so the caller's struct need not outlive the
 *  call (its user_data must stay valid while the profiler is installed). Thread-safe: runs on
 *  other threads go on meanwhile. A run reports to the profiler it found when it began, begin
 *  and end alike; ct_set_profiler returns once every run that began with the replaced profiler
 *  has ended, so that no callback of it runs afterwards and its user_data may be freed.
 *  CT_ERROR_ABI_MISMATCH when profiler->struct_size is smaller than ABI 1.3's ct_profiler;
 *  CT_ERROR_INVALID_ARGUMENT when called from inside a profiled run (a callback), which would
 *  wait for itself. Added in ABI 1.3. */
CT_API int ct_set_profiler(const ct_profiler* profiler);

/** Copies the installed profiler into `*profiler` (the caller sets profiler->struct_size; at
 *  most that many bytes are written and struct_size is kept); with none installed, user_data,
 *  begin and end are NULL. To nest profilers, save this and install it again afterwards.
 *  Added in ABI 1.3. */
CT_API int ct_get_profiler(ct_profiler* profiler);

/* ---------------------------------------------------------------------------------------------
 * Backends: the built-in CPU backend and plugins (shared modules, see ctensor_plugin.h)
 * ------------------------------------------------------------------------------------------- */

/** What became of a backend. */
typedef enum ct_backend_state {
  CT_BACKEND_LOADED = 0,      /**< its kernels are registered */
  CT_BACKEND_UNAVAILABLE = 1, /**< loaded, but its device or driver is absent: no kernels */
  CT_BACKEND_FAILED = 2       /**< not a plugin, wrong ABI major version, or its init failed */
} ct_backend_state;

/** One backend as the registry knows it. Strings live as long as the process. */
typedef struct ct_backend_info {
  size_t struct_size;   /**< set by the caller to sizeof(ct_backend_info) */
  const char* name;     /**< backend name ("cpu", "opencl", a vendor's); for a plugin that
                             failed before naming itself, its file name */
  const char* version;  /**< the backend's own version string ("" if unknown) */
  const char* path;     /**< file it was loaded from; NULL for the built-in CPU backend */
  int32_t state;        /**< a ct_backend_state */
  int32_t status;       /**< CT_OK, or the status its loading ended with */
  const char* reason;   /**< why it is unavailable or failed; "" when loaded */
  int32_t device_type;  /**< ct_device_type it serves (0 if unknown) */
  int32_t device_count; /**< devices of that type it found */
  uint32_t abi_version; /**< plugin ABI it was built for: (major << 16) | minor */
} ct_backend_info;

/** Loads the plugin at `path` (a shared module exporting the entry points of ctensor_plugin.h)
 *  and stores its index for ct_backend_get_info in `*index` (may be NULL). Every attempt gets
 *  an entry, failed ones included, so that introspection can say why. Loading the same path
 *  twice returns the first entry. Returns CT_OK when its kernels are registered;
 *  CT_ERROR_BACKEND_UNAVAILABLE when it reports its device or driver absent (it then
 *  registers nothing); CT_ERROR_ABI_MISMATCH when it was built for another major version (the
 *  message names both versions); CT_ERROR_BACKEND when it cannot be opened or its init
 *  fails. Plugins are never unloaded. Thread-safe: loads are serialised, and runs on other
 *  threads go on while a plugin initialises (its kernels appear together when it succeeds). */
CT_API int ct_backend_load(const char* path, int32_t* index);

/** Loads every plugin found on `search_path`: directories (each `*.so`, `*.dylib` or `*.dll`
 *  file in it) and files, separated by ':' (';' on Windows). NULL means the default: the
 *  entries of the environment variable CTENSOR_PLUGIN_PATH, then the directory
 *  `ctensor-plugins` beside the libctensor shared library, where the package installs its
 *  plugins. Files in a directory load in name order. Plugins that fail or are unavailable are
 *  recorded and skipped quietly; entries that do not exist are skipped. `*loaded` (may be NULL)
 *  receives how many plugins found on the path are loaded (loaded by an earlier call
 *  included). Returns CT_OK unless an argument is bad or memory runs out. */
CT_API int ct_backend_discover(const char* search_path, int32_t* loaded);

/** Number of entries in the backend table (the built-in CPU backend is entry 0). */
CT_API int ct_backend_count(int32_t* count);

/** Describes backend `index` (0 <= index < count). */
CT_API int ct_backend_get_info(int32_t index, ct_backend_info* info);

/* ---------------------------------------------------------------------------------------------
 * Device memory, through the backend that serves the device (plain host memory for the CPU)
 * ------------------------------------------------------------------------------------------- */

/** Allocates `bytes` on `device` and stores its handle (a host pointer, a device pointer or a
 *  cl_mem) in `*data`; 0 bytes may give NULL. CT_ERROR_UNSUPPORTED_DEVICE when no loaded
 *  backend manages memory for that device. */
CT_API int ct_device_allocate(ct_device device, uint64_t bytes, void** data);

/** Frees what ct_device_allocate returned (NULL is a no-op). */
CT_API int ct_device_free(ct_device device, void* data);

/** Copies `bytes` host bytes from `src` to `dst` + `dst_offset` on `device`, ordered on
 *  `stream` (NULL: the backend's default), and waits for the copy to finish. */
CT_API int ct_device_copy_from_host(ct_device device, void* dst, uint64_t dst_offset,
                                    const void* src, uint64_t bytes, void* stream);

/** Copies `bytes` from `src` + `src_offset` on `device` to host memory at `dst`, after all
 *  work queued on `stream` (NULL: the default), and waits for the copy to finish. */
CT_API int ct_device_copy_to_host(ct_device device, void* dst, const void* src, uint64_t src_offset,
                                  uint64_t bytes, void* stream);

/** Waits until all work queued on `stream` (NULL: the default) of `device` has finished. */
CT_API int ct_device_synchronize(ct_device device, void* stream);

/* ---------------------------------------------------------------------------------------------
 * Utilities
 * ------------------------------------------------------------------------------------------- */

/** Canonical name of a dtype ("float32", "bfloat16", "bool", ...), or NULL if ctensor has none. */
CT_API const char* ct_dtype_name(ct_dtype dtype);

/** Parses a canonical dtype name. */
CT_API int ct_dtype_from_name(const char* name, ct_dtype* dtype);

/** Most threads ct_set_num_threads accepts (an OpenMP runtime that cannot start the threads
 *  asked for aborts the process, so absurd counts are refused up front). */
#define CT_MAX_THREADS 1024

/** Number of threads CPU kernels use (OpenMP), and a way to change it (n <= 0: default; n above
 * CT_MAX_THREADS: CT_ERROR_INVALID_ARGUMENT, the setting unchanged). A kernel
 * called from inside an OpenMP parallel region of the caller runs on the calling thread alone
 * (there ct_get_num_threads reports 1). */
CT_API int ct_get_num_threads(int32_t* n);
CT_API int ct_set_num_threads(int32_t n);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTENSOR_H_ */
