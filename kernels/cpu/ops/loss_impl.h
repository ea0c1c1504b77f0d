/* loss_impl.h - the per-dtype bodies of the losses (loss_kernels.c includes it once per float
 * dtype, with SFX, T (storage), C (compute type) and CT_LOSS_VECTOR (1: contiguous float32 rows
 * use vector_math's loops) defined). Sums accumulate in double in CT_LOSS_LANES independent
 * accumulators (the blocked sum of one row), which also lets the loops vectorise. */

#define CT_LOSS_CAT2(a, b) a##_##b
#define CT_LOSS_CAT(a, b) CT_LOSS_CAT2(a, b)
#define CT_LOSS_FN(name) CT_LOSS_CAT(ct_loss_##name, SFX)
#define CT_LOSS_LOAD(p) CT_LOSS_CAT(ct_load, SFX)(*(const T*)(p))
#define CT_LOSS_STORE(p, v) (*(T*)(p) = CT_LOSS_CAT(ct_store, SFX)((C)(v)))

/* Weight of class c (1 without a weight). */
static inline C CT_LOSS_FN(weight)(const ct_class_job* j, int64_t c) {
  return j->weight ? CT_LOSS_LOAD(j->weight + c * j->weight_step) : (C)1;
}

/* The row's log-sum-exp (double) and maximum (*high, in C). */
static double CT_LOSS_FN(lse)(const ct_class_job* j, const char* x, C* high) {
  const int64_t n = j->classes, sx = j->step[0];
#if CT_LOSS_VECTOR
  if (sx == (int64_t)sizeof(float)) {
    const ct_vector_math* vm = ct_vector_math_get();
    const float m = vm->max_f32((const float*)x, n);
    *high = m;
    return (double)m + log(vm->exp_sum_f32((const float*)x, NULL, n, m));
  }
#endif
  C m = (C)-INFINITY;
  for (int64_t c = 0; c < n; ++c) {
    const C v = CT_LOSS_LOAD(x + c * sx);
    m = CT_NAN_MAX(m, v);
  }
  double acc[CT_LOSS_LANES] = {0.0};
  int64_t c = 0;
  for (; c + CT_LOSS_LANES <= n; c += CT_LOSS_LANES) {
    for (int k = 0; k < CT_LOSS_LANES; ++k) {
      acc[k] += (double)CT_LOSS_CAT(ct_loss_exp, C)(CT_LOSS_LOAD(x + (c + k) * sx) - m);
    }
  }
  for (; c < n; ++c) acc[0] += (double)CT_LOSS_CAT(ct_loss_exp, C)(CT_LOSS_LOAD(x + c * sx) - m);
  *high = m;
  return (double)m + log(ct_loss_lanes_total(acc));
}

/* sum_c w[c] q[c] (lse - x[c]) with q the smoothed distribution: q[c] = (1 - s) t[c] + s / C
 * for a probability target row t, q = s / C without one (the smoothing term of a class-index
 * target). */
static double CT_LOSS_FN(spread)(const ct_class_job* j, const char* x, const char* t, double lse) {
  const int64_t n = j->classes, sx = j->step[0], st = j->step[1];
  const double keep = 1.0 - j->smoothing, flat = j->smoothing / (double)n;
  double acc[CT_LOSS_LANES] = {0.0};
  for (int64_t c = 0; c < n; ++c) {
    const double q = t ? keep * (double)CT_LOSS_LOAD(t + c * st) + flat : flat;
    acc[c % CT_LOSS_LANES] +=
        (double)CT_LOSS_FN(weight)(j, c) * q * (lse - (double)CT_LOSS_LOAD(x + c * sx));
  }
  return ct_loss_lanes_total(acc);
}

