/* gradient_parse.c - turns one gradient row (gradient_rows.h) into a ct_gradient: tokenises the
 * formula, resolves every name against the forward op's schema and every step against its op's
 * schema, and records what the program reads. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradient_parse.h"

#define CT_GRAD_MAX_STEPS 32
#define CT_GRAD_MAX_NAMES 96
#define CT_GRAD_MAX_LIST 16
#define CT_GRAD_NAME_SIZE 64
#define CT_GRAD_MAX_TARGETS 8

typedef enum ct_token_kind {
  CT_TOKEN_END,
  CT_TOKEN_NAME,
  CT_TOKEN_NUMBER,
  CT_TOKEN_STRING,
  CT_TOKEN_PUNCT
} ct_token_kind;

typedef struct ct_token {
  ct_token_kind kind;
  const char* start;
  size_t length;
} ct_token;

/* A name the program can read: a forward input, output, cotangent, or a step's output. */
typedef struct ct_grad_name {
  char text[CT_GRAD_NAME_SIZE];
  ct_grad_value value;
} ct_grad_name;

typedef struct ct_grad_parser {
  const char* op;     /* the forward op (for messages) */
  const char* cursor; /* next character of the formula */
  ct_token token;     /* the current token */
  const ct_op_schema* forward;
  ct_grad_name names[CT_GRAD_MAX_NAMES];
  int32_t num_names;
  ct_gradient_build* build;
} ct_grad_parser;

static int ct_parse_error(const ct_grad_parser* p, const char* what) {
  const ct_token* t = &p->token;
  const int shown = t->kind == CT_TOKEN_END ? 5 : (int)(t->length > 40 ? 40 : t->length);
  return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "gradient row of '%s': %s at '%.*s'", p->op, what,
                      shown, t->kind == CT_TOKEN_END ? "(end)" : t->start);
}

static void ct_next_token(ct_grad_parser* p) {
  const char* s = p->cursor;
  while (isspace((unsigned char)*s)) ++s;
  ct_token* t = &p->token;
  t->start = s;
  if (*s == '\0') {
    t->kind = CT_TOKEN_END;
    t->length = 0;
  } else if (isalpha((unsigned char)*s) || *s == '_') {
    while (isalnum((unsigned char)*s) || *s == '_') ++s;
    t->kind = CT_TOKEN_NAME;
  } else if (isdigit((unsigned char)*s) || ((*s == '-' || *s == '.') && s[1] != '\0')) {
    ++s;
    while (isalnum((unsigned char)*s) || *s == '.' || ((*s == '-' || *s == '+') && (s[-1] == 'e')))
      ++s;
    t->kind = CT_TOKEN_NUMBER;
  } else if (*s == '"') {
    ++s;
    while (*s && *s != '"') ++s;
    if (*s == '"') ++s;
    t->kind = CT_TOKEN_STRING;
  } else {
    ++s;
    t->kind = CT_TOKEN_PUNCT;
  }
  t->length = (size_t)(s - t->start);
  p->cursor = s;
}

static bool ct_token_is(const ct_grad_parser* p, char punct) {
  return p->token.kind == CT_TOKEN_PUNCT && p->token.start[0] == punct;
}

static bool ct_token_is_name(const ct_grad_parser* p, const char* name) {
  return p->token.kind == CT_TOKEN_NAME && p->token.length == strlen(name) &&
         strncmp(p->token.start, name, p->token.length) == 0;
}

static int ct_expect(ct_grad_parser* p, char punct) {
  if (!ct_token_is(p, punct)) {
    char what[16];
    snprintf(what, sizeof what, "expected '%c'", punct);
    return ct_parse_error(p, what);
  }
  ct_next_token(p);
  return CT_OK;
}

