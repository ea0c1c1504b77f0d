/* cpu_backend.c - registers the built-in CPU kernels through the public registration entry. */
#include "cpu_register.h"

int ct_cpu_register_all(const ct_cpu_kernel* kernels, int32_t count) {
  for (int32_t i = 0; i < count; ++i) {
    ct_dtype signature[8];
    for (int32_t k = 0; k < kernels[i].signature_length; ++k) {
      signature[k] = ct_dtype_from_id(kernels[i].signature[k]);
    }
    const ct_kernel_def def = {
        sizeof(ct_kernel_def),        kernels[i].op, "cpu",          CT_DEVICE_CPU,
        kernels[i].signature_length,  signature,     kernels[i].run, kernels[i].workspace,
        (void*)kernels[i].kernel_data};
    const int status = ct_kernel_register(&def);
    if (status != CT_OK) return status;
  }
  return CT_OK;
}

static int ct_cpu_register_kernels(void) {
  int status = CT_OK;
#define CT_CPU_FAMILY(name) \
  if (status == CT_OK) status = ct_cpu_register_##name();
#include "cpu_families.h"
#undef CT_CPU_FAMILY
  return status;
}

/* The CPU backend's plugin entry: says what it is and registers every family. The registry runs
 * it at initialisation, as ct_backend_load runs a loaded plugin's ct_plugin_init. */
static int ct_cpu_backend_init(const ct_host_api* host, ct_plugin_info* info) {
  (void)host; /* its kernel_register is ct_kernel_register, which ct_cpu_register_all calls */
  info->name = "cpu";
  info->version = CT_VERSION_STRING;
  info->device_type = CT_DEVICE_CPU;
  info->device_count = 1;
  return ct_cpu_register_kernels();
}

/* The backends libctensor is built with (capi/internal.h): the CPU backend. */
const ct_plugin_init_fn ct_builtin_backends[] = {ct_cpu_backend_init};
const int32_t ct_builtin_backend_count = CT_CPU_KERNEL_COUNT(ct_builtin_backends);