/* One sample's loss: y the class index (probability targets: -1, t the target row). */
static double CT_LOSS_FN(class_forward)(const ct_class_job* j, const char* x, const char* t,
                                        int64_t y) {
  if (j->nll) return -(double)CT_LOSS_FN(weight)(j, y) * (double)CT_LOSS_LOAD(x + y * j->step[0]);
  C high;
  const double lse = CT_LOSS_FN(lse)(j, x, &high);
  if (y < 0) return CT_LOSS_FN(spread)(j, x, t, lse);
  const double wy = (double)CT_LOSS_FN(weight)(j, y);
  double loss = (1.0 - j->smoothing) * wy * (lse - (double)CT_LOSS_LOAD(x + y * j->step[0]));
  if (j->smoothing > 0) loss += CT_LOSS_FN(spread)(j, x, NULL, lse);
  return loss;
}

/* One sample's cotangents: g the sample's cotangent (the mean's division done), gx the
 * grad_logits row, gt the grad_target row (probability targets). */
static void CT_LOSS_FN(class_backward)(const ct_class_job* j, const char* x, const char* t,
                                       int64_t y, double g, char* gx, char* gt) {
  const int64_t n = j->classes, sx = j->step[0], sg = j->step[3], st = j->step[1];
  if (j->nll) {
    for (int64_t c = 0; c < n; ++c) CT_LOSS_STORE(gx + c * sg, 0);
    CT_LOSS_STORE(gx + y * sg, -g * (double)CT_LOSS_FN(weight)(j, y));
    return;
  }
  C high;
  const double lse = CT_LOSS_FN(lse)(j, x, &high);
  const double keep = 1.0 - j->smoothing, flat = j->smoothing / (double)n;
  if (y >= 0) {
    /* grad = g (p (keep w[y] + flat W) - flat w - keep w[y] e_y) */
    const double wy = (double)CT_LOSS_FN(weight)(j, y);
    const double a = keep * wy + flat * j->weight_total;
#if CT_LOSS_VECTOR
    if (sx == (int64_t)sizeof(float) && sg == (int64_t)sizeof(float) && !j->weight) {
      /* exponentials straight into the row, then one rescaling (lse's maximum reused) */
      const ct_vector_math* vm = ct_vector_math_get();
      const float m = (float)high;
      const double sum = vm->exp_sum_f32((const float*)x, (float*)gx, n, m);
      vm->scale_f32((float*)gx, (float*)gx, n, (float)(g * a / sum), 0);
      if (flat != 0) {
        const float shift = (float)(g * flat);
        float* row = (float*)gx;
        for (int64_t c = 0; c < n; ++c) row[c] -= shift;
      }
      ((float*)gx)[y] -= (float)(g * keep * wy);
      return;
    }
#endif
    for (int64_t c = 0; c < n; ++c) {
      const C p = CT_LOSS_CAT(ct_loss_exp, C)((C)((double)CT_LOSS_LOAD(x + c * sx) - lse));
      double v = (double)p * a;
      if (flat != 0) v -= flat * (double)CT_LOSS_FN(weight)(j, c);
      if (c == y) v -= keep * wy;
      CT_LOSS_STORE(gx + c * sg, g * v);
    }
    return;
  }
  /* probability target: grad = g (p sum_k w[k] q[k] - w q), grad_target = g keep w (lse - x) */
  double acc[CT_LOSS_LANES] = {0.0};
  for (int64_t c = 0; c < n; ++c) {
    const double q = keep * (double)CT_LOSS_LOAD(t + c * st) + flat;
    acc[c % CT_LOSS_LANES] += (double)CT_LOSS_FN(weight)(j, c) * q;
  }
  const double a = ct_loss_lanes_total(acc);
  const int64_t sgt = j->step[4];
  for (int64_t c = 0; c < n; ++c) {
    const double xc = (double)CT_LOSS_LOAD(x + c * sx);
    const double w = (double)CT_LOSS_FN(weight)(j, c);
    const double q = keep * (double)CT_LOSS_LOAD(t + c * st) + flat;
    const C p = CT_LOSS_CAT(ct_loss_exp, C)((C)(xc - lse));
    CT_LOSS_STORE(gx + c * sg, g * ((double)p * a - w * q));
    CT_LOSS_STORE(gt + c * sgt, g * keep * w * (lse - xc));
  }
}

