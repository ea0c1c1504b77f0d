/* conv2d_dtype_impl.h - the conv2d kernels of one dtype (the weight packer, the GEMM's B packer,
 * the unfold of a folded product, the workspace query and the kernel), included by
 * conv2d_kernels.c once per dtype with these macros defined:
 *   CT_C2_SFX   the name suffix (f32, ...): the functions are named <name>_<SFX>
 *   CT_C2_T     the storage type; CT_C2_C the compute type (float for f16 and bf16)
 *   CT_C2_ID    the dtype id (CT_DT_F32, ...)
 *   CT_C2_GEMM  the GEMM instance taking CT_C2_C panels into CT_C2_T (ct_gemm_<GEMM>)
 * No include guard: a template. */
#if !defined(CT_C2_SFX) || !defined(CT_C2_T) || !defined(CT_C2_C) || !defined(CT_C2_GEMM)
#error "define CT_C2_SFX, CT_C2_T, CT_C2_C, CT_C2_ID and CT_C2_GEMM before including this"
#endif

#define CT_C2_CAT2(a, b) a##_##b
#define CT_C2_CAT(a, b) CT_C2_CAT2(a, b)
#define CT_C2_NAME(name) CT_C2_CAT(name, CT_C2_SFX)
#define CT_C2_GEMM_NAME(name) CT_C2_CAT(name, CT_C2_GEMM)

/* Weight rows [begin, end) to compact CT_C2_C, bias in the last column. */
static void CT_C2_NAME(ct_cpu_conv2d_pack)(int64_t begin, int64_t end, void* context) {
  const ct_conv2d_job* job = context;
  CT_C2_C* packed = job->packed;
  /* A weight compact per output channel, already of the compute type: a row is one copy. */
  const bool rows_compact = sizeof(CT_C2_T) == sizeof(CT_C2_C) && job->weight_rows_compact;
  for (int64_t o = begin; o < end; ++o) {
    CT_C2_C* dst = packed + o * job->k;
    const CT_C2_T* w = (const CT_C2_T*)job->weight + o * job->ws[0];
    if (rows_compact) {
      memcpy(dst, w, (size_t)job->taps * sizeof(CT_C2_C));
      dst += job->taps;
    } else {
      for (int64_t c = 0; c < job->cg; ++c) {
        for (int64_t i = 0; i < job->kh; ++i) {
          const CT_C2_T* src = w + c * job->ws[1] + i * job->ws[2];
          for (int64_t j = 0; j < job->kw; ++j) *dst++ = CT_C2_NAME(ct_load)(src[j * job->ws[3]]);
        }
      }
    }
    if (job->has_bias) *dst = CT_C2_NAME(ct_load)(((const CT_C2_T*)job->bias)[o * job->bs]);
  }
}

/* The GEMM's B packer (ct_gemm_pack_b_fn): col rows [k0, k0 + kc), columns [j0, j0 + nb) of
 * batch entry (image, group[, output row]). Tap by tap (an odometer over (c, i, j)), so that
 * each tap reads its input rows in order, as the hardware prefetchers like; the columns go in
 * stretches that stay in one output row and one micro-panel, each a left padding, a copy of
 * one input row (contiguous when the stride and the input's column stride are 1) and a right
 * padding. No divisions inside the loops. */