/* Copies the current name token into `out`. */
static int ct_take_name(ct_grad_parser* p, char out[CT_GRAD_NAME_SIZE]) {
  if (p->token.kind != CT_TOKEN_NAME) return ct_parse_error(p, "expected a name");
  if (p->token.length >= CT_GRAD_NAME_SIZE) return ct_parse_error(p, "name too long");
  memcpy(out, p->token.start, p->token.length);
  out[p->token.length] = '\0';
  ct_next_token(p);
  return CT_OK;
}

static const ct_grad_name* ct_find_name(const ct_grad_parser* p, const char* text) {
  for (int32_t i = 0; i < p->num_names; ++i) {
    if (strcmp(p->names[i].text, text) == 0) return &p->names[i];
  }
  return NULL;
}

static int ct_define_name(ct_grad_parser* p, const char* text, ct_grad_value value) {
  if (ct_find_name(p, text)) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "gradient row of '%s': '%s' is defined twice",
                        p->op, text);
  }
  if (p->num_names == CT_GRAD_MAX_NAMES) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "gradient row of '%s': too many names", p->op);
  }
  const size_t length = strlen(text);
  if (length >= sizeof p->names[0].text) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "gradient row of '%s': name '%s' is too long",
                        p->op, text);
  }
  ct_grad_name* name = &p->names[p->num_names++];
  memcpy(name->text, text, length + 1);
  name->value = value;
  return CT_OK;
}

/* The forward call's names: inputs, outputs and the outputs' cotangents (grad_<output>). */
static int ct_define_forward_names(ct_grad_parser* p) {
  const ct_op_schema* s = p->forward;
  char text[CT_GRAD_NAME_SIZE + 8];
  for (int32_t i = 0; i < s->num_inputs; ++i) {
    const int status =
        ct_define_name(p, s->inputs[i].name, (ct_grad_value){CT_GRAD_INPUT, i, 0, 0});
    if (status != CT_OK) return status;
  }
  for (int32_t j = 0; j < s->num_outputs; ++j) {
    int status = ct_define_name(p, s->outputs[j].name, (ct_grad_value){CT_GRAD_OUTPUT, j, 0, 0});
    if (status != CT_OK) return status;
    snprintf(text, sizeof text, "grad_%s", s->outputs[j].name);
    status = ct_define_name(p, text, (ct_grad_value){CT_GRAD_COTANGENT, j, 0, 0});
    if (status != CT_OK) return status;
  }
  return CT_OK;
}

static void* ct_build_alloc(ct_gradient_build* build, size_t bytes) {
  void* memory = calloc(1, bytes ? bytes : 1);
  if (!memory) return NULL;
  if (build->num_blocks == CT_GRAD_MAX_BLOCKS) {
    free(memory);
    return NULL;
  }
  build->blocks[build->num_blocks++] = memory;
  return memory;
}

static char* ct_build_strndup(ct_gradient_build* build, const char* text, size_t length) {
  char* copy = ct_build_alloc(build, length + 1);
  if (copy) memcpy(copy, text, length);
  return copy;
}

