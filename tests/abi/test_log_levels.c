/* Log levels through the host callback, which runs under no library lock:
 *  - a CPU context at FP8ATTN_LOG_TRACE delivers INFO (backend), DEBUG (context, plan, forward
 *    with shapes, backend, tile and workspace) and TRACE (forward time) messages, each with its
 *    level; WARN and ERROR are covered by test_log_callback.c (AUTO fallback) and by nothing
 *    here, since a good forward has nothing to warn about;
 *  - fp8attn_context_set_log_level lowers and raises the level at run time and refuses unknown
 *    levels;
 *  - FP8ATTN_LOG_LEVEL sets the default level;
 *  - a callback that calls the library on the same context (plan create and destroy, which log
 *    again, get_backend, set_log_level) does not deadlock. */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_fixture.h"
#include "abi_harness.h"

typedef struct log_capture {
  int calls, by_level[8];
  fp8attn_context reenter_ctx; /* when set, the callback calls the library on this context */
  const fp8attn_attention_desc* reenter_desc;
  int depth, reentered;
  char text[8192];
} log_capture;

static void capture(void* user_data, int32_t level, const char* msg, size_t len) {
  log_capture* c = (log_capture*)user_data;
  const size_t used = strlen(c->text);
  const size_t room = sizeof c->text - used - 2;
  const size_t n = len < room ? len : room;
  ++c->calls;
  if (level >= 0 && level < 8) ++c->by_level[level];
  memcpy(c->text + used, msg, n);
  c->text[used + n] = '\n';
  c->text[used + n + 1] = '\0';
  if (c->reenter_ctx != NULL && c->depth == 0 && c->reentered == 0) { /* once */
    fp8attn_plan plan = NULL;
    int32_t backend = -1;
    ++c->depth; /* the plan below logs at DEBUG, which calls this callback once more */
    if (fp8attn_plan_create(c->reenter_ctx, c->reenter_desc, &plan, NULL) == FP8ATTN_OK) ++c->reentered;
    fp8attn_plan_destroy(plan);
    if (fp8attn_context_get_backend(c->reenter_ctx, &backend, NULL) == FP8ATTN_OK) ++c->reentered;
    if (fp8attn_context_set_log_level(c->reenter_ctx, FP8ATTN_LOG_DEBUG, NULL) == FP8ATTN_OK) ++c->reentered;
    --c->depth;
  }
}

static fp8attn_context make_context(log_capture* c, int32_t level) {
  fp8attn_context_options o;
  fp8attn_context ctx = NULL;
  fp8attn_error err = abi_fresh_error();
  int32_t status;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CPU;
  o.num_threads = 2;
  o.log_level = level;
  o.log_callback = capture;
  o.log_user_data = c;
  status = fp8attn_context_create(&o, &ctx, &err);
  abi_check(status == FP8ATTN_OK, "context", "%s: %s", fp8attn_status_name(status), err.message);
  return ctx;
}

/* Plan and one forward on `ctx` with the fixture's arguments. */
static void plan_and_forward(fp8attn_context ctx, abi_problem* p, const char* what) {
  fp8attn_plan plan = NULL;
  fp8attn_error err = abi_fresh_error();
  size_t bytes = 0;
  void* ws = NULL;
  int32_t status = fp8attn_plan_create(ctx, &p->desc, &plan, &err);
  abi_check(status == FP8ATTN_OK, what, "plan: %s", err.message);
  if (status != FP8ATTN_OK) return;
  status = fp8attn_plan_workspace_size(plan, p->shape.batch, p->shape.seqlen_q, p->shape.seqlen_k, &bytes, &err);
  abi_check(status == FP8ATTN_OK, what, "workspace size: %s", err.message);
  ws = malloc(bytes ? bytes : 1);
  abi_problem_poison(p);
  status = fp8attn_attention_forward(plan, &p->args, ws, bytes, NULL, &err);
  abi_check(status == FP8ATTN_OK && !abi_problem_untouched(p), what, "forward: %s", err.message);
  free(ws);
  fp8attn_plan_destroy(plan);
}

