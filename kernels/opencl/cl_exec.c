/* cl_exec.c - queues for calls, generated source text, kernel launches and parameter buffers. */
#include "cl_exec.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Default queues opened for contexts other than the devices' own (pyopencl's, for example). */
typedef struct ct_cl_foreign_queue {
  cl_context context;
  cl_device_id device;
  cl_command_queue queue;
} ct_cl_foreign_queue;

#define CT_CL_MAX_FOREIGN_QUEUES 64
static ct_cl_foreign_queue ct_cl_foreign_queues[CT_CL_MAX_FOREIGN_QUEUES];
static int ct_cl_foreign_queue_count;
static pthread_mutex_t ct_cl_queue_lock = PTHREAD_MUTEX_INITIALIZER;

static int ct_cl_queue_for_context(ct_cl_device* device, cl_context context,
                                   cl_command_queue* queue) {
  if (context == device->context) {
    *queue = device->queue;
    return CT_OK;
  }
  int status = CT_OK;
  pthread_mutex_lock(&ct_cl_queue_lock);
  *queue = NULL;
  for (int i = 0; i < ct_cl_foreign_queue_count && !*queue; ++i) {
    if (ct_cl_foreign_queues[i].context == context &&
        ct_cl_foreign_queues[i].device == device->id) {
      *queue = ct_cl_foreign_queues[i].queue;
    }
  }
  if (!*queue) {
    if (ct_cl_foreign_queue_count == CT_CL_MAX_FOREIGN_QUEUES) {
      status = ct_cl_error(CT_ERROR_BACKEND,
                           "more than %d OpenCL contexts used without a stream: pass the "
                           "command queue as the stream",
                           CT_CL_MAX_FOREIGN_QUEUES);
    } else {
      cl_int code = CL_SUCCESS;
      cl_command_queue created = ct_cl.clCreateCommandQueue(context, device->id, 0, &code);
      status = ct_cl_check(code, "clCreateCommandQueue (for the buffers' context)");
      if (status == CT_OK) {
        ct_cl_foreign_queues[ct_cl_foreign_queue_count++] =
            (ct_cl_foreign_queue){context, device->id, created};
        *queue = created;
      }
    }
  }
  pthread_mutex_unlock(&ct_cl_queue_lock);
  return status;
}

static int ct_cl_exec_from(ct_cl_device* device, void* stream, cl_mem any_buffer,
                           ct_cl_exec* exec) {
  exec->device = device;
  if (stream) {
    exec->queue = (cl_command_queue)stream;
    return ct_cl_check(ct_cl.clGetCommandQueueInfo(exec->queue, CL_QUEUE_CONTEXT,
                                                   sizeof exec->context, &exec->context, NULL),
                       "the stream is not an OpenCL command queue: clGetCommandQueueInfo");
  }
  exec->context = device->context;
  if (any_buffer) {
    const int status =
        ct_cl_check(ct_cl.clGetMemObjectInfo(any_buffer, CL_MEM_CONTEXT, sizeof exec->context,
                                             &exec->context, NULL),
                    "tensor data is not an OpenCL buffer: clGetMemObjectInfo");
    if (status != CT_OK) return status;
  }
  return ct_cl_queue_for_context(device, exec->context, &exec->queue);
}

int ct_cl_exec_for_device(int32_t device_id, void* stream, ct_cl_exec* exec) {
  ct_cl_device* device = ct_cl_device_at(device_id);
  if (!device) {
    return ct_cl_error(CT_ERROR_UNSUPPORTED_DEVICE, "no OpenCL device %d (%d found)", device_id,
                       ct_cl_device_count());
  }
  return ct_cl_exec_from(device, stream, NULL, exec);
}

int ct_cl_exec_for_buffer(int32_t device_id, void* stream, cl_mem buffer, ct_cl_exec* exec) {
  ct_cl_device* device = ct_cl_device_at(device_id);
  if (!device) {
    return ct_cl_error(CT_ERROR_UNSUPPORTED_DEVICE, "no OpenCL device %d (%d found)", device_id,
                       ct_cl_device_count());
  }
  return ct_cl_exec_from(device, stream, buffer, exec);
}

int ct_cl_exec_for_call(const ct_kernel_call* call, ct_cl_exec* exec) {
  const ct_tensor* first = NULL;
  cl_mem any_buffer = NULL;
  for (int32_t i = 0; i < call->num_inputs + call->num_outputs; ++i) {
    const ct_tensor* t =
        i < call->num_inputs ? call->inputs[i] : call->outputs[i - call->num_inputs];
    if (!t) continue;
    if (!first) first = t;
    if (t->data && !any_buffer) any_buffer = (cl_mem)t->data;
  }
  const int32_t device_id = first ? first->device.device_id : 0;
  ct_cl_device* device = ct_cl_device_at(device_id);
  if (!device) {
    return ct_cl_error(CT_ERROR_UNSUPPORTED_DEVICE, "no OpenCL device %d (%d found)", device_id,
                       ct_cl_device_count());
  }
  return ct_cl_exec_from(device, call->stream, any_buffer, exec);
}

/* Load and store macros per dtype tag (b8, i32, i64, f16, f32, f64): `p` is a __global char*,
 * `o` a byte offset. Float16 goes through vload_half/vstore_half (core OpenCL C, computed in
 * float, stored rounding to nearest even); bool stores normalise to 0/1. */