/* A constant attribute value: integer, float, true/false, none, "string" or [integers]. */
static int ct_parse_constant(ct_grad_parser* p, ct_attr_value* value) {
  const ct_token t = p->token;
  if (ct_token_is_name(p, "true") || ct_token_is_name(p, "false")) {
    *value = (ct_attr_value){CT_ATTR_BOOL, 0, 0, {.b = t.start[0] == 't'}};
  } else if (ct_token_is_name(p, "none")) {
    *value = (ct_attr_value){CT_ATTR_NONE, 0, 0, {.i = 0}};
  } else if (t.kind == CT_TOKEN_STRING) {
    char* text = ct_build_strndup(p->build, t.start + 1, t.length >= 2 ? t.length - 2 : 0);
    if (!text) return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "gradient rows: out of memory");
    *value = (ct_attr_value){CT_ATTR_STRING, 0, 0, {.s = text}};
  } else if (t.kind == CT_TOKEN_NUMBER) {
    char text[64];
    if (t.length >= sizeof text) return ct_parse_error(p, "number too long");
    memcpy(text, t.start, t.length);
    text[t.length] = '\0';
    char* end = NULL;
    errno = 0;
    if (strpbrk(text, ".eE")) {
      const double f = strtod(text, &end);
      *value = (ct_attr_value){CT_ATTR_FLOAT, 0, 0, {.f = f}};
    } else {
      const long long i = strtoll(text, &end, 10);
      *value = (ct_attr_value){CT_ATTR_INT, 0, 0, {.i = i}};
    }
    if (*end != '\0' || errno != 0) return ct_parse_error(p, "bad number");
  } else if (ct_token_is(p, '[')) {
    int64_t items[CT_GRAD_MAX_LIST];
    int64_t count = 0;
    ct_next_token(p);
    while (!ct_token_is(p, ']')) {
      ct_attr_value item;
      const int status = ct_parse_constant(p, &item);
      if (status != CT_OK) return status;
      if (item.type != CT_ATTR_INT) return ct_parse_error(p, "lists hold integers only");
      if (count == CT_GRAD_MAX_LIST) return ct_parse_error(p, "list too long");
      items[count++] = item.value.i;
      if (ct_token_is(p, ',')) ct_next_token(p);
    }
    int64_t* copy = ct_build_alloc(p->build, sizeof(int64_t) * (size_t)count);
    if (!copy) return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "gradient rows: out of memory");
    memcpy(copy, items, sizeof(int64_t) * (size_t)count);
    *value = (ct_attr_value){CT_ATTR_INT_LIST, 0, count, {.ints = copy}};
  } else {
    return ct_parse_error(p, "expected a value");
  }
  ct_next_token(p);
  return CT_OK;
}

/* One attribute of a step: `name`, `name=forward_attr`, `name=dtype(input)`, `name=constant`. */
static int ct_parse_attr(ct_grad_parser* p, const ct_op_schema* step_schema, ct_grad_attr* attr) {
  char name[CT_GRAD_NAME_SIZE];
  int status = ct_take_name(p, name);
  if (status != CT_OK) return status;
  const int32_t step_index = ct_schema_attr_index(step_schema, name);
  if (step_index < 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "gradient row of '%s': %s has no attribute '%s'",
                        p->op, step_schema->name, name);
  }
  attr->name = step_schema->attrs[step_index].name;
  char source[CT_GRAD_NAME_SIZE];
  if (!ct_token_is(p, '=')) {
    snprintf(source, sizeof source, "%s", name);
  } else {
    ct_next_token(p);
    const bool is_word = p->token.kind == CT_TOKEN_NAME && !ct_token_is_name(p, "true") &&
                         !ct_token_is_name(p, "false") && !ct_token_is_name(p, "none");
    if (!is_word) {
      attr->source = CT_GRAD_ATTR_CONSTANT;
      return ct_parse_constant(p, &attr->value);
    }
    if (ct_token_is_name(p, "dtype")) {
      ct_next_token(p);
      if ((status = ct_expect(p, '(')) != CT_OK) return status;
      char input[CT_GRAD_NAME_SIZE];
      if ((status = ct_take_name(p, input)) != CT_OK) return status;
      const ct_grad_name* found = ct_find_name(p, input);
      if (!found || found->value.source != CT_GRAD_INPUT) {
        return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                            "gradient row of '%s': dtype() takes a forward input, got '%s'", p->op,
                            input);
      }
      attr->source = CT_GRAD_ATTR_DTYPE_OF;
      attr->index = found->value.index;
      return ct_expect(p, ')');
    }
    if ((status = ct_take_name(p, source)) != CT_OK) return status;
  }
  const int32_t forward_index = ct_schema_attr_index(p->forward, source);
  if (forward_index < 0) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "gradient row of '%s': no forward attribute '%s'", p->op, source);
  }
  attr->source = CT_GRAD_ATTR_FORWARD;
  attr->index = forward_index;
  return CT_OK;
}

