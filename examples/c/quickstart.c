/*
 * quickstart.c - calling ctensor from C, one operator of each category.
 *
 *   cc quickstart.c $(pkg-config --cflags --libs ctensor) -o quickstart && ./quickstart
 *
 * (after `pip install .`, point pkg-config at the installed package:
 *  export PKG_CONFIG_PATH=$(python -m ctensor --pkgconfigdir) )
 *
 * ctensor never owns memory. Tensors are non-owning views of the caller's buffers (laid out
 * exactly like DLPack's DLTensor), and every call returns a status: CT_OK (0) or a negative
 * ct_status, with a message for the calling thread in ct_last_error(). The three operator
 * categories differ only in what the caller provides:
 *
 *   1. shape-static (add):       ct_op_infer -> allocate outputs -> ct_op_run
 *   2. workspace (conv2d):       as 1, plus ct_op_workspace -> allocate scratch -> ct_op_run
 *                                with the scratch in a ct_context
 *   3. dynamic (nonzero):        ct_op_run with a ct_allocator in the ct_context; the kernel
 *                                asks it for each output once it knows the size
 *
 * Each example compares its result with values worked out by hand and the program exits 0 only
 * when all of them are right.
 */
#include <ctensor.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------------------------- */

/* Every ctensor function returns a status. On failure, print which call failed, the status name
 * and the per-thread message, and jump to the example's cleanup label. */
#define CHECK(call)                                                            \
  do {                                                                         \
    const int status_ = (call);                                                \
    if (status_ != CT_OK) {                                                    \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call, \
              ct_status_name(status_), ct_last_error());                       \
      goto cleanup;                                                            \
    }                                                                          \
  } while (0)

/* Element types are DLPack's (code, bits, lanes) triples. */
static const ct_dtype FLOAT32 = {CT_DTYPE_FLOAT, 32, 1};
static const ct_dtype INT64 = {CT_DTYPE_INT, 64, 1};

/* A view of a compact row-major CPU buffer. `shape` must outlive the view: the view only points
 * at it. strides == NULL means compact row-major; byte_offset is 0. */
static ct_tensor cpu_view(void* data, ct_dtype dtype, int32_t ndim, int64_t* shape) {
  ct_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = CT_DEVICE_CPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = NULL;
  t.byte_offset = 0;
  return t;
}

/* Number of elements and bytes of an inferred output. */
static int64_t info_numel(const ct_tensor_info* info) {
  int64_t n = 1;
  for (int32_t k = 0; k < info->ndim; ++k) n *= info->shape[k];
  return n;
}

static size_t info_bytes(const ct_tensor_info* info) {
  return (size_t)info_numel(info) * (size_t)((info->dtype.bits * info->dtype.lanes + 7) / 8);
}

static void print_shape(const char* name, const ct_tensor_info* info) {
  printf("  %s: %s, shape (", name, ct_dtype_name(info->dtype));
  for (int32_t k = 0; k < info->ndim; ++k)
    printf("%s%lld", k ? ", " : "", (long long)info->shape[k]);
  printf(")\n");
}

static int same_floats(const float* got, const float* want, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    /* These results are exact in float32 (small integers and halves). */
    if (got[i] != want[i]) {
      fprintf(stderr, "  element %lld is %g, expected %g\n", (long long)i, got[i], want[i]);
      return 0;
    }
  }
  return 1;
}

/* ---------------------------------------------------------------------------------------------
 * 1. Shape-static: add with broadcasting
 *
 *    x1 (2, 3) + x2 (3,) -> out (2, 3): x2 is added to every row, as in NumPy.
 * ------------------------------------------------------------------------------------------- */
