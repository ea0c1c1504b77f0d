/* layout_cache.c - the layout cache: the ct_plan of the last few out= calls from C (FastOp), by
 * op and layout (dtype, device, byte offset, shape and strides of every tensor; not the data
 * pointers). A call whose layout was seen before skips ct_op_run's checks, which depend on
 * nothing else, and only points the plan at its buffers (ct_plan_set_data, which checks aliasing
 * again). A change of the registry (a plugin loaded, a kernel registered) empties it, and the
 * output cache (new_outputs.c), as ct_op_run would pick the new kernel. Used with the GIL held
 * and by one call at a time (FastOp's busy flag), so it needs no lock. */
#include <string.h>

#include "binding.h"

#define CTPY_LAYOUT_CACHE_SIZE 8
typedef struct ctpy_layout_entry {
  const ct_op* op;
  int32_t words;
  int64_t key[CTPY_LAYOUT_KEY_WORDS];
  ct_plan* plan;
} ctpy_layout_entry;
static ctpy_layout_entry ctpy_layout_cache[CTPY_LAYOUT_CACHE_SIZE];
static int32_t ctpy_layout_cache_next = 0;
static uint64_t ctpy_caches_generation = 0;

int32_t ctpy_layout_key(const ctpy_frame* f, int32_t count, int64_t* key) {
  /* Not cached: too many tensors or dims, absent tensors, or data NULL (which
   * ct_plan_set_data would read as "keep"). */
  int32_t w = 0;
  key[w++] = count;
  for (int32_t i = 0; i < count; ++i) {
    const ct_tensor* t = f->tensors[i];
    if (!t || !t->data || w + 4 + 2 * t->ndim > CTPY_LAYOUT_KEY_WORDS) return -1;
    key[w++] = (int64_t)t->dtype.code | (int64_t)t->dtype.bits << 8 |
               (int64_t)t->dtype.lanes << 16 | (int64_t)t->ndim << 32;
    key[w++] = (int64_t)t->device.device_type << 32 | (int64_t)(uint32_t)t->device.device_id;
    key[w++] = (int64_t)t->byte_offset;
    key[w++] = t->strides != NULL;
    /* Shape and strides interleaved, a dim at a time, so that the compiler keeps one plain loop
     * rather than two library copies whose start-up dominates tiny keys. */
    if (t->strides) {
      for (int32_t d = 0; d < t->ndim; ++d) {
        key[w++] = t->shape[d];
        key[w++] = t->strides[d];
      }
    } else {
      for (int32_t d = 0; d < t->ndim; ++d) key[w++] = t->shape[d];
    }
  }
  return w;
}

int ctpy_same_key(int32_t words, const int64_t* key, int32_t probe_words, const int64_t* probe) {
  return words == probe_words && memcmp(key, probe, sizeof(int64_t) * probe_words) == 0;
}

static void ctpy_layout_cache_clear(void) {
  for (int32_t i = 0; i < CTPY_LAYOUT_CACHE_SIZE; ++i) {
    ct_plan_destroy(ctpy_layout_cache[i].plan);
    ctpy_layout_cache[i].plan = NULL;
    ctpy_layout_cache[i].op = NULL;
  }
}

void ctpy_caches_sync(void) {
  const uint64_t generation = ct_registry_generation();
  if (generation != ctpy_caches_generation) {
    ctpy_layout_cache_clear();
    ctpy_output_cache_clear();
    ctpy_caches_generation = generation;
  }
}

/* The cached plan for (op, key), or NULL. */
static ct_plan* ctpy_layout_cache_find(const ct_op* op, const int64_t* key, int32_t words) {
  ctpy_caches_sync();
  for (int32_t i = 0; i < CTPY_LAYOUT_CACHE_SIZE; ++i) {
    const ctpy_layout_entry* c = &ctpy_layout_cache[i];
    if (c->op == op && ctpy_same_key(c->words, c->key, words, key)) return c->plan;
  }
  return NULL;
}

/* Caches `plan` (created at the current generation), replacing the oldest entry. */
static void ctpy_layout_cache_add(const ct_op* op, const int64_t* key, int32_t words,
                                  ct_plan* plan) {
  ctpy_layout_entry* c = &ctpy_layout_cache[ctpy_layout_cache_next];
  ctpy_layout_cache_next = (ctpy_layout_cache_next + 1) % CTPY_LAYOUT_CACHE_SIZE;
  ct_plan_destroy(c->plan);
  c->op = op;
  c->words = words;
  memcpy(c->key, key, sizeof(int64_t) * words);
  c->plan = plan;
}

ct_plan* ctpy_cached_plan(ctpy_frame* f, const ct_op* op, int32_t count, int* status) {
  int64_t key[CTPY_LAYOUT_KEY_WORDS];
  *status = CT_OK;
  const int32_t words = ctpy_layout_key(f, count, key);
  if (words < 0) return NULL;
  ct_plan* plan = ctpy_layout_cache_find(op, key, words);
  if (plan) {
    void* data[CTPY_MAX_TENSORS];
    for (int32_t i = 0; i < count; ++i) data[i] = f->tensors[i]->data;
    *status = ct_plan_set_data(plan, data, count);
    return *status == CT_OK ? plan : NULL;
  }
  const int32_t n_out = f->num_outputs;
  *status = ct_plan_create(op, (const ct_tensor* const*)f->tensors, count - n_out,
                           (const ct_tensor* const*)f->tensors + count - n_out, n_out, NULL, 0,
                           NULL, &plan);
  if (*status != CT_OK) return NULL;
  ctpy_caches_sync(); /* creating the plan may have registered the built-in kernels */
  ctpy_layout_cache_add(op, key, words, plan);
  return plan;
}