/* One argument of a step: a defined name, or `_` for an absent optional input. */
static int ct_parse_arg(ct_grad_parser* p, const ct_param_schema* param, ct_grad_value* value) {
  char name[CT_GRAD_NAME_SIZE];
  const int status = ct_take_name(p, name);
  if (status != CT_OK) return status;
  if (strcmp(name, "_") == 0) {
    if (!(param->flags & CT_PARAM_OPTIONAL)) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "gradient row of '%s': input '%s' of a step is not optional", p->op,
                          param->name);
    }
    *value = (ct_grad_value){CT_GRAD_NONE, 0, 0, 0};
    return CT_OK;
  }
  const ct_grad_name* found = ct_find_name(p, name);
  if (!found) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "gradient row of '%s': '%s' is not defined",
                        p->op, name);
  }
  *value = found->value;
  return CT_OK;
}

/* `targets = op(args; attrs)` */
static int ct_parse_statement(ct_grad_parser* p) {
  ct_gradient_build* b = p->build;
  if (b->num_steps == CT_GRAD_MAX_STEPS) return ct_parse_error(p, "too many steps");
  char targets[CT_GRAD_MAX_TARGETS][CT_GRAD_NAME_SIZE];
  int32_t num_targets = 0;
  int status;
  for (;;) {
    if (num_targets == CT_GRAD_MAX_TARGETS) return ct_parse_error(p, "too many targets");
    if ((status = ct_take_name(p, targets[num_targets++])) != CT_OK) return status;
    if (!ct_token_is(p, ',')) break;
    ct_next_token(p);
  }
  if ((status = ct_expect(p, '=')) != CT_OK) return status;
  char op_name[CT_GRAD_NAME_SIZE];
  if ((status = ct_take_name(p, op_name)) != CT_OK) return status;
  const ct_op* op = NULL;
  if (ct_op_find(op_name, &op) != CT_OK) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "gradient row of '%s': no operator '%s'", p->op,
                        op_name);
  }
  const ct_op_schema* schema = &op->def->schema;
  if (num_targets != schema->num_outputs) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "gradient row of '%s': %s has %d outputs, the row names %d", p->op, op_name,
                        schema->num_outputs, num_targets);
  }
  ct_grad_step* step = &b->steps[b->num_steps];
  ct_grad_value* inputs = ct_build_alloc(b, sizeof(ct_grad_value) * (size_t)schema->num_inputs);
  ct_grad_attr* attrs = ct_build_alloc(b, sizeof(ct_grad_attr) * CT_MAX_ATTRS);
  if (!inputs || !attrs)
    return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "gradient rows: out of memory");
  *step = (ct_grad_step){op, schema->num_inputs, 0, inputs, attrs, schema->num_outputs, 0};
  if ((status = ct_expect(p, '(')) != CT_OK) return status;
  int32_t num_args = 0;
  while (!ct_token_is(p, ';') && !ct_token_is(p, ')')) {
    if (num_args == schema->num_inputs) break;
    if ((status = ct_parse_arg(p, &schema->inputs[num_args], &inputs[num_args])) != CT_OK) {
      return status;
    }
    ++num_args;
    if (ct_token_is(p, ',')) ct_next_token(p);
  }
  if (num_args != schema->num_inputs) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "gradient row of '%s': %s takes %d inputs, the row passes %d or more",
                        p->op, op_name, schema->num_inputs, num_args);
  }
  if (ct_token_is(p, ';')) {
    ct_next_token(p);
    while (!ct_token_is(p, ')')) {
      if (step->num_attrs == schema->num_attrs) return ct_parse_error(p, "too many attributes");
      if ((status = ct_parse_attr(p, schema, &attrs[step->num_attrs++])) != CT_OK) return status;
      if (ct_token_is(p, ',')) ct_next_token(p);
    }
  }
  if ((status = ct_expect(p, ')')) != CT_OK) return status;
  for (int32_t k = 0; k < num_targets; ++k) {
    if (strcmp(targets[k], "_") == 0) continue;
    const ct_grad_value value = {CT_GRAD_STEP, b->num_steps, k, 0};
    if ((status = ct_define_name(p, targets[k], value)) != CT_OK) return status;
    if (strncmp(targets[k], "grad_", 5) != 0) continue;
    const ct_grad_name* input = ct_find_name(p, targets[k] + 5);
    if (!input || input->value.source != CT_GRAD_INPUT) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                          "gradient row of '%s': '%s' names no input of %s", p->op, targets[k],
                          p->forward->name);
    }
    b->input_grads[input->value.index] = value;
  }
  ++b->num_steps;
  return CT_OK;
}

