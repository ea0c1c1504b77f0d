/* cl_families.h - the OpenCL backend's kernel families, one line each (X-macro). */
CT_CL_FAMILY(elementwise)
