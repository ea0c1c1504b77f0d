/* einsum_spec.h - parses einsum subscripts against 1 to CT_EINSUM_MAX_OPERANDS operands (shared
 * by the op's infer and the CPU kernels). Letters a-z and A-Z; "..." stands for the dims no
 * letter names (NumPy's ellipsis, broadcast across operands); "->" gives the output, else the
 * output is the ellipsis dims, then the letters that appear once, sorted (NumPy's implicit
 * mode). A letter repeated in one operand takes the diagonal (its dims must agree); a letter's
 * dims of extent 1 broadcast against the others. The parse first rewrites the spec into an
 * explicit one of letters only (each "..." as fresh letters), kept in `expanded`. */
#ifndef CTENSOR_EINSUM_PLAN_H_
#define CTENSOR_EINSUM_PLAN_H_

#include <string.h>

#include "../internal.h"

#define CT_EINSUM_LETTERS 52
#define CT_EINSUM_MAX_OPERANDS 16
/* Bytes of an expanded spec: every operand's dims, the commas, "->", the output, the NUL. */
#define CT_EINSUM_SPEC_CAP (CT_EINSUM_MAX_OPERANDS * (CT_MAX_NDIM + 1) + CT_MAX_NDIM + 4)

typedef struct ct_einsum_spec {
  int32_t num_letters; /* distinct letters, in first-seen order */
  int64_t extent[CT_EINSUM_LETTERS];
  int64_t stride[CT_EINSUM_MAX_OPERANDS][CT_EINSUM_LETTERS]; /* element strides per operand
                                                                (0: absent, broadcast) */
  int32_t out_ndim;
  int32_t out_letter[CT_MAX_NDIM]; /* letter index of each output dim */
  bool in_output[CT_EINSUM_LETTERS];
  char expanded[CT_EINSUM_SPEC_CAP]; /* the explicit, letters-only spec */
} ct_einsum_spec;

static inline int ct_einsum_code(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
  return -1;
}

/* Rewrites `subscripts` for these operands into an explicit spec of letters only
 * ("ab,bc->ac") in `out`: each "..." becomes fresh letters (ones the spec does not use),
 * right-aligned by the operand's dims so that ellipsis dims broadcast as NumPy's do; a missing
 * "->" gives NumPy's implicit output (the ellipsis dims, then the letters used once, sorted). */
static inline int ct_einsum_expand(const char* subscripts, const ct_tensor* const* operands,
                                   int32_t num_operands, char* out, size_t capacity) {
  const char* spec = subscripts ? subscripts : "";
  const char* arrow = strstr(spec, "->");
  bool used[CT_EINSUM_LETTERS] = {false};
  int32_t uses[CT_EINSUM_LETTERS] = {0};
  int32_t letters[CT_EINSUM_MAX_OPERANDS] = {0};
  bool has_ellipsis[CT_EINSUM_MAX_OPERANDS] = {false};
  int32_t op = 0;
  for (const char* s = spec; *s; ++s) {
    const bool in_inputs = !arrow || s < arrow;
    if (*s == ' ') continue;
    if (arrow && s == arrow) {
      ++s; /* skip '>' */
      continue;
    }
    if (s[0] == '.' && s[1] == '.' && s[2] == '.') {
      if (in_inputs) {
        if (has_ellipsis[op]) {
          return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                              "einsum: operand %d has more than one \"...\" in \"%s\"", op, spec);
        }
        has_ellipsis[op] = true;
      }
      s += 2;
      continue;
    }
    if (*s == ',' && in_inputs) {
      if (++op >= num_operands) {
        return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                            "einsum: \"%s\" names more operands than the %d given", spec,
                            num_operands);
      }
      continue;
    }
    const int code = ct_einsum_code(*s);
    if (code < 0) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "einsum: unsupported character '%c' in \"%s\" (letters, \",\", \"...\" "
                          "and \"->\" only)",
                          *s, spec);
    }
    used[code] = true;
    if (in_inputs) {
      ++uses[code];
      ++letters[op];
    }
  }
  if (op != num_operands - 1) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "einsum: \"%s\" names %d operands, %d given",
                        spec, op + 1, num_operands);
  }
  int32_t ell = 0; /* ellipsis dims of the broadcast: the most any operand's "..." covers */
  for (int32_t i = 0; i < num_operands; ++i) {
    const int32_t covered = operands[i]->ndim - letters[i];
    if (covered < 0 || (!has_ellipsis[i] && covered != 0)) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "einsum: operand %d has %d dimensions, \"%s\" names %d", i,
                          operands[i]->ndim, spec, letters[i]);
    }
    if (covered > ell) ell = covered;
  }
  char fresh[CT_EINSUM_LETTERS];
  int32_t num_fresh = 0;
  for (int code = 0; code < CT_EINSUM_LETTERS && num_fresh < ell; ++code) {
    if (!used[code]) fresh[num_fresh++] = (char)(code < 26 ? 'a' + code : 'A' + code - 26);
  }
  if (num_fresh < ell) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "einsum: \"%s\" leaves too few unused letters for its \"...\" dims", spec);
  }
  size_t w = 0;
