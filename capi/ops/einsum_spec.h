/* einsum_spec.h - parses einsum subscripts against one or two operands (shared by the op's
 * infer and the CPU kernel). Letters a-z and A-Z; "->" gives the output, else the output is the
 * letters that appear once, sorted (NumPy's implicit mode). A letter repeated in one operand
 * takes the diagonal (its dims must agree); a letter's dims of extent 1 broadcast against the
 * others. No ellipsis. */
#ifndef CTENSOR_EINSUM_PLAN_H_
#define CTENSOR_EINSUM_PLAN_H_

#include <string.h>

#include "../internal.h"

#define CT_EINSUM_LETTERS 52

typedef struct ct_einsum_spec {
  int32_t num_letters; /* distinct letters, in first-seen order */
  int64_t extent[CT_EINSUM_LETTERS];
  int64_t stride[2][CT_EINSUM_LETTERS]; /* element strides per operand (0: absent, broadcast) */
  int32_t out_ndim;
  int32_t out_letter[CT_MAX_NDIM]; /* letter index of each output dim */
  bool in_output[CT_EINSUM_LETTERS];
} ct_einsum_spec;

static inline int ct_einsum_code(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
  return -1;
}

static inline int ct_einsum_parse(const char* subscripts, const ct_tensor* const* operands,
                                  int32_t num_operands, ct_einsum_spec* p) {
  memset(p, 0, sizeof *p);
  if (num_operands < 1 || num_operands > 2) {
    return ct_set_error(CT_ERROR_WRONG_ARITY, "einsum: takes 1 or 2 operands, got %d",
                        num_operands);
  }
  int32_t index_of[CT_EINSUM_LETTERS];
  int32_t uses[CT_EINSUM_LETTERS] = {0};
  for (int i = 0; i < CT_EINSUM_LETTERS; ++i) index_of[i] = -1;
  const char* s = subscripts ? subscripts : "";
  int32_t op = 0, dim = 0;
  for (; *s && !(s[0] == '-' && s[1] == '>'); ++s) {
    if (*s == ' ') continue;
    if (*s == ',') {
      if (op >= num_operands - 1) {
        return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                            "einsum: \"%s\" names more operands than the %d given", subscripts,
                            num_operands);
      }
      if (dim != operands[op]->ndim) break;
      ++op;
      dim = 0;
      continue;
    }
    const int code = ct_einsum_code(*s);
    if (code < 0) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "einsum: unsupported character '%c' in \"%s\" (letters only, no "
                          "ellipsis)",
                          *s, subscripts);
    }
    const ct_tensor* t = operands[op];
    if (dim >= t->ndim) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "einsum: operand %d has %d dimensions, \"%s\" names more", op, t->ndim,
                          subscripts);
    }
    if (index_of[code] < 0) {
      index_of[code] = p->num_letters++;
      p->extent[index_of[code]] = 1;
    }
    const int32_t l = index_of[code];
    ++uses[code];
    const int64_t e = t->shape[dim];
    if (e != 1) {
      if (p->extent[l] != 1 && p->extent[l] != e) {
        return ct_set_error(CT_ERROR_SHAPE_MISMATCH, "einsum: '%c' has extent %lld and %lld", *s,
                            (long long)p->extent[l], (long long)e);
      }
      p->extent[l] = e;
      p->stride[op][l] += ct_tensor_stride(t, dim); /* repeated: the diagonal */
    }
    ++dim;
  }
  if (op != num_operands - 1 || dim != operands[op]->ndim) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "einsum: \"%s\" does not match the operands' dimensions", subscripts);
  }
  /* A letter used with extent 1 in one operand and e elsewhere broadcasts: stride 0 there. The
   * diagonal of a repeated letter needs equal dims: checked by the extent test above, except for
   * a repeated letter mixing 1 and e, which NumPy rejects too. */
  if (*s == '-') {
    for (s += 2; *s; ++s) {
      if (*s == ' ') continue;
      const int code = ct_einsum_code(*s);
      if (code < 0 || index_of[code] < 0 || p->in_output[index_of[code]]) {
        return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                            "einsum: output '%c' in \"%s\" is not an input letter, or repeats", *s,
                            subscripts);
      }
      if (p->out_ndim >= CT_MAX_NDIM) {
        return ct_set_error(CT_ERROR_INVALID_SHAPE, "einsum: too many output dimensions");
      }
      p->in_output[index_of[code]] = true;
      p->out_letter[p->out_ndim++] = index_of[code];
    }
  } else {
    for (int code = 0; code < CT_EINSUM_LETTERS; ++code) { /* a-z then A-Z: NumPy's order */
      const int c = code < 26 ? 26 + code : code - 26;     /* NumPy sorts uppercase first */
      if (uses[c] == 1) {
        if (p->out_ndim >= CT_MAX_NDIM) {
          return ct_set_error(CT_ERROR_INVALID_SHAPE, "einsum: too many output dimensions");
        }
        p->in_output[index_of[c]] = true;
        p->out_letter[p->out_ndim++] = index_of[c];
      }
    }
  }
  return CT_OK;
}

#endif /* CTENSOR_EINSUM_PLAN_H_ */
