/* A plugin whose exp kernel dereferences NULL: the conformance suite's --isolate must report
 * the crash as one FAIL (tests/test_conformance.py). */
#include <ctensor_plugin.h>
CT_PLUGIN_DEFINE_ABI_VERSION()
static int crash(const ct_kernel_call* call) {
  (void)call;
  *(volatile int*)0 = 0;
  return 0;
}
CT_PLUGIN_EXTERN_C CT_PLUGIN_EXPORT int ct_plugin_init(const ct_host_api* host,
                                                       ct_plugin_info* info) {
  static const ct_dtype f32[2] = {{CT_DTYPE_FLOAT, 32, 1}, {CT_DTYPE_FLOAT, 32, 1}};
  ct_kernel_def def = {
      sizeof(ct_kernel_def), "exp", "crasher", CT_DEVICE_CPU, 2, f32, crash, NULL, NULL};
  info->name = "crasher";
  info->version = "0";
  info->device_type = CT_DEVICE_CPU;
  info->device_count = 1;
  return host->kernel_register(&def);
}
