/* gradient.c - the gradient entries of the registry (ct_op_gradient): every operator's row of
 * capi/gradients/, parsed once when first asked for. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradient_parse.h"
#include "gradients/gradient_rows.h"

typedef struct ct_gradient_row {
  const char* op;
  const char* formula;
  const char* note;
} ct_gradient_row;

static const ct_gradient_row ct_gradient_rows[] = {
#define CT_GRADIENT_ROW(OP, FORMULA, NOTE) {#OP, FORMULA, NOTE},
    CT_GRADIENT_ROWS(CT_GRADIENT_ROW)
#undef CT_GRADIENT_ROW
};

#define CT_NUM_GRADIENT_ROWS ((int32_t)(sizeof ct_gradient_rows / sizeof ct_gradient_rows[0]))

/* One op's entry, or why it could not be built. */
typedef struct ct_gradient_slot {
  ct_gradient_build build;
  int status;
  char message[320];
} ct_gradient_slot;

static ct_gradient_slot* ct_gradient_slots; /* one per op, in ct_op_at order */
static int32_t ct_gradient_slot_count;
static int ct_gradients_status = CT_OK;
static pthread_once_t ct_gradients_once = PTHREAD_ONCE_INIT;

static const char ct_backward_note[] = "a backward operator: second derivatives are not provided";
static const char ct_missing_note[] = "no gradient row";

static bool ct_is_backward_op(const char* name) {
  return strstr(name, "_backward") != NULL;
}

static void ct_gradient_fill(ct_gradient_slot* slot, const ct_op* op) {
  const char* name = op->def->schema.name;
  const char* formula = "";
  const char* note = ct_is_backward_op(name) ? ct_backward_note : ct_missing_note;
  int32_t rows_found = 0;
  for (int32_t r = 0; r < CT_NUM_GRADIENT_ROWS; ++r) {
    if (strcmp(ct_gradient_rows[r].op, name) != 0) continue;
    formula = ct_gradient_rows[r].formula;
    note = ct_gradient_rows[r].note;
    ++rows_found;
  }
  slot->status = rows_found > 1 ? ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                                               "gradient rows: '%s' has %d rows", name, rows_found)
                                : ct_gradient_parse(op, formula, note, &slot->build);
  if (slot->status != CT_OK) {
    snprintf(slot->message, sizeof slot->message, "%s", ct_last_error());
    ct_gradient_build_free(&slot->build);
  }
}

/* Rows naming no registered op are a defect of the table; the first such row fails every
 * query, so that tests see it. */
static int ct_check_row_names(void) {
  for (int32_t r = 0; r < CT_NUM_GRADIENT_ROWS; ++r) {
    const ct_op* op = NULL;
    if (ct_op_find(ct_gradient_rows[r].op, &op) != CT_OK) {
      return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "gradient rows: no operator '%s'",
                          ct_gradient_rows[r].op);
    }
  }
  return CT_OK;
}

static void ct_gradients_init_once(void) {
  int32_t count = 0;
  ct_gradients_status = ct_op_count(&count);
  if (ct_gradients_status == CT_OK) ct_gradients_status = ct_check_row_names();
  if (ct_gradients_status != CT_OK) return;
  ct_gradient_slots = calloc((size_t)count, sizeof *ct_gradient_slots);
  if (!ct_gradient_slots) {
    ct_gradients_status = CT_ERROR_OUT_OF_MEMORY;
    return;
  }
  ct_gradient_slot_count = count;
  for (int32_t i = 0; i < count; ++i) {
    const ct_op* op = NULL;
    ct_op_at(i, &op);
    ct_gradient_fill(&ct_gradient_slots[i], op);
  }
}

int ct_op_gradient(const ct_op* op, const ct_gradient** gradient) {
  ct_clear_error();
  if (!op || !gradient) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_op_gradient: NULL argument");
  *gradient = NULL;
  int status = ct_registry_init();
  if (status != CT_OK) return status;
  pthread_once(&ct_gradients_once, ct_gradients_init_once);
  if (ct_gradients_status != CT_OK) {
    if (ct_gradients_status == CT_ERROR_OUT_OF_MEMORY) {
      return ct_set_error(CT_ERROR_OUT_OF_MEMORY, "ct_op_gradient: out of memory");
    }
    status = ct_check_row_names();
    return status != CT_OK ? status : ct_set_error(ct_gradients_status, "ct_op_gradient failed");
  }
  const int32_t index = ct_op_index(op);
  if (index < 0 || index >= ct_gradient_slot_count) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT, "ct_op_gradient: not an operator handle");
  }
  const ct_gradient_slot* slot = &ct_gradient_slots[index];
  if (slot->status != CT_OK) return ct_set_error(slot->status, "%s", slot->message);
  *gradient = &slot->build.gradient;
  return CT_OK;
}