static void CT_C2_NAME(ct_cpu_conv2d_pack_col)(const void* context, int64_t batch, int64_t k0,
                                               int64_t kc, int64_t j0, int64_t nb, int64_t nr,
                                               void* dst_void) {
  const ct_conv2d_job* job = context;
  CT_C2_C* dst = dst_void;
  int64_t row = 0;
  if (job->per_row) {
    row = batch % job->oh;
    batch /= job->oh;
  }
  const int64_t group = batch % job->groups;
  int64_t image = batch / job->groups, first = row * job->ow + j0; /* flat position of j0 */
  if (job->folded) { /* chunk `image`, column j0: position g % P of image g / P */
    const int64_t g = image * job->fold_q + j0;
    image = g / job->p;
    first = g % job->p;
  }
  const CT_C2_T* x = (const CT_C2_T*)job->x + group * job->cg * job->xs[1];
  const int64_t ow_n = job->ow, step = job->stride[1] * job->xs[3];
  const int64_t oh_first = first / ow_n, ow_first = first % ow_n;
  const int64_t tail = (nb + nr - 1) / nr * nr - nb; /* zero columns of the last panel */
  CT_C2_C* last = dst + (nb / nr) * kc * nr;         /* the last panel, if partial */
  const int64_t tap0 = k0 < job->taps ? k0 : job->taps;
  int64_t c = tap0 / (job->kh * job->kw), i = (tap0 / job->kw) % job->kh, j = tap0 % job->kw;
  for (int64_t r = 0; r < kc; ++r) {
    if (k0 + r >= job->taps) { /* the bias row */
      CT_C2_C* pd = dst + r * nr;
      for (int64_t t = 0, pt = 0; t < nb; ++t) {
        pd[pt] = (CT_C2_C)1;
        if (++pt == nr) {
          pt = 0;
          pd += kc * nr;
        }
      }
      for (int64_t u = nr - tail; u < nr && tail > 0; ++u) last[r * nr + u] = (CT_C2_C)0;
      continue;
    }
    int64_t shift, lo, hi;
    if (j < CT_CONV2D_MAX_KW) {
      shift = job->col_shift[j];
      lo = job->col_lo[j];
      hi = job->col_hi[j];
    } else {
      ct_conv2d_valid_columns(job, j, &shift, &lo, &hi);
    }
    const CT_C2_T* xc = x + c * job->xs[1] + shift * job->xs[3];
    const int64_t ih_base = i * job->dilation[0] - job->padding[0];
    CT_C2_C* pd = dst + r * nr; /* row r of the current panel */
    int64_t pt = 0, oh = oh_first, ow = ow_first, img = image;
    for (int64_t t = 0; t < nb;) {
      int64_t seg = nb - t;
      if (seg > ow_n - ow) seg = ow_n - ow;
      if (seg > nr - pt) seg = nr - pt;
      CT_C2_C* ds = pd + pt;
      const int64_t ih = oh * job->stride[0] + ih_base;
      if (ih < 0 || ih >= job->h || img >= job->n) { /* padding, or past the last image */
        ct_conv2d_zero(ds, (size_t)seg * sizeof(CT_C2_C));
      } else if (step == 1 && seg <= CT_CONV2D_SHORT_SEGMENT) {
        /* A short piece (narrow images): one pass, zero outside the input's columns. */
        const CT_C2_T* src = xc + img * job->xs[0] + ih * job->xs[2] + ow;
        const int64_t a = lo - ow, b = hi - ow;
        for (int64_t u = 0; u < seg; ++u) {
          ds[u] = u >= a && u < b ? CT_C2_NAME(ct_load)(src[u]) : (CT_C2_C)0;
        }
      } else {
        /* [0, a): left padding, [a, b): inside the input, [b, seg): right padding. */
        int64_t a = lo - ow, b = hi - ow;
        a = a < 0 ? 0 : (a > seg ? seg : a);
        b = b < a ? a : (b > seg ? seg : b);
        const CT_C2_T* src = xc + img * job->xs[0] + ih * job->xs[2] + ow * step;
        ct_conv2d_zero(ds, (size_t)a * sizeof(CT_C2_C));
        if (step == 1 && sizeof(CT_C2_T) == sizeof(CT_C2_C)) { /* float or double: a plain copy */
          ct_conv2d_copy(ds + a, src + a, (size_t)(b - a) * sizeof(CT_C2_C));
        } else if (step == 1) {
          for (int64_t u = a; u < b; ++u) ds[u] = CT_C2_NAME(ct_load)(src[u]);
        } else {
          for (int64_t u = a; u < b; ++u) ds[u] = CT_C2_NAME(ct_load)(src[u * step]);
        }
        ct_conv2d_zero(ds + b, (size_t)(seg - b) * sizeof(CT_C2_C));
      }
      t += seg;
      ow += seg;
      if (ow == ow_n) {
        ow = 0;
        if (++oh == job->oh) { /* the next image (folded) */
          oh = 0;
          ++img;
        }
      }
      pt += seg;
      if (pt == nr) {
        pt = 0;
        pd += kc * nr;
      }
    }
    for (int64_t u = nr - tail; u < nr && tail > 0; ++u) last[r * nr + u] = (CT_C2_C)0;
    if (++j == job->kw) {
      j = 0;
      if (++i == job->kh) {
        i = 0;
        ++c;
      }
    }
  }
}

/* Output channels [begin, end) from the folded product's staging buffer (O × (N · P)) into
 * the output, whatever its strides. */
static void CT_C2_NAME(ct_cpu_conv2d_unfold)(int64_t begin, int64_t end, void* context) {
  const ct_conv2d_job* job = context;
  for (int64_t o = begin; o < end; ++o) {
    const CT_C2_T* src = (const CT_C2_T*)job->staged + o * job->fold_chunks * job->fold_q;
    for (int64_t image = 0; image < job->n; ++image) {
      CT_C2_T* dst = (CT_C2_T*)(void*)job->out + image * job->os[0] + o * job->os[1];
      for (int64_t oh = 0; oh < job->oh; ++oh, src += job->ow) {
        CT_C2_T* row = dst + oh * job->os[2];
        for (int64_t ow = 0; ow < job->ow; ++ow) row[ow * job->os[3]] = src[ow];
      }
    }
  }
}

