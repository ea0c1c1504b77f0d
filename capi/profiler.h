/* profiler.h - the profiler hook of ct_op_run (dispatch.c) and ct_plan_run (plan.c), kept in
 * profiler.c. Nothing here is part of the ABI. */
#ifndef CTENSOR_PROFILER_H_
#define CTENSOR_PROFILER_H_

#include <stdatomic.h>

#include "internal.h"

/* An installed profiler: the caller's struct, copied, and the runs that are using it. */
typedef struct ct_profiler_slot {
  ct_profiler profiler;
  atomic_long in_flight; /* runs between taking this slot and their end callback */
} ct_profiler_slot;

/* The installed profiler, or NULL. */
CT_INTERNAL extern _Atomic(ct_profiler_slot*) ct_profiler_installed;

/* True when a profiler is installed: the one branch a run pays when none is. A relaxed load;
 * ct_profiled_run reads it again with the ordering that matters. */
static inline bool ct_profiler_active(void) {
  return __builtin_expect(
      atomic_load_explicit(&ct_profiler_installed, memory_order_relaxed) != NULL, 0);
}

/* Runs `run(call)` (NULL: no kernel runs, the status is CT_OK) between the installed
 * profiler's begin and end with `event` (every field but struct_size and call_id filled), and
 * returns the run's status. Without a profiler by now, or on a thread inside a callback, it only
 * runs. */
CT_INTERNAL int ct_profiled_run(ct_profile_event* event, ct_kernel_run_fn run,
                                const ct_kernel_call* call);

#endif /* CTENSOR_PROFILER_H_ */
