/* cu_vendor.h - NVIDIA's libraries behind the CUDA plugin, loaded at run time: cuBLASLt
 * (libcublasLt.so.13: matmul, linear, batched GEMM) and cuDNN (libcudnn.so.9: convolutions,
 * pooling, normalisation). The plugin is not linked to them, so `import ctensor` never fails
 * for their absence: ct_plugin_init opens them with dlopen and the plugin reports itself
 * unavailable, with the reason, when one is missing or too old. CUB is header-only (the CUDA
 * toolkit's), compiled into the kernels.
 *
 * Each library's entry points are listed once, in cu_blaslt_symbols.h and cu_dnn_symbols.h
 * (X-macro lines CT_CU_SYMBOL(name)); the tables below hold a pointer of the header's own type
 * for each, so that kernels call `ct_cu_blaslt.cublasLtMatmul(...)` with full type checking. */
#ifndef CTENSOR_CU_VENDOR_H_
#define CTENSOR_CU_VENDOR_H_

#include <cublasLt.h>
#include <cudnn.h>

/* cuBLASLt's entry points, filled by ct_cu_vendor_open. */
struct ct_cu_blaslt_api {
#define CT_CU_SYMBOL(name) decltype(&::name) name;
#include "cu_blaslt_symbols.h"
#undef CT_CU_SYMBOL
};

/* cuDNN's entry points, filled by ct_cu_vendor_open. */
struct ct_cu_dnn_api {
#define CT_CU_SYMBOL(name) decltype(&::name) name;
#include "cu_dnn_symbols.h"
#undef CT_CU_SYMBOL
};

extern ct_cu_blaslt_api ct_cu_blaslt;
extern ct_cu_dnn_api ct_cu_dnn;

/* Opens cuBLASLt and cuDNN and resolves every listed entry point. Where CTENSOR_CUBLASLT_LIBRARY
 * or CTENSOR_CUDNN_LIBRARY names a file, that file is opened and nothing else; otherwise each
 * library is looked up first by its soname through the dynamic loader (LD_LIBRARY_PATH, the
 * system's paths, or a copy a framework already loaded), then in the NVIDIA wheels (nvidia-cublas,
 * nvidia-cudnn-cu13) installed beside the ctensor package that holds this plugin. CT_OK, or
 * CT_ERROR_BACKEND_UNAVAILABLE naming the library, where it was looked for, how to install it and
 * the loader's message; also when the library found is older than the headers the plugin was
 * built with. Called once, from ct_plugin_init. */
int ct_cu_vendor_open(void);

/* CT_OK when `status` is CUBLAS_STATUS_SUCCESS, else CT_ERROR_BACKEND (CT_ERROR_OUT_OF_MEMORY
 * for CUBLAS_STATUS_ALLOC_FAILED) with a message naming `what` and the cuBLAS status. */
int ct_cu_blas_check(cublasStatus_t status, const char* what);

/* CT_OK when `status` is CUDNN_STATUS_SUCCESS, else CT_ERROR_BACKEND (CT_ERROR_OUT_OF_MEMORY for
 * CUDNN_STATUS_ALLOC_FAILED) with a message naming `what` and cuDNN's error string. */
int ct_cu_dnn_check(cudnnStatus_t status, const char* what);

#endif /* CTENSOR_CU_VENDOR_H_ */
