/* cu_vendor.cu - opens cuBLASLt and cuDNN at plugin init and fills their entry-point tables
 * (cu_vendor.h); reports their status codes as ctensor errors. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_plugin.h"
#include "cu_vendor.h"

ct_cu_blaslt_api ct_cu_blaslt;
ct_cu_dnn_api ct_cu_dnn;

namespace {

/* One library: its soname, its folder in the NVIDIA wheel (under site-packages), the wheel, and
 * the environment variable that names the file to open instead of searching. */
struct ct_cu_library {
  const char* title; /* as messages name it */
  const char* soname;
  const char* wheel_folder;
  const char* wheel;
  const char* variable;
  size_t major; /* the major version of the headers the plugin was built with */
};

constexpr ct_cu_library ct_cu_blaslt_library = {
    "cuBLASLt",      "libcublasLt.so.13",        "nvidia/cu13/lib",
    "nvidia-cublas", "CTENSOR_CUBLASLT_LIBRARY", CUBLAS_VER_MAJOR};
constexpr ct_cu_library ct_cu_dnn_library = {
    "cuDNN",    "libcudnn.so.9", "nvidia/cudnn/lib", "nvidia-cudnn-cu13", "CTENSOR_CUDNN_LIBRARY",
    CUDNN_MAJOR};

/* The site-packages folder that holds the ctensor package this plugin belongs to: the plugin is
 * <site-packages>/ctensor/lib/ctensor-plugins/libctensor_cuda.so. Empty when it is not laid out
 * so (a build tree). */
void ct_cu_site_packages(char* folder, size_t size) {
  folder[0] = '\0';
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&ct_cu_site_packages), &info) || !info.dli_fname) return;
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s", info.dli_fname) >= (int)sizeof path) return;
  const char* const expected[] = {"ctensor-plugins", "lib", "ctensor"};
  char* slash = strrchr(path, '/'); /* drops the file name */
  for (const char* name : expected) {
    if (!slash) return;
    *slash = '\0';
    slash = strrchr(path, '/');
    if (!slash || strcmp(slash + 1, name) != 0) return;
  }
  if (!slash) return;
  *slash = '\0';
  snprintf(folder, size, "%s", path);
}

/* dlopens `library`: the file its environment variable names, else by soname, then from the
 * wheel beside ctensor. NULL with `reason` set. */
void* ct_cu_library_open(const ct_cu_library& library, char* reason, size_t size) {
  const char* forced = getenv(library.variable);
  if (forced && forced[0]) {
    void* handle = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      snprintf(reason, size, "%s (%s) not found: %s=%s cannot be opened (%s)", library.title,
               library.soname, library.variable, forced, dlerror());
    }
    return handle;
  }
  void* handle = dlopen(library.soname, RTLD_NOW | RTLD_LOCAL);
  if (handle) return handle;
  char by_name[512];
  snprintf(by_name, sizeof by_name, "%s", dlerror());
  char site[PATH_MAX];
  ct_cu_site_packages(site, sizeof site);
  if (site[0]) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s/%s", site, library.wheel_folder, library.soname);
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle) return handle;
    snprintf(reason, size,
             "%s (%s) not found: not on the dynamic loader's path (%s), nor at %s (%s); "
             "install it with `pip install %s`",
             library.title, library.soname, by_name, path, dlerror(), library.wheel);
  } else {
    snprintf(reason, size,
             "%s (%s) not found on the dynamic loader's path (%s); install it with `pip install "
             "%s` and put its lib folder on LD_LIBRARY_PATH",
             library.title, library.soname, by_name, library.wheel);
  }
  return nullptr;
}

/* Resolves `name` from `handle` into `*slot`; false with `reason` set when it is missing. */
template <class Fn>
bool ct_cu_resolve(void* handle, const ct_cu_library& library, const char* name, Fn* slot,
                   char* reason, size_t size) {
  dlerror();
  void* symbol = dlsym(handle, name);
  if (symbol) {
    *slot = reinterpret_cast<Fn>(symbol);
    return true;
  }
  snprintf(reason, size, "%s (%s) has no entry point %s: it is older than the plugin needs",
           library.title, library.soname, name);
  return false;
}

int ct_cu_unavailable(const char* reason) {
  return ct_cu_error(CT_ERROR_BACKEND_UNAVAILABLE, "%s", reason);
}

/* CT_OK when `version` (major * 10000 + minor * 100 + patch, as both libraries count) has the
 * major version the plugin was built with, else unavailable with the reason. */
int ct_cu_check_major(const ct_cu_library& library, size_t version, char* reason, size_t size) {
  if (version / 10000 == library.major) return CT_OK;
  snprintf(reason, size, "%s %zu.%zu was found; the plugin needs %s %zu (`pip install %s`)",
           library.title, version / 10000, version / 100 % 100, library.title, library.major,
           library.wheel);
  return ct_cu_unavailable(reason);
}

/* The libraries stay open for the life of the process, as the plugin does. */
int ct_cu_blaslt_open(char* reason, size_t size) {
  void* handle = ct_cu_library_open(ct_cu_blaslt_library, reason, size);
  if (!handle) return ct_cu_unavailable(reason);
#define CT_CU_SYMBOL(name)                                                                   \
  if (!ct_cu_resolve(handle, ct_cu_blaslt_library, #name, &ct_cu_blaslt.name, reason, size)) \
    return ct_cu_unavailable(reason);
#include "cu_blaslt_symbols.h"
#undef CT_CU_SYMBOL
  return ct_cu_check_major(ct_cu_blaslt_library, ct_cu_blaslt.cublasLtGetVersion(), reason, size);
}

int ct_cu_dnn_open(char* reason, size_t size) {
  void* handle = ct_cu_library_open(ct_cu_dnn_library, reason, size);
  if (!handle) return ct_cu_unavailable(reason);
#define CT_CU_SYMBOL(name)                                                             \
  if (!ct_cu_resolve(handle, ct_cu_dnn_library, #name, &ct_cu_dnn.name, reason, size)) \
    return ct_cu_unavailable(reason);
#include "cu_dnn_symbols.h"
#undef CT_CU_SYMBOL
  return ct_cu_check_major(ct_cu_dnn_library, ct_cu_dnn.cudnnGetVersion(), reason, size);
}

}  // namespace

int ct_cu_vendor_open(void) {
  char reason[2048];
  const int status = ct_cu_blaslt_open(reason, sizeof reason);
  return status != CT_OK ? status : ct_cu_dnn_open(reason, sizeof reason);
}

int ct_cu_blas_check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return CT_OK;
  return ct_cu_error(
      status == CUBLAS_STATUS_ALLOC_FAILED ? CT_ERROR_OUT_OF_MEMORY : CT_ERROR_BACKEND,
      "cuBLASLt: %s failed with %s: %s", what, ct_cu_blaslt.cublasLtGetStatusName(status),
      ct_cu_blaslt.cublasLtGetStatusString(status));
}

int ct_cu_dnn_check(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return CT_OK;
  return ct_cu_error(
      status == CUDNN_STATUS_ALLOC_FAILED ? CT_ERROR_OUT_OF_MEMORY : CT_ERROR_BACKEND,
      "cuDNN: %s failed with %s (%d)", what, ct_cu_dnn.cudnnGetErrorString(status), (int)status);
}
