/* cl_families.h - the OpenCL backend's kernel families, one line each (X-macro). */
CT_CL_FAMILY(elementwise)
CT_CL_FAMILY(reduce)
CT_CL_FAMILY(matmul)
CT_CL_FAMILY(softmax)
CT_CL_FAMILY(norm)
