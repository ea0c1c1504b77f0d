/* cl_runtime.c - loads the OpenCL runtime with dlopen and resolves its functions. */
#include "cl_runtime.h"

#include <dlfcn.h>
#include <stdlib.h>

#include "cl_plugin.h"

ct_cl_api ct_cl;

int ct_cl_runtime_load(void) {
  const char* forced = getenv("CTENSOR_OPENCL_LIBRARY");
  const char* candidates[] = {"libOpenCL.so.1", "libOpenCL.so"};
  void* handle = NULL;
  const char* tried = forced && forced[0] ? forced : candidates[0];
  if (forced && forced[0]) {
    handle = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
  } else {
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0] && !handle; ++i) {
      handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
    }
  }
  if (!handle) {
    const char* why = dlerror();
    return ct_cl_error(CT_ERROR_BACKEND_UNAVAILABLE, "no OpenCL runtime: cannot open %s (%s)",
                       tried, why ? why : "unknown reason");
  }
#define CT_CL_RESOLVE(name, ret, params)                                                      \
  *(void**)(&ct_cl.name) = dlsym(handle, #name);                                              \
  if (!ct_cl.name) {                                                                          \
    return ct_cl_error(CT_ERROR_BACKEND_UNAVAILABLE, "the OpenCL runtime %s lacks %s", tried, \
                       #name);                                                                \
  }
  CT_CL_FUNCTIONS(CT_CL_RESOLVE)
#undef CT_CL_RESOLVE
  return CT_OK;
}

const char* ct_cl_error_name(cl_int code) {
  switch (code) {
#define CT_CL_CODE(c) \
  case c:             \
    return #c;
    CT_CL_CODE(CL_SUCCESS)
    CT_CL_CODE(CL_DEVICE_NOT_FOUND)
    CT_CL_CODE(CL_DEVICE_NOT_AVAILABLE)
    CT_CL_CODE(CL_COMPILER_NOT_AVAILABLE)
    CT_CL_CODE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    CT_CL_CODE(CL_OUT_OF_RESOURCES)
    CT_CL_CODE(CL_OUT_OF_HOST_MEMORY)
    CT_CL_CODE(CL_BUILD_PROGRAM_FAILURE)
    CT_CL_CODE(CL_INVALID_VALUE)
    CT_CL_CODE(CL_INVALID_DEVICE)
    CT_CL_CODE(CL_INVALID_CONTEXT)
    CT_CL_CODE(CL_INVALID_COMMAND_QUEUE)
    CT_CL_CODE(CL_INVALID_MEM_OBJECT)
    CT_CL_CODE(CL_INVALID_BINARY)
    CT_CL_CODE(CL_INVALID_BUILD_OPTIONS)
    CT_CL_CODE(CL_INVALID_PROGRAM)
    CT_CL_CODE(CL_INVALID_KERNEL_NAME)
    CT_CL_CODE(CL_INVALID_KERNEL)
    CT_CL_CODE(CL_INVALID_ARG_INDEX)
    CT_CL_CODE(CL_INVALID_ARG_VALUE)
    CT_CL_CODE(CL_INVALID_ARG_SIZE)
    CT_CL_CODE(CL_INVALID_KERNEL_ARGS)
    CT_CL_CODE(CL_INVALID_WORK_DIMENSION)
    CT_CL_CODE(CL_INVALID_WORK_GROUP_SIZE)
    CT_CL_CODE(CL_INVALID_GLOBAL_OFFSET)
    CT_CL_CODE(CL_INVALID_BUFFER_SIZE)
    CT_CL_CODE(CL_INVALID_GLOBAL_WORK_SIZE)
#undef CT_CL_CODE
    case -1001: /* no ICD vendor file names a platform */
      return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
      return "an unknown OpenCL error";
  }
}