/* ----- element-wise losses: one element's loss, or its cotangents ----- */

/* log(sigmoid(v)) without overflow */
static inline C CT_LOSS_FN(log_sigmoid)(C v) {
  return (v < 0 ? v : (C)0) - CT_LOSS_CAT(ct_loss_log1p, C)(CT_LOSS_CAT(ct_loss_exp, C)(-fabs(v)));
}

static double CT_LOSS_FN(pointwise_forward)(const ct_point_job* j, const char* const* p) {
  const C x = CT_LOSS_LOAD(p[0]), t = CT_LOSS_LOAD(p[1]);
  if (j->kind == CT_POINT_MSE) {
    const C d = x - t;
    return (double)(d * d);
  }
  if (j->kind == CT_POINT_SMOOTH_L1) {
    const C d = (C)fabs(x - t), beta = (C)j->beta;
    return (double)(d < beta ? (C)0.5 * d * d / beta : d - (C)0.5 * beta);
  }
  const C w = p[2] ? CT_LOSS_LOAD(p[2]) : (C)1;
  const C lw = p[3] ? (C)1 + (CT_LOSS_LOAD(p[3]) - (C)1) * t : (C)1;
  return (double)(w * (((C)1 - t) * x - lw * CT_LOSS_FN(log_sigmoid)(x)));
}

/* Writes the cotangent(s) of one element: q[0] (grad_x / grad_logits), q[1] (grad_target, BCE). */
static void CT_LOSS_FN(pointwise_backward)(const ct_point_job* j, const char* const* p, double gd,
                                           char* const* q) {
  const C x = CT_LOSS_LOAD(p[0]), t = CT_LOSS_LOAD(p[1]), g = (C)gd;
  if (j->kind == CT_POINT_MSE) {
    CT_LOSS_STORE(q[0], (C)2 * (x - t) * g);
    return;
  }
  if (j->kind == CT_POINT_SMOOTH_L1) {
    const C d = x - t, beta = (C)j->beta;
    const C slope = fabs(d) < beta ? d / beta : d > 0 ? (C)1 : d < 0 ? (C)-1 : (C)0;
    CT_LOSS_STORE(q[0], slope * g);
    return;
  }
  const C w = p[2] ? CT_LOSS_LOAD(p[2]) : (C)1;
  const C pw = p[3] ? CT_LOSS_LOAD(p[3]) : (C)1;
  const C lw = (C)1 + (pw - (C)1) * t;
  const C sig = (C)1 / ((C)1 + CT_LOSS_CAT(ct_loss_exp, C)(-x));
  CT_LOSS_STORE(q[0], g * w * (lw * sig - pw * t));
  CT_LOSS_STORE(q[1], g * w * (-x - (pw - (C)1) * CT_LOSS_FN(log_sigmoid)(x)));
}

static void CT_LOSS_FN(store)(char* p, double v) {
  CT_LOSS_STORE(p, v);
}
static double CT_LOSS_FN(load)(const char* p) {
  return (double)CT_LOSS_LOAD(p);
}

static const ct_loss_fns CT_LOSS_FN(fns) = {sizeof(T),
                                            CT_LOSS_FN(class_forward),
                                            CT_LOSS_FN(class_backward),
                                            CT_LOSS_FN(pointwise_forward),
                                            CT_LOSS_FN(pointwise_backward),
                                            CT_LOSS_FN(store),
                                            CT_LOSS_FN(load)};

#undef CT_LOSS_CAT2
#undef CT_LOSS_CAT
#undef CT_LOSS_FN
#undef CT_LOSS_LOAD
#undef CT_LOSS_STORE
