/* reduce_grad_impl.h - the loops of reduce_grad_kernels.c for one dtype: included once per
 * dtype with CT_RG_SFX (the dtype's suffix) defined, so that element loads and stores inline.
 * Names get the suffix through CT_RG_NAME. */
#define CT_RG_CAT2(a, b) a##_##b
#define CT_RG_CAT(a, b) CT_RG_CAT2(a, b)
#define CT_RG_NAME(name) CT_RG_CAT(name, CT_RG_SFX)
#define CT_RG_LOAD(p) CT_RG_CAT(ct_rgrad_load, CT_RG_SFX)(p)
#define CT_RG_STORE(p, v) CT_RG_CAT(ct_rgrad_store, CT_RG_SFX)(p, v)

/* prod, max, min, var, std: a block of `width` groups neighbouring along the last kept dim
 * (unit `unit` of ct_rgrad_units), walked together so that a kept dim denser in memory than the
 * reduced ones is read in order: the groups' statistics sit in small arrays. */
static void CT_RG_NAME(ct_rgrad_block)(const ct_rgrad_job* job, int64_t unit) {
  const int32_t lo = job->n_outer - 1;
  const int64_t last = lo >= 0 ? job->outer_shape[lo] : 1;
  const int64_t blocks = ct_div_up(last, job->block);
  const int64_t w0 = (unit % blocks) * job->block;
  const int64_t width = last - w0 < job->block ? last - w0 : job->block;
  int64_t rest = unit / blocks;
  const int64_t xw = lo >= 0 ? job->x_outer[lo] : 0, gxw = lo >= 0 ? job->gx_outer[lo] : 0;
  const int64_t gw = lo >= 0 ? job->g_outer[lo] : 0, ow = lo >= 0 ? job->o_outer[lo] : 0;
  int64_t xo = w0 * xw, gxo = w0 * gxw, go = w0 * gw, oo = w0 * ow;
  for (int32_t d = lo - 1; d >= 0; --d) {
    const int64_t i = rest % job->outer_shape[d];
    rest /= job->outer_shape[d];
    xo += i * job->x_outer[d];
    gxo += i * job->gx_outer[d];
    go += i * job->g_outer[d];
    oo += i * job->o_outer[d];
  }
  const char* x0 = job->x + xo;
  char* gx0 = job->gx + gxo;
  const double n = (double)job->group_size;
  double g[CT_RGRAD_BLOCK], out[CT_RGRAD_BLOCK], stat[CT_RGRAD_BLOCK];
  int64_t count[CT_RGRAD_BLOCK];
  for (int64_t w = 0; w < width; ++w) {
    g[w] = CT_RG_LOAD(job->g + go + w * gw);
    out[w] = job->out ? CT_RG_LOAD(job->out + oo + w * ow) : 0.0;
    stat[w] = job->kind == CT_RGRAD_PROD ? 1.0 : 0.0;
    count[w] = 0;
  }
  switch (job->kind) {
    case CT_RGRAD_MAX: {
      CT_RGRAD_FOR_GROUP(job, x0, gx0, {
        for (int64_t w = 0; w < width; ++w) {
          const double v = CT_RG_LOAD(xp + w * xw);
          count[w] += isnan(out[w]) ? isnan(v) : v == out[w];
        }
      });
      for (int64_t w = 0; w < width; ++w) stat[w] = g[w] / (double)count[w];
      CT_RGRAD_FOR_GROUP(job, x0, gx0, {
        for (int64_t w = 0; w < width; ++w) {
          const double v = CT_RG_LOAD(xp + w * xw);
          const bool tie = isnan(out[w]) ? isnan(v) : v == out[w];
          CT_RG_STORE(gp + w * gxw, tie ? stat[w] : 0.0);
        }
      });
      break;
    }
    case CT_RGRAD_PROD: {
      /* stat: the product of the non-zero elements, count: the zeros. No zero: g * prod / x
       * (torch's formula); one zero: it takes g * the product of the others, the rest 0; more:
       * all 0. */
      CT_RGRAD_FOR_GROUP(job, x0, gx0, {
        for (int64_t w = 0; w < width; ++w) {
          const double v = CT_RG_LOAD(xp + w * xw);
          if (v == 0) {
            ++count[w];
          } else {
            stat[w] *= v;
          }
        }
      });
      CT_RGRAD_FOR_GROUP(job, x0, gx0, {
        for (int64_t w = 0; w < width; ++w) {
          const double v = CT_RG_LOAD(xp + w * xw);
          double r = 0.0;
          if (count[w] == 0) {
            r = g[w] * (stat[w] / v);
          } else if (count[w] == 1 && v == 0) {
            r = g[w] * stat[w];
          }
          CT_RG_STORE(gp + w * gxw, r);
        }
      });
      break;
    }
    case CT_RGRAD_VECTOR_NORM: {
      /* torch's linalg_vector_norm_backward, p the ord, out the norm; count: ord +-inf's ties
       * (|x| == out, or nan) */
      const double p = job->correction;
      const bool extremum = isinf(p);
      if (extremum) {
        CT_RGRAD_FOR_GROUP(job, x0, gx0, {
          for (int64_t w = 0; w < width; ++w) {
            const double v = fabs(CT_RG_LOAD(xp + w * xw));
            count[w] += v == out[w] || isnan(v);
          }
        });
      }
      for (int64_t w = 0; w < width; ++w) {
        /* stat: the factor of sign(x) |x|^(p-1) (or of x for p = 2), 0 where the norm is 0 */
        if (extremum) {
          stat[w] = g[w] / (double)count[w];
        } else if (p < 1.0) {
          stat[w] = g[w] * pow(out[w], 1.0 - p);
        } else if (p == 2.0) {
          stat[w] = g[w];
        } else {
          stat[w] = out[w] == 0 ? 0.0 : g[w] / pow(out[w], p - 1.0);
        }
      }
      CT_RGRAD_FOR_GROUP(job, x0, gx0, {
        for (int64_t w = 0; w < width; ++w) {
          const double v = CT_RG_LOAD(xp + w * xw);
          const double sign = v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; /* torch's sgn: 0 at nan */
          const double a = fabs(v);
          double r;
          if (p == 0.0) {
            r = 0.0;
          } else if (p == 1.0) {
            r = sign * g[w];
          } else if (p == 2.0) {
            r = out[w] == 0 ? 0.0 : g[w] * (v / out[w]);
          } else if (extremum) {
            r = a == out[w] || isnan(a) ? sign * stat[w] : 0.0;
          } else if (p < 1.0) {
            r = (v == 0 ? 0.0 : sign * pow(a, p - 1.0)) * stat[w];
          } else if (p < 2.0) {
            r = sign * pow(a, p - 1.0) * stat[w];
          } else {
            r = v * pow(a, p - 2.0) * stat[w];
          }
          CT_RG_STORE(gp + w * gxw, r);
        }
      });
      break;
    }
    default: { /* var, std: stat is the mean, g becomes the factor of (x - mean) */
      CT_RGRAD_FOR_GROUP(job, x0, gx0, {
        for (int64_t w = 0; w < width; ++w) stat[w] += CT_RG_LOAD(xp + w * xw);
      });
      const double dof = n - job->correction;
      const bool degenerate = dof <= 0 && job->full; /* torch's rule without dims */
      for (int64_t w = 0; w < width; ++w) {
        stat[w] /= n;
        double scale = g[w];
        if (job->kind == CT_RGRAD_STD) { /* torch: var's backward of g / (2 std), 0 at 0 */
          scale = out[w] == 0 ? 0.0 : g[w] / (2.0 * out[w]);
        }
        g[w] = degenerate ? scale : 2.0 * scale / dof;
      }
      CT_RGRAD_FOR_GROUP(job, x0, gx0, {
        for (int64_t w = 0; w < width; ++w) {
          const double v = CT_RG_LOAD(xp + w * xw);
          const double r =
              degenerate ? g[w] * (v == stat[w] ? NAN : INFINITY) : g[w] * (v - stat[w]);
          CT_RG_STORE(gp + w * gxw, r);
        }
      });
      break;
    }
  }
}