/* Marks what the program reads: saved inputs and outputs, and the cotangents it needs. dtype(x)
 * reads only x's dtype, which a framework keeps anyway, so it does not save x. */
static void ct_record_reads(ct_gradient_build* b) {
  for (int32_t s = 0; s < b->num_steps; ++s) {
    for (int32_t i = 0; i < b->steps[s].num_inputs; ++i) {
      const ct_grad_value* v = &b->steps[s].inputs[i];
      if (v->source == CT_GRAD_INPUT) b->saved_inputs[v->index] = 1;
      if (v->source == CT_GRAD_OUTPUT) b->saved_outputs[v->index] = 1;
      if (v->source == CT_GRAD_COTANGENT) b->output_takes_cotangent[v->index] = 1;
    }
  }
}

int ct_gradient_parse(const ct_op* forward, const char* formula, const char* note,
                      ct_gradient_build* build) {
  const ct_op_schema* schema = &forward->def->schema;
  memset(build, 0, sizeof *build);
  ct_gradient* g = &build->gradient;
  build->input_grads = ct_build_alloc(build, sizeof(ct_grad_value) * (size_t)schema->num_inputs);
  build->saved_inputs = ct_build_alloc(build, (size_t)schema->num_inputs);
  build->saved_outputs = ct_build_alloc(build, (size_t)schema->num_outputs);
  build->output_takes_cotangent = ct_build_alloc(build, (size_t)schema->num_outputs);
  build->steps = ct_build_alloc(build, sizeof(ct_grad_step) * CT_GRAD_MAX_STEPS);
  if (!build->input_grads || !build->saved_inputs || !build->saved_outputs ||
      !build->output_takes_cotangent || !build->steps) {
    return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "gradient rows: out of memory");
  }
  ct_grad_parser* p = calloc(1, sizeof *p);
  if (!p) return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "gradient rows: out of memory");
  p->op = schema->name;
  p->cursor = formula;
  p->forward = schema;
  p->build = build;
  int status = ct_define_forward_names(p);
  ct_next_token(p);
  while (status == CT_OK && p->token.kind != CT_TOKEN_END) {
    status = ct_parse_statement(p);
    if (status == CT_OK && p->token.kind != CT_TOKEN_END) status = ct_expect(p, ';');
  }
  free(p);
  if (status != CT_OK) return status;
  ct_record_reads(build);
  int32_t differentiable = 0;
  for (int32_t i = 0; i < schema->num_inputs; ++i) {
    differentiable |= build->input_grads[i].source != CT_GRAD_NONE;
  }
  *g = (ct_gradient){
      .struct_size = sizeof(ct_gradient),
      .formula = formula,
      .note = note,
      .differentiable = differentiable,
      .num_steps = build->num_steps,
      .steps = build->steps,
      .num_inputs = schema->num_inputs,
      .num_outputs = schema->num_outputs,
      .input_grads = build->input_grads,
      .saved_inputs = build->saved_inputs,
      .saved_outputs = build->saved_outputs,
      .output_takes_cotangent = build->output_takes_cotangent,
  };
  if (formula[0] != '\0' && !differentiable) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "gradient row of '%s': the formula defines no grad_<input>", schema->name);
  }
  return CT_OK;
}

void ct_gradient_build_free(ct_gradient_build* build) {
  for (int32_t i = 0; i < build->num_blocks; ++i) free(build->blocks[i]);
  build->num_blocks = 0;
}
