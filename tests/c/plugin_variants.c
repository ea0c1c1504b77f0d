/*
 * plugin_variants.c - tiny plugins that each break or bend one rule of the plugin ABI, for
 * tests/c/test_plugin.c. Built once per variant with -DVARIANT_<NAME>:
 *
 *   ABI2          reports plugin ABI 2.0 (its init, which would register kernels, must never run)
 *   UNAVAILABLE   registers a kernel, then reports its device absent
 *   FAILING       registers a kernel, then fails its init
 *   WRONG_NAME    registers a kernel under "cpu", then calls itself "wrong-name-test"
 *   MEMORY        serves device type CT_DEVICE_EXT_DEV (2 devices) with its own memory functions
 *   NOT_A_PLUGIN  a shared module without the entry points
 *
 * Every kernel these register writes 42 into its output, so that a test can tell it ran.
 */
#include <ctensor_plugin.h>

#include <stdlib.h>
#include <string.h>

#ifdef VARIANT_NOT_A_PLUGIN

CT_PLUGIN_EXPORT int not_a_ctensor_plugin(void);
int not_a_ctensor_plugin(void) {
  return 0;
}

#else

static const ct_host_api* variant_host = NULL;

static int variant_run_42(const ct_kernel_call* call) {
  const ct_tensor* out = call->outputs[0];
  int64_t n = 1;
  for (int32_t k = 0; k < out->ndim; ++k) n *= out->shape[k];
  float* data = (float*)((char*)out->data + out->byte_offset); /* tests pass compact outputs */
  for (int64_t i = 0; i < n; ++i) data[i] = 42.0f;
  return CT_OK;
}

static int variant_register_add(const char* backend, int32_t device_type) {
  static const ct_dtype f32[3] = {
      {CT_DTYPE_FLOAT, 32, 1}, {CT_DTYPE_FLOAT, 32, 1}, {CT_DTYPE_FLOAT, 32, 1}};
  ct_kernel_def def;
  memset(&def, 0, sizeof def);
  def.struct_size = sizeof def;
  def.op_name = "add";
  def.backend_name = backend;
  def.device_type = device_type;
  def.signature_length = 3;
  def.signature = f32;
  def.run = variant_run_42;
  return variant_host->kernel_register(&def);
}

#ifdef VARIANT_ABI2
CT_PLUGIN_EXTERN_C CT_PLUGIN_EXPORT uint32_t ct_plugin_abi_version(void) {
  return (uint32_t)2 << 16;
}
#else
CT_PLUGIN_DEFINE_ABI_VERSION()
#endif

#ifdef VARIANT_MEMORY
/* Memory of the pretend device: host memory filled with 0xAB when allocated, so that a test can
 * tell these functions served the call. */
static int variant_allocate(void* plugin_data, int32_t device_id, uint64_t bytes, void** data) {
  *data = bytes ? malloc((size_t)bytes) : NULL;
  if (bytes && !*data) return variant_host->set_error(CT_ERROR_OUT_OF_MEMORY, "out of memory");
  if (*data) memset(*data, 0xAB, (size_t)bytes);
  return CT_OK;
}
static int variant_release(void* plugin_data, int32_t device_id, void* data) {
  free(data);
  return CT_OK;
}
static int variant_copy_from_host(void* plugin_data, int32_t device_id, void* dst,
                                  uint64_t dst_offset, const void* src, uint64_t bytes,
                                  void* stream) {
  memcpy((char*)dst + dst_offset, src, (size_t)bytes);
  return CT_OK;
}
static int variant_copy_to_host(void* plugin_data, int32_t device_id, void* dst, const void* src,
                                uint64_t src_offset, uint64_t bytes, void* stream) {
  memcpy(dst, (const char*)src + src_offset, (size_t)bytes);
  return CT_OK;
}
static int variant_synchronize(void* plugin_data, int32_t device_id, void* stream) {
  return *(int*)plugin_data == 7 ? CT_OK : variant_host->set_error(CT_ERROR_BACKEND, "bad data");
}
static const ct_device_memory_api variant_memory = {
    sizeof(ct_device_memory_api), variant_allocate,     variant_release,
    variant_copy_from_host,       variant_copy_to_host, variant_synchronize};
static int variant_plugin_data = 7;
#endif

CT_PLUGIN_EXTERN_C CT_PLUGIN_EXPORT int ct_plugin_init(const ct_host_api* host,
                                                       ct_plugin_info* info) {
  variant_host = host;
  info->version = "0.0.1";
  info->device_type = CT_DEVICE_CPU;
  info->device_count = 1;
#if defined(VARIANT_ABI2)
  info->name = "abi2-test";
  return variant_register_add("abi2-test", CT_DEVICE_CPU);
#elif defined(VARIANT_UNAVAILABLE)
  info->name = "unavailable-test";
  const int status = variant_register_add("unavailable-test", CT_DEVICE_CPU);
  if (status != CT_OK) return status;
  return host->set_error(CT_ERROR_BACKEND_UNAVAILABLE,
                         "no TESTDEV device: driver libtestdev.so.1 not found");
#elif defined(VARIANT_FAILING)
  info->name = "failing-test";
  const int status = variant_register_add("failing-test", CT_DEVICE_CPU);
  if (status != CT_OK) return status;
  return host->set_error(CT_ERROR_OUT_OF_MEMORY, "failing-test could not set up its pools");
#elif defined(VARIANT_WRONG_NAME)
  const int status = variant_register_add("cpu", CT_DEVICE_CPU);
  info->name = "wrong-name-test"; /* named after registering, so the host checks at the end */
  return status;
#elif defined(VARIANT_MEMORY)
  info->name = "memory-test";
  info->device_type = CT_DEVICE_EXT_DEV;
  info->device_count = 2;
  info->memory = &variant_memory;
  info->plugin_data = &variant_plugin_data;
  return variant_register_add("memory-test", CT_DEVICE_EXT_DEV);
#else
#error \
    "build with one of -DVARIANT_ABI2, _UNAVAILABLE, _FAILING, _WRONG_NAME, _MEMORY, _NOT_A_PLUGIN"
#endif
}

#endif /* VARIANT_NOT_A_PLUGIN */
