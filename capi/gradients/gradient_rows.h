/* gradient_rows.h - every operator's gradient entry, one row each, written as a small program.
 * capi/gradient.c parses the rows once into the ct_gradient structs of ctensor.h; a row that
 * does not parse, names an unknown op or attribute, or leaves a value undefined fails the first
 * ct_op_gradient call and the gradient tests.
 *
 * A row: G(op, formula, note), in the family file of the op (included below).
 *   op       the forward operator.
 *   formula  statements separated by ';', each `targets = op(args; attrs)`:
 *            - targets: names for the step's outputs, comma-separated, one per output parameter
 *              (`_` drops one). A target `grad_<input>` makes that value the cotangent of the
 *              forward input <input>; inputs with no such target are not differentiable.
 *            - args: one per input parameter of the step op: a forward input or output by its
 *              parameter name, `grad_<output>` for the cotangent of a forward output, an earlier
 *              target, or `_` for an absent optional input.
 *            - attrs (after ';' inside the parentheses, comma-separated): `name` passes the forward
 *              attribute of that name; `name=<forward attr>`; `name=dtype(<input>)` the dtype of a
 *              forward input; `name=<literal>` a constant: an integer, a float (with a '.' or an
 *              exponent), true/false, none, "string", or a list [1, 2] of integers.
 *            "" means the op is not differentiable: `note` then says why.
 *   note     subgradient choices (PyTorch's) or, for "", the reason; "" when there is nothing to
 *            say.
 * Backward operators (names containing "_backward") need no row: their entries say that second
 * derivatives are not provided.
 *
 * Example: G(multiply, "t1 = multiply(grad_out, x2); grad_x1 = sum_to_shape(t1, x1); "
 *                      "t2 = multiply(grad_out, x1); grad_x2 = sum_to_shape(t2, x2)", "")
 */
#ifndef CTENSOR_GRADIENT_ROWS_H_
#define CTENSOR_GRADIENT_ROWS_H_

#define CT_GRADIENT_ROWS(G) \
  CT_ELEMENTWISE_GRADS(G)   \
  CT_REDUCTION_GRADS(G)     \
  CT_LINALG_GRADS(G)        \
  CT_SHAPE_GRADS(G)         \
  CT_NORM_GRADS(G)          \
  CT_CONV_POOL_GRADS(G)     \
  CT_LOSS_GRADS(G)          \
  CT_INDEX_GRADS(G)         \
  CT_RANDOM_GRADS(G)        \
  CT_ATTENTION_GRADS(G)     \
  CT_OTHER_GRADS(G)

#include "attention_grads.h"
#include "conv_pool_grads.h"
#include "elementwise_grads.h"
#include "index_grads.h"
#include "linalg_grads.h"
#include "loss_grads.h"
#include "norm_grads.h"
#include "other_grads.h"
#include "random_grads.h"
#include "reduction_grads.h"
#include "shape_grads.h"

#endif /* CTENSOR_GRADIENT_ROWS_H_ */