static int example_add(void) {
  /* Inputs: the caller's memory, described by views. */
  float x1_data[6] = {1, 2, 3, 4, 5, 6};
  float x2_data[3] = {10, 20, 30};
  int64_t x1_shape[2] = {2, 3};
  int64_t x2_shape[1] = {3};
  ct_tensor x1 = cpu_view(x1_data, FLOAT32, 2, x1_shape);
  ct_tensor x2 = cpu_view(x2_data, FLOAT32, 1, x2_shape);
  const ct_tensor* inputs[2] = {&x1, &x2};
  static const float expected[6] = {11, 22, 33, 14, 25, 36};

  /* Everything the cleanup label may touch is declared (and NULL) before the first CHECK. */
  const ct_op* add = NULL;
  ct_tensor_info info;
  int32_t num_outputs = 0;
  float* out_data = NULL;
  ct_tensor out;
  const ct_tensor* outputs[1] = {&out};
  int ok = 0;

  printf("add (shape-static, broadcasting)\n");

  /* Operators are looked up once by name; the handle lives as long as the library. */
  CHECK(ct_op_find("add", &add));

  /* infer: output shapes and dtypes from the inputs' shapes and dtypes alone (no data is read).
   * `capacity` (1) is the room in `info`; `num_outputs` says how many the op produces. */
  CHECK(ct_op_infer(add, inputs, 2, NULL, 0, &info, 1, &num_outputs));
  print_shape("out", &info);

  /* The caller allocates the output however it likes: here plain malloc. The output view may
   * point straight at info.shape. */
  out_data = malloc(info_bytes(&info));
  if (!out_data) goto cleanup;
  out = cpu_view(out_data, info.dtype, info.ndim, info.shape);

  /* run: no attributes (NULL, 0); NULL context = default stream, no workspace, no allocator. */
  CHECK(ct_op_run(add, inputs, 2, outputs, 1, NULL, 0, NULL));

  printf("  out = [[%g, %g, %g], [%g, %g, %g]]\n", out_data[0], out_data[1], out_data[2],
         out_data[3], out_data[4], out_data[5]);
  ok = num_outputs == 1 && info.ndim == 2 && info.shape[0] == 2 && info.shape[1] == 3 &&
       same_floats(out_data, expected, 6);

cleanup:
  free(out_data);
  return ok;
}

/* ---------------------------------------------------------------------------------------------
 * 2. Workspace-requesting: conv2d
 *
 *    input (1, 1, 4, 4) holding 1..16, weight (2, 1, 2, 2), bias (2,), stride 2:
 *    filter 0 sums each 2x2 block and adds 0.5; filter 1 takes top-left minus bottom-right.
 *
 *        input            filter 0     filter 1
 *     1  2  3  4          1 1          1  0
 *     5  6  7  8          1 1          0 -1
 *     9 10 11 12
 *    13 14 15 16
 *
 *    out[0] = [[1+2+5+6, 3+4+7+8], [9+10+13+14, 11+12+15+16]] + 0.5 = [[14.5, 22.5], [46.5, 54.5]]
 *    out[1] = [[1-6, 3-8], [9-14, 11-16]]                              = [[-5, -5], [-5, -5]]
 * ------------------------------------------------------------------------------------------- */