/* sum, mean, logsumexp: grad_x[i] from grad_out's (and out's) element of i's group alone, walked
 * in x's order (rows of its last dim), so that any axis reads and writes memory in order. */
static void CT_RG_NAME(ct_rgrad_do_rows)(int64_t begin, int64_t end, void* context) {
  const ct_rgrad_job* job = context;
  const int32_t last = job->ndim - 1;
  const int64_t n = job->shape[last];
  const double scale = job->kind == CT_RGRAD_MEAN ? 1.0 / (double)job->group_size : 1.0;
  for (int64_t row = begin; row < end; ++row) {
    int64_t rest = row, xo = 0, gxo = 0, go = 0, oo = 0;
    for (int32_t d = last - 1; d >= 0; --d) {
      const int64_t i = rest % job->shape[d];
      rest /= job->shape[d];
      xo += i * job->xs[d];
      gxo += i * job->gxs[d];
      go += i * job->gs[d];
      oo += i * job->os[d];
    }
    const char* x = job->x + xo;
    const char* g = job->g + go;
    const char* o = job->out ? job->out + oo : NULL;
    char* gx = job->gx + gxo;
    if (job->kind == CT_RGRAD_LOGSUMEXP) {
      for (int64_t i = 0; i < n; ++i) {
        const double v = CT_RG_LOAD(g + i * job->gs[last]) *
                         exp(CT_RG_LOAD(x + i * job->xs[last]) - CT_RG_LOAD(o + i * job->os[last]));
        CT_RG_STORE(gx + i * job->gxs[last], v);
      }
    } else if (job->gs[last] == 0) { /* one value along the row */
      const double v = CT_RG_LOAD(g) * scale;
      for (int64_t i = 0; i < n; ++i) CT_RG_STORE(gx + i * job->gxs[last], v);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        CT_RG_STORE(gx + i * job->gxs[last], CT_RG_LOAD(g + i * job->gs[last]) * scale);
      }
    }
  }
}