static const char ct_cl_prelude[] =
    "#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n"
    "#define AT(T, p, o) ((__global T*)((__global char*)(p) + (o)))\n"
    "#define LD_b8(p, o) ((int)*AT(const uchar, p, o))\n"
    "#define ST_b8(p, o, v) (*AT(uchar, p, o) = (uchar)((v) != 0))\n"
    "#define LD_i32(p, o) (*AT(const int, p, o))\n"
    "#define ST_i32(p, o, v) (*AT(int, p, o) = (int)(v))\n"
    "#define LD_i64(p, o) (*AT(const long, p, o))\n"
    "#define ST_i64(p, o, v) (*AT(long, p, o) = (long)(v))\n"
    "#define LD_f16(p, o) vload_half(0, AT(const half, p, o))\n"
    "#define ST_f16(p, o, v) vstore_half((v), 0, AT(half, p, o))\n"
    "#define LD_f32(p, o) (*AT(const float, p, o))\n"
    "#define ST_f32(p, o, v) (*AT(float, p, o) = (float)(v))\n"
    "#define LD_f64(p, o) (*AT(const double, p, o))\n"
    "#define ST_f64(p, o, v) (*AT(double, p, o) = (double)(v))\n"
    "#define CAT_(a, b) a##b\n#define CAT(a, b) CAT_(a, b)\n";

void ct_cl_source_begin(ct_cl_source* source, const ct_cl_exec* exec) {
  source->length = 0;
  source->overflow = false;
  source->text[0] = '\0';
  ct_cl_source_add(source, "%s", ct_cl_prelude);
  (void)exec;
}

void ct_cl_source_add(ct_cl_source* source, const char* format, ...) {
  if (source->overflow) return;
  va_list args;
  va_start(args, format);
  const size_t room = sizeof source->text - source->length;
  const int written = vsnprintf(source->text + source->length, room, format, args);
  va_end(args);
  if (written < 0 || (size_t)written >= room) {
    source->overflow = true;
    return;
  }
  source->length += (size_t)written;
}

/* Enqueues over `global` work items in groups of `local` (0: the runtime's choice). */
static int ct_cl_enqueue(const ct_cl_exec* exec, const ct_cl_source* source, const char* name,
                         size_t global, size_t local, const ct_cl_arg* args, int count) {
  if (global == 0) return CT_OK;
  cl_program program = NULL;
  int status = ct_cl_program_get(exec, source, &program);
  if (status != CT_OK) return status;
  cl_int code = CL_SUCCESS;
  cl_kernel kernel = ct_cl.clCreateKernel(program, name, &code);
  status = ct_cl_check(code, name);
  if (status != CT_OK) return status;
  for (int i = 0; i < count && status == CT_OK; ++i) {
    status = ct_cl_check(ct_cl.clSetKernelArg(kernel, (cl_uint)i, args[i].size, args[i].value),
                         "clSetKernelArg");
  }
  if (status == CT_OK) {
    status = ct_cl_check(ct_cl.clEnqueueNDRangeKernel(exec->queue, kernel, 1, NULL, &global,
                                                      local ? &local : NULL, 0, NULL, NULL),
                         "clEnqueueNDRangeKernel");
  }
  ct_cl.clReleaseKernel(kernel);
  return status;
}

int ct_cl_launch(const ct_cl_exec* exec, const ct_cl_source* source, const char* name,
                 size_t global, const ct_cl_arg* args, int count) {
  return ct_cl_enqueue(exec, source, name, global, 0, args, count);
}

int ct_cl_launch_groups(const ct_cl_exec* exec, const ct_cl_source* source, const char* name,
                        size_t groups, size_t local, const ct_cl_arg* args, int count) {
  return ct_cl_enqueue(exec, source, name, groups * local, local, args, count);
}

int ct_cl_meta_buffer(const ct_cl_exec* exec, const int64_t* values, size_t count, cl_mem* buffer) {
  static const int64_t zero = 0;
  cl_int code = CL_SUCCESS;
  *buffer = ct_cl.clCreateBuffer(exec->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                 (count ? count : 1) * sizeof(int64_t),
                                 (void*)(count ? values : &zero), &code);
  return ct_cl_check(code, "clCreateBuffer (kernel parameters)");
}

int ct_cl_scratch_buffer(const ct_cl_exec* exec, size_t bytes, cl_mem* buffer) {
  cl_int code = CL_SUCCESS;
  *buffer = ct_cl.clCreateBuffer(exec->context, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &code);
  return ct_cl_check(code, "clCreateBuffer (kernel scratch)");
}

int ct_cl_scratch_array(const ct_cl_exec* exec, int64_t count, size_t size, cl_mem* buffer) {
  int64_t bytes;
  if (count < 0 || __builtin_mul_overflow(count, (int64_t)size, &bytes)) {
    return ct_cl_error(CT_ERROR_SIZE_OVERFLOW,
                       "a kernel's scratch of %lld elements of %zu bytes overflows int64",
                       (long long)count, size);
  }
  return ct_cl_scratch_buffer(exec, (size_t)bytes, buffer);
}

int ct_cl_read(const ct_cl_exec* exec, cl_mem buffer, size_t offset, void* dst, size_t bytes) {
  return ct_cl_check(
      ct_cl.clEnqueueReadBuffer(exec->queue, buffer, CL_TRUE, offset, bytes, dst, 0, NULL, NULL),
      "clEnqueueReadBuffer");
}