static int example_conv2d(void) {
  float input_data[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  float weight_data[8] = {1, 1, 1, 1, /* filter 0 */ 1, 0, 0, -1 /* filter 1 */};
  float bias_data[2] = {0.5f, 0.0f};
  int64_t input_shape[4] = {1, 1, 4, 4};
  int64_t weight_shape[4] = {2, 1, 2, 2};
  int64_t bias_shape[1] = {2};
  ct_tensor input = cpu_view(input_data, FLOAT32, 4, input_shape);
  ct_tensor weight = cpu_view(weight_data, FLOAT32, 4, weight_shape);
  ct_tensor bias = cpu_view(bias_data, FLOAT32, 1, bias_shape);
  /* bias is an optional input: pass NULL (or only two inputs) to leave it out. */
  const ct_tensor* inputs[3] = {&input, &weight, &bias};
  static const float expected[8] = {14.5f, 22.5f, 46.5f, 54.5f, -5, -5, -5, -5};

  /* Attributes are passed by name with a typed value; the ones not passed (padding, dilation,
   * groups) take the schema's defaults. An INT_LIST attribute also accepts a single INT. */
  static const int64_t stride[2] = {2, 2};
  ct_attr attrs[1];
  memset(attrs, 0, sizeof attrs);
  attrs[0].name = "stride";
  attrs[0].value.type = CT_ATTR_INT_LIST;
  attrs[0].value.count = 2;
  attrs[0].value.value.ints = stride;

  const ct_op* conv2d = NULL;
  ct_tensor_info info;
  int32_t num_outputs = 0;
  float* out_data = NULL;
  ct_tensor out;
  const ct_tensor* outputs[1] = {&out};
  uint64_t bytes = 0, alignment = 1;
  void* workspace = NULL;
  ct_context context;
  int ok = 0;

  printf("conv2d (workspace-requesting)\n");

  CHECK(ct_op_find("conv2d", &conv2d));
  CHECK(ct_op_infer(conv2d, inputs, 3, attrs, 1, &info, 1, &num_outputs));
  print_shape("out", &info);

  out_data = malloc(info_bytes(&info));
  if (!out_data) goto cleanup;
  out = cpu_view(out_data, info.dtype, info.ndim, info.shape);

  /* Ask how much scratch memory the kernel wants for exactly these tensors, and how aligned
   * (a power of two). Outputs may also be left out (NULL, 0): they are then inferred. */
  CHECK(ct_op_workspace(conv2d, inputs, 3, outputs, 1, attrs, 1, &bytes, &alignment));
  printf("  workspace: %llu bytes, aligned to %llu\n", (unsigned long long)bytes,
         (unsigned long long)alignment);

  /* The caller provides it, through a context. Always set struct_size: it tells the library
   * which version of the struct this program was compiled with. */
  memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;
  if (bytes > 0) {
    /* aligned_alloc wants a power-of-two alignment (at least sizeof(void*) to be portable) and
     * a size that is a multiple of it. */
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    const uint64_t rounded = (bytes + alignment - 1) / alignment * alignment;
    workspace = aligned_alloc((size_t)alignment, (size_t)rounded);
    if (!workspace) goto cleanup;
    context.workspace = workspace;
    context.workspace_size = rounded;
  }

  CHECK(ct_op_run(conv2d, inputs, 3, outputs, 1, attrs, 1, &context));

  printf("  out[0, 0] = [[%g, %g], [%g, %g]]\n", out_data[0], out_data[1], out_data[2],
         out_data[3]);
  printf("  out[0, 1] = [[%g, %g], [%g, %g]]\n", out_data[4], out_data[5], out_data[6],
         out_data[7]);
  ok = num_outputs == 1 && info.ndim == 4 && info.shape[0] == 1 && info.shape[1] == 2 &&
       info.shape[2] == 2 && info.shape[3] == 2 && same_floats(out_data, expected, 8);

cleanup:
  free(workspace); /* the scratch is only needed during the run */
  free(out_data);
  return ok;
}

/* ---------------------------------------------------------------------------------------------
 * 3. Dynamic-allocating: nonzero
 *
 *    x (2, 3) = [[0, 1.5, 0], [0, 0, -2]] has non-zero elements at (0, 1) and (1, 2), so nonzero
 *    returns two int64 index arrays (one per dimension, as numpy.nonzero): rows [0, 1] and
 *    columns [1, 2]. Their length is only known once the data has been read, so the kernel asks
 *    the caller's allocator for them.
 * ------------------------------------------------------------------------------------------- */

/* What our allocator records: every output it handed out, so that we can read and free them. */
typedef struct recorded_outputs {
  int32_t count;                    /* allocations made */
  void* data[CT_MAX_NDIM];          /* by output index; NULL until allocated */
  ct_tensor_info info[CT_MAX_NDIM]; /* dtype and final shape of each */
} recorded_outputs;

/* Called by the kernel once per output, with its final dtype and shape (compact row-major).
 * The memory is ours: we keep the pointer and free it ourselves, also when the run fails after
 * this call. A non-zero return makes the run fail with that status. */
static int record_allocate(void* user_data, int32_t output_index, const ct_tensor_info* info,
                           int32_t device_type, int32_t device_id, void** data) {
  recorded_outputs* rec = (recorded_outputs*)user_data;
  (void)device_id;
  if (device_type != CT_DEVICE_CPU) return CT_ERROR_UNSUPPORTED_DEVICE; /* we only do host memory */
  if (output_index < 0 || output_index >= CT_MAX_NDIM || rec->data[output_index])
    return CT_ERROR_INVALID_ARGUMENT;
  const size_t bytes = info_bytes(info);
  void* p = malloc(bytes > 0 ? bytes : 1); /* malloc(0) may return NULL; avoid the ambiguity */
  if (!p) return CT_ERROR_OUT_OF_MEMORY;
  rec->data[output_index] = p;
  rec->info[output_index] = *info;
  rec->count += 1;
  *data = p;
  return CT_OK;
}

static int example_nonzero(void) {
  float x_data[6] = {0, 1.5f, 0, 0, 0, -2};
  int64_t x_shape[2] = {2, 3};
  ct_tensor x = cpu_view(x_data, FLOAT32, 2, x_shape);
  const ct_tensor* inputs[1] = {&x};
  static const int64_t expected[2][2] = {{0, 1} /* rows */, {1, 2} /* columns */};

  const ct_op* nonzero = NULL;
  ct_tensor_info predicted[CT_MAX_NDIM];
  int32_t num_outputs = 0;
  recorded_outputs rec;
  ct_allocator allocator;
  ct_context context;
  uint64_t bytes = 0, alignment = 1;
  void* workspace = NULL;
  int ok = 0;
  memset(&rec, 0, sizeof rec);

  printf("nonzero (dynamic-allocating)\n");

  CHECK(ct_op_find("nonzero", &nonzero));

  /* infer still says how many outputs there will be and their dtypes; extents that depend on
   * the data are -1. */
  CHECK(ct_op_infer(nonzero, inputs, 1, NULL, 0, predicted, CT_MAX_NDIM, &num_outputs));
  printf("  infer: %d outputs of %s, extent %lld (known only after the run)\n", num_outputs,
         ct_dtype_name(predicted[0].dtype), (long long)predicted[0].shape[0]);

  memset(&allocator, 0, sizeof allocator);
  allocator.struct_size = sizeof allocator;
  allocator.user_data = &rec;
  allocator.allocate = record_allocate;

  memset(&context, 0, sizeof context);
  context.struct_size = sizeof context;
  context.allocator = &allocator;

  /* A dynamic kernel may want scratch memory too (outputs are not passed: NULL, 0). */
  CHECK(ct_op_workspace(nonzero, inputs, 1, NULL, 0, NULL, 0, &bytes, &alignment));
  if (bytes > 0) {
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    const uint64_t rounded = (bytes + alignment - 1) / alignment * alignment;
    workspace = aligned_alloc((size_t)alignment, (size_t)rounded);
    if (!workspace) goto cleanup;
    context.workspace = workspace;
    context.workspace_size = rounded;
  }

  /* Dynamic ops take no output views: pass NULL, 0. The outputs arrive through the allocator. */
  CHECK(ct_op_run(nonzero, inputs, 1, NULL, 0, NULL, 0, &context));

  ok = num_outputs == 2 && rec.count == 2 && rec.data[0] && rec.data[1];
  for (int32_t i = 0; ok && i < 2; ++i) {
    const ct_tensor_info* info = &rec.info[i];
    const int64_t* index = (const int64_t*)rec.data[i];
    ok = info->ndim == 1 && info->shape[0] == 2 && info->dtype.code == INT64.code &&
         info->dtype.bits == INT64.bits;
    if (ok) {
      printf("  indices[%d] = [%lld, %lld]\n", i, (long long)index[0], (long long)index[1]);
      ok = index[0] == expected[i][0] && index[1] == expected[i][1];
    }
  }

cleanup:
  /* Free whatever the allocator handed out, whether the run succeeded or not. */
  for (int32_t i = 0; i < CT_MAX_NDIM; ++i) free(rec.data[i]);
  free(workspace);
  return ok;
}

/* ---------------------------------------------------------------------------------------------
 * 4. Errors: a failing call returns a negative status and leaves a message for this thread.
 *    Shapes (2, 3) and (2,) do not broadcast, so add refuses them before touching any data.
 * ------------------------------------------------------------------------------------------- */
static int example_error(void) {
  float x1_data[6] = {0}, x2_data[2] = {0};
  int64_t x1_shape[2] = {2, 3};
  int64_t x2_shape[1] = {2};
  ct_tensor x1 = cpu_view(x1_data, FLOAT32, 2, x1_shape);
  ct_tensor x2 = cpu_view(x2_data, FLOAT32, 1, x2_shape);
  const ct_tensor* inputs[2] = {&x1, &x2};

  printf("a deliberate error\n");
  const ct_op* add = NULL;
  if (ct_op_find("add", &add) != CT_OK) return 0;
  ct_tensor_info info;
  int32_t num_outputs = 0;
  const int status = ct_op_infer(add, inputs, 2, NULL, 0, &info, 1, &num_outputs);
  printf("  ct_op_infer(add, (2, 3), (2,)) -> %d %s\n  ct_last_error(): %s\n", status,
         ct_status_name(status), ct_last_error());
  return status == CT_ERROR_SHAPE_MISMATCH && ct_last_error()[0] != '\0';
}

int main(void) {
  /* The major ABI version of the loaded library must be the one this program was compiled for. */
  const uint32_t abi = ct_abi_version();
  printf("ctensor %s, ABI %u.%u (compiled against %d.%d)\n", ct_version_string(), abi >> 16,
         abi & 0xffffu, CT_ABI_VERSION_MAJOR, CT_ABI_VERSION_MINOR);
  if ((abi >> 16) != CT_ABI_VERSION_MAJOR) {
    fprintf(stderr, "incompatible libctensor\n");
    return 1;
  }

  struct {
    const char* name;
    int (*run)(void);
  } examples[] = {{"add", example_add},
                  {"conv2d", example_conv2d},
                  {"nonzero", example_nonzero},
                  {"error path", example_error}};
  int failures = 0;
  for (size_t i = 0; i < sizeof examples / sizeof examples[0]; ++i) {
    if (!examples[i].run()) {
      fprintf(stderr, "%s: WRONG\n", examples[i].name);
      ++failures;
    }
  }

  if (failures) {
    printf("%d example%s FAILED\n", failures, failures == 1 ? "" : "s");
    return 1;
  }
  printf("all examples correct\n");
  return 0;
}