static void CT_RG_NAME(ct_rgrad_do_groups)(int64_t begin, int64_t end, void* context) {
  const ct_rgrad_job* job = context;
  for (int64_t unit = begin; unit < end; ++unit) CT_RG_NAME(ct_rgrad_block)(job, unit);
}

static void CT_RG_NAME(ct_sgrad_lane)(const ct_sgrad_job* job, const char* g, const char* x,
                                      const char* out, char* gx) {
  const int64_t n = job->n;
  const int64_t shift = job->include_initial ? 1 : 0; /* g[i + shift] is x[i]'s output */
  double s = 0.0;
  for (int64_t i = n - 1; i >= 0; --i) {
    const double gi = CT_RG_LOAD(g + (i + shift) * job->g_step);
    if (!job->prod) {
      s += gi;
      CT_RG_STORE(gx + i * job->gx_step, s);
      continue;
    }
    /* s[i] = g[i] + x[i+1] s[i+1]; grad_x[i] = (prefix product before i) * s[i]. */
    s = i + 1 < n ? gi + CT_RG_LOAD(x + (i + 1) * job->x_step) * s : gi;
    const int64_t before = i - 1 + shift; /* out's index of the product of x[0..i-1] */
    const double prefix = before >= 0 ? CT_RG_LOAD(out + before * job->o_step) : 1.0;
    CT_RG_STORE(gx + i * job->gx_step, prefix * s);
  }
}

static void CT_RG_NAME(ct_sgrad_do_lanes)(int64_t begin, int64_t end, void* context) {
  const ct_sgrad_job* job = context;
  for (int64_t lane = begin; lane < end; ++lane) {
    int64_t rest = lane, go = 0, xo = 0, oo = 0, gxo = 0;
    for (int32_t d = job->outer_ndim - 1; d >= 0; --d) {
      const int64_t i = rest % job->outer_shape[d];
      rest /= job->outer_shape[d];
      go += i * job->g_strides[d];
      xo += i * job->x_strides[d];
      oo += i * job->o_strides[d];
      gxo += i * job->gx_strides[d];
    }
    CT_RG_NAME(ct_sgrad_lane)(job, job->g + go, job->x + xo, job->out ? job->out + oo : NULL,
                              job->gx + gxo);
  }
}

#undef CT_RG_CAT2
#undef CT_RG_CAT
#undef CT_RG_NAME
#undef CT_RG_LOAD
#undef CT_RG_STORE
#undef CT_RG_SFX