int main(void) {
  uint64_t rng = abi_seed(0x106);
  abi_shape shape;
  abi_problem p;
  log_capture c;
  fp8attn_context ctx;
  fp8attn_error err = abi_fresh_error();
  int32_t status;
  memset(&shape, 0, sizeof shape);
  shape.batch = 2;
  shape.seqlen_q = 70;
  shape.seqlen_k = 150;
  shape.heads_q = 2;
  shape.heads_kv = 1;
  shape.head_dim = 64;
  if (abi_problem_init(&p, &shape, &rng) != FP8ATTN_OK) return 1;
  unsetenv("FP8ATTN_LOG_LEVEL");

  /* Every level at TRACE. */
  memset(&c, 0, sizeof c);
  ctx = make_context(&c, FP8ATTN_LOG_TRACE);
  plan_and_forward(ctx, &p, "TRACE");
  printf("TRACE: %d messages (info %d, debug %d, trace %d):\n%s", c.calls, c.by_level[FP8ATTN_LOG_INFO],
         c.by_level[FP8ATTN_LOG_DEBUG], c.by_level[FP8ATTN_LOG_TRACE], c.text);
  abi_check(c.by_level[FP8ATTN_LOG_INFO] >= 1 && strstr(c.text, "backend cpu") != NULL, "INFO",
            "no INFO message naming the backend");
  abi_check(c.by_level[FP8ATTN_LOG_DEBUG] >= 3, "DEBUG", "%d DEBUG messages, expected context, plan and forward",
            c.by_level[FP8ATTN_LOG_DEBUG]);
  abi_check(strstr(c.text, "plan created: backend cpu") != NULL && strstr(c.text, "head_dim=64") != NULL &&
                strstr(c.text, "tile ") != NULL,
            "DEBUG plan", "the plan message lacks backend, head_dim or tile");
  abi_check(strstr(c.text, "forward: backend cpu, batch 2") != NULL && strstr(c.text, "seqlen_q 70 seqlen_k 150") != NULL &&
                strstr(c.text, "bytes given") != NULL,
            "DEBUG forward", "the forward message lacks backend, shapes or workspace");
  abi_check(c.by_level[FP8ATTN_LOG_TRACE] == 1 && strstr(c.text, " ms in backend cpu") != NULL, "TRACE",
            "%d TRACE messages, expected the forward's time", c.by_level[FP8ATTN_LOG_TRACE]);

  /* Down to DEBUG at run time: no TRACE; then OFF: nothing; an unknown level is refused. */
  memset(&c, 0, sizeof c);
  status = fp8attn_context_set_log_level(ctx, FP8ATTN_LOG_DEBUG, &err);
  abi_check(status == FP8ATTN_OK, "set_log_level DEBUG", "%s", err.message);
  plan_and_forward(ctx, &p, "DEBUG");
  abi_check(c.by_level[FP8ATTN_LOG_DEBUG] == 2 && c.by_level[FP8ATTN_LOG_TRACE] == 0, "set_log_level DEBUG",
            "debug %d (expected plan and forward), trace %d", c.by_level[FP8ATTN_LOG_DEBUG], c.by_level[FP8ATTN_LOG_TRACE]);
  memset(&c, 0, sizeof c);
  fp8attn_context_set_log_level(ctx, FP8ATTN_LOG_OFF, NULL);
  plan_and_forward(ctx, &p, "OFF");
  abi_check(c.calls == 0, "set_log_level OFF", "%d messages", c.calls);
  err = abi_fresh_error();
  abi_expect_status("set_log_level 7", fp8attn_context_set_log_level(ctx, 7, &err), FP8ATTN_STATUS_BAD_OPTION, &err,
                    "level");
  err = abi_fresh_error();
  abi_expect_status("set_log_level NULL", fp8attn_context_set_log_level(NULL, FP8ATTN_LOG_INFO, &err),
                    FP8ATTN_STATUS_BAD_HANDLE, &err, "ctx");
  plan_and_forward(ctx, &p, "OFF after a refused level");
  abi_check(c.calls == 0, "refused level", "the level changed: %d messages", c.calls);
  fp8attn_context_destroy(ctx);

  /* FP8ATTN_LOG_LEVEL sets the default level, at creation and for set_log_level(DEFAULT). */
  setenv("FP8ATTN_LOG_LEVEL", "debug", 1);
  memset(&c, 0, sizeof c);
  ctx = make_context(&c, FP8ATTN_LOG_DEFAULT);
  plan_and_forward(ctx, &p, "FP8ATTN_LOG_LEVEL=debug");
  abi_check(c.by_level[FP8ATTN_LOG_DEBUG] >= 3 && c.by_level[FP8ATTN_LOG_TRACE] == 0, "FP8ATTN_LOG_LEVEL=debug",
            "debug %d, trace %d", c.by_level[FP8ATTN_LOG_DEBUG], c.by_level[FP8ATTN_LOG_TRACE]);
  setenv("FP8ATTN_LOG_LEVEL", "TRACE", 1);
  fp8attn_context_set_log_level(ctx, FP8ATTN_LOG_DEFAULT, NULL);
  memset(&c, 0, sizeof c);
  plan_and_forward(ctx, &p, "FP8ATTN_LOG_LEVEL=TRACE");
  abi_check(c.by_level[FP8ATTN_LOG_TRACE] == 1, "FP8ATTN_LOG_LEVEL=TRACE", "trace %d", c.by_level[FP8ATTN_LOG_TRACE]);
  fp8attn_context_destroy(ctx);
  unsetenv("FP8ATTN_LOG_LEVEL");

  /* A callback that calls the library on its own context. A sink lock held around the callback
   * would deadlock here (the test would hang until ctest's timeout). */
  memset(&c, 0, sizeof c);
  ctx = make_context(&c, FP8ATTN_LOG_DEBUG);
  c.reenter_ctx = ctx;
  c.reenter_desc = &p.desc;
  plan_and_forward(ctx, &p, "re-entrant callback");
  printf("re-entrant callback: %d messages, %d calls back into the library succeeded\n", c.calls, c.reentered);
  abi_check(c.reentered == 3, "re-entrant callback", "%d of 3 calls succeeded", c.reentered);
  abi_check(c.calls >= 3, "re-entrant callback", "%d messages; the nested plan's message is missing", c.calls);
  fp8attn_context_destroy(ctx);

  abi_problem_free(&p);
  return abi_finish();
}
