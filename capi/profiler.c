/* profiler.c - ct_set_profiler, ct_get_profiler and the profiled run.
 *
 * Two slots hold the caller's struct, copied: the installed one and the one the next install
 * writes. A run takes the installed slot by counting itself in the slot's `in_flight` and then
 * checking that the slot is still installed (if not, it lets go and looks again); it lets go
 * after its end callback. An install publishes the other slot and then waits until the
 * replaced one has no run in flight, so no callback of it runs once ct_set_profiler returns.
 * Both steps are sequentially consistent: either the run sees the new slot, or the install sees
 * the run's count (Dekker's argument). Slots are never freed: a run that read a slot just
 * before it was replaced may still count itself in it, and only then sees it is not installed.
 * A slot being rewritten is not installed, so no run reads its fields meanwhile. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "profiler.h"

/* ct_profiler as ABI 1.3 defined it: the smallest struct_size accepted. */
#define CT_PROFILER_SIZE_1_3 (offsetof(ct_profiler, end) + sizeof(void*))

_Atomic(ct_profiler_slot*) ct_profiler_installed = NULL;

static ct_profiler_slot ct_profiler_slots[2];
static pthread_mutex_t ct_profiler_lock = PTHREAD_MUTEX_INITIALIZER; /* one install at a time */
static atomic_uint_fast64_t ct_profiler_next_call_id = 1;

/* Runs of this thread that hold a slot (a callback that calls ct_set_profiler would wait for
 * its own run), and whether a callback is running on it (runs it starts are not reported). */
static _Thread_local int ct_profiler_held = 0;
static _Thread_local bool ct_profiler_in_callback = false;

/* The installed slot, counted in; NULL when none is installed. */
static ct_profiler_slot* ct_profiler_take(void) {
  for (;;) {
    ct_profiler_slot* slot = atomic_load(&ct_profiler_installed);
    if (!slot) return NULL;
    atomic_fetch_add(&slot->in_flight, 1);
    if (atomic_load(&ct_profiler_installed) == slot) return slot;
    atomic_fetch_sub(&slot->in_flight, 1); /* replaced meanwhile: look again */
  }
}

int ct_profiled_run(ct_profile_event* event, ct_kernel_run_fn run, const ct_kernel_call* call) {
  ct_profiler_slot* slot = ct_profiler_in_callback ? NULL : ct_profiler_take();
  if (!slot) return run ? run(call) : CT_OK;
  const ct_profiler* profiler = &slot->profiler;
  ++ct_profiler_held;
  event->struct_size = sizeof *event;
  event->call_id = atomic_fetch_add_explicit(&ct_profiler_next_call_id, 1, memory_order_relaxed);
  if (profiler->begin) {
    ct_profiler_in_callback = true;
    profiler->begin(profiler->user_data, event);
    ct_profiler_in_callback = false;
  }
  const int status = run ? run(call) : CT_OK;
  if (profiler->end) {
    /* The run's error message outlives a callback that calls into the library. */
    char message[1024];
    if (status != CT_OK) snprintf(message, sizeof message, "%s", ct_last_error());
    ct_profiler_in_callback = true;
    profiler->end(profiler->user_data, event, status);
    ct_profiler_in_callback = false;
    if (status != CT_OK) ct_set_error(status, "%s", message);
  }
  --ct_profiler_held;
  atomic_fetch_sub_explicit(&slot->in_flight, 1, memory_order_release);
  return status;
}

int ct_set_profiler(const ct_profiler* profiler) {
  ct_clear_error();
  if (profiler && profiler->struct_size < CT_PROFILER_SIZE_1_3) {
    return ct_set_error(CT_ERROR_ABI_MISMATCH,
                        "ct_profiler.struct_size is %zu; ABI 1.3 defines it as %zu bytes",
                        profiler->struct_size, (size_t)CT_PROFILER_SIZE_1_3);
  }
  if (ct_profiler_held > 0 || ct_profiler_in_callback) {
    return ct_set_error(CT_ERROR_INVALID_ARGUMENT,
                        "ct_set_profiler was called from inside a profiled run, which it would "
                        "wait for");
  }
  pthread_mutex_lock(&ct_profiler_lock);
  ct_profiler_slot* replaced = atomic_load(&ct_profiler_installed);
  ct_profiler_slot* slot = NULL;
  if (profiler) {
    slot = replaced == &ct_profiler_slots[0] ? &ct_profiler_slots[1] : &ct_profiler_slots[0];
    /* Not installed, so no run reads it; a newer caller's longer struct is read in part. */
    memset(&slot->profiler, 0, sizeof slot->profiler);
    memcpy(&slot->profiler, profiler,
           profiler->struct_size < sizeof slot->profiler ? profiler->struct_size
                                                         : sizeof slot->profiler);
    slot->profiler.struct_size = sizeof slot->profiler;
  }
  atomic_store(&ct_profiler_installed, slot);
  /* Runs that took the replaced slot end soon (a kernel's time); runs that count themselves in
   * it from now on see it replaced and let go at once. */
  while (replaced && atomic_load(&replaced->in_flight) != 0) sched_yield();
  pthread_mutex_unlock(&ct_profiler_lock);
  return CT_OK;
}

int ct_get_profiler(ct_profiler* profiler) {
  ct_clear_error();
  if (!profiler) return ct_set_error(CT_ERROR_NULL_POINTER, "ct_get_profiler: profiler is NULL");
  if (profiler->struct_size < CT_PROFILER_SIZE_1_3) {
    return ct_set_error(CT_ERROR_ABI_MISMATCH,
                        "ct_profiler.struct_size is %zu; ABI 1.3 defines it as %zu bytes",
                        profiler->struct_size, (size_t)CT_PROFILER_SIZE_1_3);
  }
  const size_t size = profiler->struct_size;
  ct_profiler copy;
  memset(&copy, 0, sizeof copy);
  pthread_mutex_lock(&ct_profiler_lock); /* the installed slot is not rewritten meanwhile */
  const ct_profiler_slot* slot = atomic_load(&ct_profiler_installed);
  if (slot) copy = slot->profiler;
  pthread_mutex_unlock(&ct_profiler_lock);
  memcpy(profiler, &copy, size < sizeof copy ? size : sizeof copy);
  profiler->struct_size = size;
  return CT_OK;
}