int CT_C2_NAME(ct_cpu_conv2d_workspace)(const ct_kernel_call* call, uint64_t* bytes,
                                        uint64_t* alignment) {
  ct_conv2d_job job;
  const int status =
      ct_conv2d_prepare(call, (int64_t)sizeof(CT_C2_C), (int64_t)sizeof(CT_C2_T), &job);
  if (status != CT_OK) return status;
  *alignment = CT_CONV2D_ALIGNMENT;
  /* Winograd, with room for the direct methods (its fallback for values not all finite). */
  ct_conv2d_winograd_job wino;
  const uint64_t wino_bytes =
      (CT_C2_ID) == CT_DT_F32 && !ct_conv2d_empty(&job) && ct_conv2d_winograd_of(&job, &wino)
          ? ct_conv2d_winograd_workspace(&wino)
          : 0;
  ct_conv2d_direct_job direct;
  const ct_conv2d_direct_shape* shape =
      (CT_C2_ID) == CT_DT_F32 && !ct_conv2d_empty(&job) ? ct_conv2d_direct_of(&job, &direct) : NULL;
  if (shape) {
    *bytes = ct_conv2d_direct_workspace(&direct, shape);
    if (*bytes >= (uint64_t)CT_SIZE_TOO_LARGE) {
      *bytes = 0;
      return ct_set_error(CT_ERROR_SIZE_OVERFLOW,
                          "conv2d: the packed weight (%lld output channels, %lld taps) overflows "
                          "int64 bytes",
                          (long long)job.out_channels, (long long)job.taps);
    }
    if (*bytes < wino_bytes) *bytes = wino_bytes;
    return CT_OK;
  }
  job.gemm.pack_b = CT_C2_NAME(ct_cpu_conv2d_pack_col);
  *bytes = ct_conv2d_empty(&job) ? 0
                                 : (uint64_t)job.weight_bytes + (uint64_t)job.staged_bytes +
                                       CT_C2_GEMM_NAME(ct_gemm_workspace)(&job.gemm);
  if (*bytes < wino_bytes) *bytes = wino_bytes;
  *alignment = CT_CONV2D_ALIGNMENT;
  return CT_OK;
}

int CT_C2_NAME(ct_cpu_conv2d)(const ct_kernel_call* call) {
  ct_conv2d_job job;
  const int status =
      ct_conv2d_prepare(call, (int64_t)sizeof(CT_C2_C), (int64_t)sizeof(CT_C2_T), &job);
  if (status != CT_OK) return status;
  if (ct_conv2d_empty(&job)) return CT_OK;
  ct_conv2d_winograd_job wino;
  if ((CT_C2_ID) == CT_DT_F32 && ct_conv2d_winograd_of(&job, &wino) &&
      ct_conv2d_winograd_run(&wino, call->workspace, call->workspace_size)) {
    return CT_OK;
  }
  ct_conv2d_direct_job direct;
  const ct_conv2d_direct_shape* shape =
      (CT_C2_ID) == CT_DT_F32 ? ct_conv2d_direct_of(&job, &direct) : NULL;
  if (shape) {
    ct_conv2d_direct_run(&direct, shape, call->workspace);
    return CT_OK;
  }
  job.packed = call->workspace;
  if (job.k > 0 && !job.weight_in_place) {
    ct_cpu_parallel_for(job.out_channels, job.k, CT_C2_NAME(ct_cpu_conv2d_pack), &job);
  }
  job.gemm.a = job.weight_in_place ? (const void*)job.weight : job.packed;
  job.gemm.pack_b = CT_C2_NAME(ct_cpu_conv2d_pack_col);
  job.gemm.pack_b_context = &job;
  const int64_t used = job.weight_bytes + job.staged_bytes;
  if (job.folded) job.staged = job.gemm.c = (char*)call->workspace + job.weight_bytes;
  job.gemm.workspace = (char*)call->workspace + used;
  job.gemm.workspace_size = call->workspace_size - (uint64_t)used;
  CT_C2_GEMM_NAME(ct_gemm)(&job.gemm);
  if (job.folded) {
    ct_cpu_parallel_for(job.out_channels, job.n * job.p, CT_C2_NAME(ct_cpu_conv2d_unfold), &job);
  }
  return CT_OK;
}

#undef CT_C2_GEMM_NAME
#undef CT_C2_NAME
#undef CT_C2_CAT
#undef CT_C2_CAT2
#undef CT_C2_GEMM
#undef CT_C2_ID
#undef CT_C2_C
#undef CT_C2_T
#undef CT_C2_SFX
