/* cl_device.c - finds the OpenCL devices and opens a context and a default queue for each. */
#include <stdlib.h>
#include <string.h>

#include "cl_plugin.h"

static ct_cl_device* ct_cl_devices;
static int32_t ct_cl_devices_found;

int32_t ct_cl_device_count(void) {
  return ct_cl_devices_found;
}

ct_cl_device* ct_cl_device_at(int32_t index) {
  return index >= 0 && index < ct_cl_devices_found ? &ct_cl_devices[index] : NULL;
}

static bool ct_cl_device_has_extension(cl_device_id id, const char* extension) {
  size_t size = 0;
  if (ct_cl.clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS) return false;
  char* text = malloc(size + 1);
  if (!text) return false;
  bool found = false;
  if (ct_cl.clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, size, text, NULL) == CL_SUCCESS) {
    text[size] = '\0';
    const size_t length = strlen(extension);
    for (const char* at = strstr(text, extension); at && !found; at = strstr(at + 1, extension)) {
      found = (at == text || at[-1] == ' ') && (at[length] == ' ' || at[length] == '\0');
    }
  }
  free(text);
  return found;
}

static int ct_cl_device_open(ct_cl_device* device) {
  cl_int code = CL_SUCCESS;
  ct_cl.clGetDeviceInfo(device->id, CL_DEVICE_NAME, sizeof device->name - 1, device->name, NULL);
  ct_cl.clGetDeviceInfo(device->id, CL_DRIVER_VERSION, sizeof device->driver - 1, device->driver,
                        NULL);
  device->has_fp64 = ct_cl_device_has_extension(device->id, "cl_khr_fp64");
  const cl_context_properties properties[] = {CL_CONTEXT_PLATFORM,
                                              (cl_context_properties)device->platform, 0};
  device->context = ct_cl.clCreateContext(properties, 1, &device->id, NULL, NULL, &code);
  if (code != CL_SUCCESS) return ct_cl_check(code, "clCreateContext");
  device->queue = ct_cl.clCreateCommandQueue(device->context, device->id, 0, &code);
  return ct_cl_check(code, "clCreateCommandQueue");
}

int ct_cl_devices_open(void) {
  cl_uint platform_count = 0;
  cl_int code = ct_cl.clGetPlatformIDs(0, NULL, &platform_count);
  if (code != CL_SUCCESS || platform_count == 0) {
    return ct_cl_error(CT_ERROR_BACKEND_UNAVAILABLE, "no OpenCL platform (clGetPlatformIDs: %s)",
                       code == CL_SUCCESS ? "0 platforms" : ct_cl_error_name(code));
  }
  cl_platform_id* platforms = calloc(platform_count, sizeof *platforms);
  if (!platforms) return ct_cl_error(CT_ERROR_OUT_OF_MEMORY, "out of memory listing platforms");
  ct_cl.clGetPlatformIDs(platform_count, platforms, NULL);
  int32_t total = 0;
  for (cl_uint p = 0; p < platform_count; ++p) {
    cl_uint count = 0;
    if (ct_cl.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &count) == CL_SUCCESS) {
      total += (int32_t)count;
    }
  }
  if (total == 0) {
    free(platforms);
    return ct_cl_error(CT_ERROR_BACKEND_UNAVAILABLE, "no OpenCL device on %u platform(s)",
                       platform_count);
  }
  ct_cl_devices = calloc((size_t)total, sizeof *ct_cl_devices);
  if (!ct_cl_devices) {
    free(platforms);
    return ct_cl_error(CT_ERROR_OUT_OF_MEMORY, "out of memory listing devices");
  }
  int32_t found = 0;
  for (cl_uint p = 0; p < platform_count && found < total; ++p) {
    cl_uint count = 0;
    cl_device_id ids[64];
    if (ct_cl.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 64, ids, &count) != CL_SUCCESS) {
      continue;
    }
    for (cl_uint d = 0; d < count && d < 64 && found < total; ++d) {
      ct_cl_devices[found].platform = platforms[p];
      ct_cl_devices[found].id = ids[d];
      const int status = ct_cl_device_open(&ct_cl_devices[found]);
      if (status != CT_OK) {
        free(platforms);
        return status;
      }
      ++found;
    }
  }
  free(platforms);
  ct_cl_devices_found = found;
  return CT_OK;
}
