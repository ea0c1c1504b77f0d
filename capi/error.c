/* error.c - the per-thread error message and status names. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

#define CT_ERROR_CAPACITY 1024

static _Thread_local char ct_error_message[CT_ERROR_CAPACITY];

const char* ct_last_error(void) {
  return ct_error_message;
}

void ct_clear_error(void) {
  ct_error_message[0] = '\0';
}

int ct_set_error(int status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(ct_error_message, sizeof ct_error_message, format ? format : "", args);
  va_end(args);
  return status;
}

const char* ct_status_name(int status) {
  switch ((ct_status)status) {
    case CT_OK:
      return "CT_OK";
    case CT_ERROR_INVALID_ARGUMENT:
      return "CT_ERROR_INVALID_ARGUMENT";
    case CT_ERROR_UNSUPPORTED_DTYPE:
      return "CT_ERROR_UNSUPPORTED_DTYPE";
    case CT_ERROR_UNSUPPORTED_DEVICE:
      return "CT_ERROR_UNSUPPORTED_DEVICE";
    case CT_ERROR_CONTIGUOUS_REQUIRED:
      return "CT_ERROR_CONTIGUOUS_REQUIRED";
    case CT_ERROR_OUT_OF_MEMORY:
      return "CT_ERROR_OUT_OF_MEMORY";
    case CT_ERROR_BACKEND:
      return "CT_ERROR_BACKEND";
    case CT_ERROR_UNKNOWN_OP:
      return "CT_ERROR_UNKNOWN_OP";
    case CT_ERROR_ABI_MISMATCH:
      return "CT_ERROR_ABI_MISMATCH";
    case CT_ERROR_SHAPE_MISMATCH:
      return "CT_ERROR_SHAPE_MISMATCH";
    case CT_ERROR_UNKNOWN_ATTRIBUTE:
      return "CT_ERROR_UNKNOWN_ATTRIBUTE";
    case CT_ERROR_ATTRIBUTE_TYPE:
      return "CT_ERROR_ATTRIBUTE_TYPE";
    case CT_ERROR_DEVICE_MISMATCH:
      return "CT_ERROR_DEVICE_MISMATCH";
    case CT_ERROR_NULL_POINTER:
      return "CT_ERROR_NULL_POINTER";
    case CT_ERROR_INVALID_SHAPE:
      return "CT_ERROR_INVALID_SHAPE";
    case CT_ERROR_SIZE_OVERFLOW:
      return "CT_ERROR_SIZE_OVERFLOW";
    case CT_ERROR_ALIASING:
      return "CT_ERROR_ALIASING";
    case CT_ERROR_WORKSPACE_TOO_SMALL:
      return "CT_ERROR_WORKSPACE_TOO_SMALL";
    case CT_ERROR_WRONG_ARITY:
      return "CT_ERROR_WRONG_ARITY";
    case CT_ERROR_BACKEND_UNAVAILABLE:
      return "CT_ERROR_BACKEND_UNAVAILABLE";
  }
  return "CT_ERROR_UNKNOWN_STATUS";
}
