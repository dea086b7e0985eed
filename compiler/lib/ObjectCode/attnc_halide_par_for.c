/*===- attnc_halide_par_for.c - Halide's parallel loops on attnc_rt -------===*
 *
 * Linked (as bitcode) into parallel objects of the Halide backend, where it
 * replaces the Halide runtime's own halide_do_par_for: a Halide parallel
 * loop then runs on attnc_rt's pool (ATTNC_NUM_THREADS, the runtime's
 * set_num_threads), as the MLIR backend's parallel loops do, instead of a
 * second pool of threads that live in the object's code (and would outlive
 * a JIT-ed object that is unloaded).
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>

typedef int (*halide_task_t)(void *user_context, int task_number,
                             uint8_t *closure);

/* attnc_rt (runtime/threads/attnc_rt.h): the OpenMP entry point it
   implements, and its pool size. */
typedef void (*attnc_microtask)(int32_t *gtid, int32_t *btid, ...);
void __kmpc_fork_call(void *loc, int32_t argc, attnc_microtask microtask, ...);
int attnc_rt_get_num_threads(void);

typedef struct {
  halide_task_t task;
  void *user_context;
  uint8_t *closure;
  int next; /* the next task number to take */
  int end;
  int error; /* a failing task's status, else 0 */
} par_for_state;

/* Every thread of the team takes task numbers until none are left. Of the
   type attnc_rt calls a one-argument microtask through. */
static void run_tasks(int32_t *gtid, int32_t *btid, void *argument) {
  par_for_state *state = (par_for_state *)argument;
  (void)gtid;
  (void)btid;
  for (;;) {
    int task = __atomic_fetch_add(&state->next, 1, __ATOMIC_RELAXED);
    if (task >= state->end)
      return;
    int status = state->task(state->user_context, task, state->closure);
    if (status)
      __atomic_store_n(&state->error, status, __ATOMIC_RELAXED);
  }
}

int halide_do_par_for(void *user_context, halide_task_t task, int min, int size,
                      uint8_t *closure) {
  par_for_state state = {task, user_context, closure, min, min + size, 0};
  if (size > 1 && attnc_rt_get_num_threads() > 1)
    __kmpc_fork_call(0, 1, (attnc_microtask)run_tasks, &state);
  else
    run_tasks(0, 0, &state);
  return state.error;
}