#define CT_EINSUM_PUT(c)                                                                  \
  do {                                                                                    \
    if (w + 2 > capacity) {                                                               \
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "einsum: \"%s\" is too long", spec); \
    }                                                                                     \
    out[w++] = (c);                                                                       \
  } while (0)
  op = 0;
  bool out_ellipsis = false;
  for (const char* s = spec; *s; ++s) {
    const bool in_inputs = !arrow || s < arrow;
    if (*s == ' ') continue;
    if (arrow && s == arrow) {
      CT_EINSUM_PUT('-');
      CT_EINSUM_PUT('>');
      ++s;
      continue;
    }
    if (s[0] == '.' && s[1] == '.' && s[2] == '.') {
      const int32_t covered = in_inputs ? operands[op]->ndim - letters[op] : ell;
      if (!in_inputs) {
        if (out_ellipsis) {
          return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                              "einsum: the output of \"%s\" has more than one \"...\"", spec);
        }
        out_ellipsis = true;
      }
      for (int32_t j = ell - covered; j < ell; ++j) CT_EINSUM_PUT(fresh[j]);
      s += 2;
      continue;
    }
    if (*s == ',' && in_inputs) ++op;
    CT_EINSUM_PUT(*s);
  }
  if (arrow && ell > 0 && !out_ellipsis) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "einsum: \"%s\" broadcasts \"...\" dims but its output has no \"...\"",
                        spec);
  }
  if (!arrow) {
    CT_EINSUM_PUT('-');
    CT_EINSUM_PUT('>');
    for (int32_t j = 0; j < ell; ++j) CT_EINSUM_PUT(fresh[j]);
    for (int code = 0; code < CT_EINSUM_LETTERS; ++code) { /* NumPy sorts uppercase first */
      const int c = code < 26 ? 26 + code : code - 26;
      if (uses[c] == 1) CT_EINSUM_PUT((char)(c < 26 ? 'a' + c : 'A' + c - 26));
    }
  }
#undef CT_EINSUM_PUT
  out[w] = '\0';
  return CT_OK;
}

static inline int ct_einsum_parse(const char* subscripts, const ct_tensor* const* operands,
                                  int32_t num_operands, ct_einsum_spec* p) {
  memset(p, 0, sizeof *p);
  if (num_operands < 1 || num_operands > CT_EINSUM_MAX_OPERANDS) {
    return ct_set_error(CT_ERROR_WRONG_ARITY, "einsum: takes 1 to %d operands, got %d",
                        CT_EINSUM_MAX_OPERANDS, num_operands);
  }
  const int expand_status =
      ct_einsum_expand(subscripts, operands, num_operands, p->expanded, sizeof p->expanded);
  if (expand_status != CT_OK) return expand_status;
  int32_t index_of[CT_EINSUM_LETTERS];
  for (int i = 0; i < CT_EINSUM_LETTERS; ++i) index_of[i] = -1;
  const char* s = p->expanded;
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
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "einsum: unsupported character '%c' in \"%s\"",
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
  }
  return CT_OK;
}

#endif /* CTENSOR_EINSUM_PLAN_H_ */
