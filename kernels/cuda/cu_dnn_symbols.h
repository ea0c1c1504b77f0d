/* cu_dnn_symbols.h - the cuDNN entry points the plugin calls, one CT_CU_SYMBOL line each
 * (X-macro, see cu_vendor.h). A kernel that calls another entry point adds it here. */
CT_CU_SYMBOL(cudnnGetVersion)
CT_CU_SYMBOL(cudnnGetErrorString)
CT_CU_SYMBOL(cudnnCreate)
CT_CU_SYMBOL(cudnnDestroy)
CT_CU_SYMBOL(cudnnSetStream)
