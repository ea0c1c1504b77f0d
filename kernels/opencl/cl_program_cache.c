/* cl_program_cache.c - compiled programs, once per (context, device, source), in memory; and
 * program binaries on disk, keyed by a hash of device name, driver version, build options and
 * source, so that a second process skips the compiler.
 *
 * Disk cache directory: CTENSOR_OPENCL_CACHE_DIR, else $XDG_CACHE_HOME/ctensor/opencl, else
 * ~/.cache/ctensor/opencl. Files are written to a temporary name and renamed, so concurrent
 * processes never read a half-written binary; an unreadable or rejected binary is recompiled. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cl_exec.h"

/* -w: a runtime may print compiler warnings to stderr, and the library never prints. */
#define CT_CL_BUILD_OPTIONS "-cl-std=CL1.2 -w"

typedef struct ct_cl_cached_program {
  cl_context context;
  cl_device_id device;
  uint64_t hash[2];
  cl_program program;
  struct ct_cl_cached_program* next;
} ct_cl_cached_program;

static ct_cl_cached_program* ct_cl_programs;
static pthread_mutex_t ct_cl_program_lock = PTHREAD_MUTEX_INITIALIZER;

/* FNV-1a, 64 bits, continued from `hash`. */
static uint64_t ct_cl_fnv1a(uint64_t hash, const char* text, size_t length) {
  for (size_t i = 0; i < length; ++i) {
    hash ^= (unsigned char)text[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

/* A 128-bit key (two FNV-1a streams with different seeds) over everything that decides the
 * binary. */
static void ct_cl_program_key(const ct_cl_device* device, const ct_cl_source* source,
                              uint64_t hash[2]) {
  const uint64_t seeds[2] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
  for (int k = 0; k < 2; ++k) {
    uint64_t h = seeds[k];
    h = ct_cl_fnv1a(h, device->name, strlen(device->name) + 1);
    h = ct_cl_fnv1a(h, device->driver, strlen(device->driver) + 1);
    h = ct_cl_fnv1a(h, CT_CL_BUILD_OPTIONS, sizeof CT_CL_BUILD_OPTIONS);
    h = ct_cl_fnv1a(h, source->text, source->length);
    hash[k] = h;
  }
}

/* The cache directory (created when missing); false when there is none usable. */
static bool ct_cl_cache_dir(char* path, size_t capacity) {
  const char* forced = getenv("CTENSOR_OPENCL_CACHE_DIR");
  const char* xdg = getenv("XDG_CACHE_HOME");
  const char* home = getenv("HOME");
  int written;
  if (forced && forced[0]) {
    written = snprintf(path, capacity, "%s", forced);
  } else if (xdg && xdg[0]) {
    written = snprintf(path, capacity, "%s/ctensor/opencl", xdg);
  } else if (home && home[0]) {
    written = snprintf(path, capacity, "%s/.cache/ctensor/opencl", home);
  } else {
    return false;
  }
  if (written < 0 || (size_t)written >= capacity) return false;
  /* mkdir -p */
  for (char* at = path + 1; *at; ++at) {
    if (*at != '/') continue;
    *at = '\0';
    mkdir(path, 0755);
    *at = '/';
  }
  return mkdir(path, 0755) == 0 || errno == EEXIST;
}

static bool ct_cl_cache_file(const uint64_t hash[2], char* path, size_t capacity) {
  char dir[1024];
  if (!ct_cl_cache_dir(dir, sizeof dir)) return false;
  const int written = snprintf(path, capacity, "%s/%016llx%016llx.bin", dir,
                               (unsigned long long)hash[0], (unsigned long long)hash[1]);
  return written > 0 && (size_t)written < capacity;
}

static cl_program ct_cl_program_from_disk(const ct_cl_exec* exec, const char* file) {
  FILE* stream = fopen(file, "rb");
  if (!stream) return NULL;
  cl_program program = NULL;
  unsigned char* binary = NULL;
  long size = 0;
  if (fseek(stream, 0, SEEK_END) == 0 && (size = ftell(stream)) > 0 &&
      fseek(stream, 0, SEEK_SET) == 0 && (binary = malloc((size_t)size)) &&
      fread(binary, 1, (size_t)size, stream) == (size_t)size) {
    const size_t length = (size_t)size;
    const unsigned char* binaries[1] = {binary};
    cl_int code = CL_SUCCESS, binary_status = CL_SUCCESS;
    program = ct_cl.clCreateProgramWithBinary(exec->context, 1, &exec->device->id, &length,
                                              binaries, &binary_status, &code);
    if (code != CL_SUCCESS || binary_status != CL_SUCCESS) {
      program = NULL;
    } else if (ct_cl.clBuildProgram(program, 1, &exec->device->id, CT_CL_BUILD_OPTIONS, NULL,
                                    NULL) != CL_SUCCESS) {
      ct_cl.clReleaseProgram(program);
      program = NULL;
    }
  }
  free(binary);
  fclose(stream);
  return program;
}

static void ct_cl_program_to_disk(cl_program program, const char* file) {
  size_t size = 0;
  if (ct_cl.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
          CL_SUCCESS ||
      size == 0) {
    return;
  }
  unsigned char* binary = malloc(size);
  if (!binary) return;
  unsigned char* binaries[1] = {binary};
  char temporary[1100 + 32]; /* the file name, a dot, a pid and ".tmp" */
  snprintf(temporary, sizeof temporary, "%s.%ld.tmp", file, (long)getpid());
  if (ct_cl.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binaries, binaries, NULL) ==
      CL_SUCCESS) {
    FILE* stream = fopen(temporary, "wb");
    if (stream) {
      const bool written = fwrite(binary, 1, size, stream) == size;
      if (fclose(stream) == 0 && written) {
        rename(temporary, file);
      } else {
        remove(temporary);
      }
    }
  }
  free(binary);
}

static int ct_cl_program_compile(const ct_cl_exec* exec, const ct_cl_source* source,
                                 cl_program* program) {
  const char* text = source->text;
  const size_t length = source->length;
  cl_int code = CL_SUCCESS;
  *program = ct_cl.clCreateProgramWithSource(exec->context, 1, &text, &length, &code);
  int status = ct_cl_check(code, "clCreateProgramWithSource");
  if (status != CT_OK) return status;
  code = ct_cl.clBuildProgram(*program, 1, &exec->device->id, CT_CL_BUILD_OPTIONS, NULL, NULL);
  if (code != CL_SUCCESS) {
    char log[2048] = "";
    ct_cl.clGetProgramBuildInfo(*program, exec->device->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1,
                                log, NULL);
    ct_cl.clReleaseProgram(*program);
    *program = NULL;
    return ct_cl_error(CT_ERROR_BACKEND, "OpenCL kernel build failed on %s (%s): %s",
                       exec->device->name, ct_cl_error_name(code), log);
  }
  return CT_OK;
}

int ct_cl_program_get(const ct_cl_exec* exec, const ct_cl_source* source, cl_program* program) {
  if (source->overflow) {
    return ct_cl_error(CT_ERROR_BACKEND, "generated OpenCL source too long (internal limit)");
  }
  uint64_t hash[2];
  ct_cl_program_key(exec->device, source, hash);
  int status = CT_OK;
  pthread_mutex_lock(&ct_cl_program_lock);
  *program = NULL;
  for (ct_cl_cached_program* at = ct_cl_programs; at && !*program; at = at->next) {
    if (at->context == exec->context && at->device == exec->device->id && at->hash[0] == hash[0] &&
        at->hash[1] == hash[1]) {
      *program = at->program;
    }
  }
  if (!*program) {
    ct_cl_cached_program* entry = malloc(sizeof *entry);
    char file[1100];
    const bool has_file = ct_cl_cache_file(hash, file, sizeof file);
    if (!entry) {
      status = ct_cl_error(CT_ERROR_OUT_OF_MEMORY, "out of memory caching an OpenCL program");
    } else {
      *program = has_file ? ct_cl_program_from_disk(exec, file) : NULL;
      if (!*program) {
        status = ct_cl_program_compile(exec, source, program);
        if (status == CT_OK && has_file) ct_cl_program_to_disk(*program, file);
      }
      if (status == CT_OK) {
        *entry = (ct_cl_cached_program){
            exec->context, exec->device->id, {hash[0], hash[1]}, *program, ct_cl_programs};
        ct_cl_programs = entry;
      } else {
        free(entry);
      }
    }
  }
  pthread_mutex_unlock(&ct_cl_program_lock);
  return status;
}
