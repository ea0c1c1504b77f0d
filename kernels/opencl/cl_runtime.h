/* cl_runtime.h - the OpenCL runtime, loaded with dlopen when the plugin initialises.
 *
 * The plugin never links libOpenCL: a machine without an OpenCL runtime then reports the backend
 * unavailable instead of failing to load it. Every OpenCL entry point the plugin uses is called
 * through the table `ct_cl`, filled by ct_cl_runtime_load. */
#ifndef CTENSOR_CL_RUNTIME_H_
#define CTENSOR_CL_RUNTIME_H_

#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

/* X-macro: every OpenCL function the plugin calls (name, return type, parameter list). */
#define CT_CL_FUNCTIONS(X)                                                                         \
  X(clGetPlatformIDs, cl_int, (cl_uint, cl_platform_id*, cl_uint*))                                \
  X(clGetDeviceIDs, cl_int, (cl_platform_id, cl_device_type, cl_uint, cl_device_id*, cl_uint*))    \
  X(clGetDeviceInfo, cl_int, (cl_device_id, cl_device_info, size_t, void*, size_t*))               \
  X(clCreateContext, cl_context,                                                                   \
    (const cl_context_properties*, cl_uint, const cl_device_id*,                                   \
     void(CL_CALLBACK*)(const char*, const void*, size_t, void*), void*, cl_int*))                 \
  X(clCreateCommandQueue, cl_command_queue,                                                        \
    (cl_context, cl_device_id, cl_command_queue_properties, cl_int*))                              \
  X(clGetCommandQueueInfo, cl_int,                                                                 \
    (cl_command_queue, cl_command_queue_info, size_t, void*, size_t*))                             \
  X(clCreateBuffer, cl_mem, (cl_context, cl_mem_flags, size_t, void*, cl_int*))                    \
  X(clReleaseMemObject, cl_int, (cl_mem))                                                          \
  X(clGetMemObjectInfo, cl_int, (cl_mem, cl_mem_info, size_t, void*, size_t*))                     \
  X(clEnqueueWriteBuffer, cl_int,                                                                  \
    (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void*, cl_uint, const cl_event*,     \
     cl_event*))                                                                                   \
  X(clEnqueueReadBuffer, cl_int,                                                                   \
    (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void*, cl_uint, const cl_event*,           \
     cl_event*))                                                                                   \
  X(clFinish, cl_int, (cl_command_queue))                                                          \
  X(clCreateProgramWithSource, cl_program,                                                         \
    (cl_context, cl_uint, const char**, const size_t*, cl_int*))                                   \
  X(clCreateProgramWithBinary, cl_program,                                                         \
    (cl_context, cl_uint, const cl_device_id*, const size_t*, const unsigned char**, cl_int*,      \
     cl_int*))                                                                                     \
  X(clBuildProgram, cl_int,                                                                        \
    (cl_program, cl_uint, const cl_device_id*, const char*, void(CL_CALLBACK*)(cl_program, void*), \
     void*))                                                                                       \
  X(clGetProgramInfo, cl_int, (cl_program, cl_program_info, size_t, void*, size_t*))               \
  X(clGetProgramBuildInfo, cl_int,                                                                 \
    (cl_program, cl_device_id, cl_program_build_info, size_t, void*, size_t*))                     \
  X(clReleaseProgram, cl_int, (cl_program))                                                        \
  X(clCreateKernel, cl_kernel, (cl_program, const char*, cl_int*))                                 \
  X(clReleaseKernel, cl_int, (cl_kernel))                                                          \
  X(clSetKernelArg, cl_int, (cl_kernel, cl_uint, size_t, const void*))                             \
  X(clEnqueueNDRangeKernel, cl_int,                                                                \
    (cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*, const size_t*, cl_uint,   \
     const cl_event*, cl_event*))

/* The loaded entry points, one member per function of CT_CL_FUNCTIONS. */
typedef struct ct_cl_api {
#define CT_CL_MEMBER(name, ret, params) ret(CL_API_CALL* name) params;
  CT_CL_FUNCTIONS(CT_CL_MEMBER)
#undef CT_CL_MEMBER
} ct_cl_api;

/* The table; valid after ct_cl_runtime_load returned CT_OK. */
extern ct_cl_api ct_cl;

/* Opens the OpenCL runtime (CTENSOR_OPENCL_LIBRARY if set, else libOpenCL.so.1, libOpenCL.so)
 * and resolves every function. Returns CT_OK, or CT_ERROR_BACKEND_UNAVAILABLE with the reason
 * recorded through the host's set_error. */
int ct_cl_runtime_load(void);

/* A static name for an OpenCL error code, e.g. "CL_OUT_OF_RESOURCES". */
const char* ct_cl_error_name(cl_int code);

#endif /* CTENSOR_CL_RUNTIME_H_ */
