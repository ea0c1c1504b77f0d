/* gradient_parse.h - parsing one gradient row (capi/gradients/gradient_rows.h) into the
 * ct_gradient of ctensor.h. Used by gradient.c only. */
#ifndef CTENSOR_GRADIENT_PARSE_H_
#define CTENSOR_GRADIENT_PARSE_H_

#include "internal.h"

#define CT_GRAD_MAX_BLOCKS 64

/* A parsed entry and the memory it owns (the blocks). */
typedef struct ct_gradient_build {
  ct_gradient gradient;
  ct_grad_step* steps;
  int32_t num_steps;
  ct_grad_value* input_grads;
  uint8_t* saved_inputs;
  uint8_t* saved_outputs;
  uint8_t* output_takes_cotangent;
  void* blocks[CT_GRAD_MAX_BLOCKS];
  int32_t num_blocks;
} ct_gradient_build;

/* Parses `formula` for `forward` into build->gradient (formula and note are kept, not copied).
 * On failure the message names the op and the place; the caller frees the build. */
CT_INTERNAL int ct_gradient_parse(const ct_op* forward, const char* formula, const char* note,
                                  ct_gradient_build* build);

/* Frees what a build allocated. */
CT_INTERNAL void ct_gradient_build_free(ct_gradient_build* build);

#endif /* CTENSOR_GRADIENT_PARSE_H_ */
