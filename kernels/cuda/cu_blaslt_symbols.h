/* cu_blaslt_symbols.h - the cuBLASLt entry points the plugin calls, one CT_CU_SYMBOL line each
 * (X-macro, see cu_vendor.h). A kernel that calls another entry point adds it here. */
CT_CU_SYMBOL(cublasLtGetVersion)
CT_CU_SYMBOL(cublasLtGetStatusName)
CT_CU_SYMBOL(cublasLtGetStatusString)
CT_CU_SYMBOL(cublasLtCreate)
CT_CU_SYMBOL(cublasLtDestroy)
