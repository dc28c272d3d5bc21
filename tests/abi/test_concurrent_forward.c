/* The header's thread-safety promise for fp8attn_attention_forward: concurrent calls on one
 * plan (and so one context) from several host threads are allowed. Each thread runs its own
 * inputs repeatedly; every result must be bit-identical to the same call made alone. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_fixture.h"
#include "abi_harness.h"

enum { kThreads = 4, kRepeats = 6 };

typedef struct worker {
  abi_problem* shared;    /* context and plan come from here */
  abi_problem own;        /* this thread's inputs, outputs and workspace */
  float* expected_out;    /* the serial result */
  float* expected_lse;
  int mismatched_calls;
  int32_t first_error;
} worker;

static void* run_worker(void* arg) {
  worker* w = (worker*)arg;
  int r;
  for (r = 0; r < kRepeats; ++r) {
    fp8attn_error err = abi_fresh_error();
    int32_t status;
    abi_problem_poison(&w->own);
    status = fp8attn_attention_forward(w->shared->plan, &w->own.args, w->own.workspace, w->own.workspace_bytes, NULL,
                                       &err);
    if (status != FP8ATTN_OK && w->first_error == FP8ATTN_OK) w->first_error = status;
    if (status != FP8ATTN_OK || memcmp(w->own.out, w->expected_out, w->own.out_bytes) != 0 ||
        memcmp(w->own.lse, w->expected_lse, w->own.lse_bytes) != 0)
      ++w->mismatched_calls;
  }
  return NULL;
}

int main(void) {
  uint64_t rng = abi_seed(20261125u);
  static worker workers[kThreads];
  pthread_t threads[kThreads];
  abi_shape shape;
  int i, total_mismatches = 0;

  memset(&shape, 0, sizeof shape);
  shape.batch = 2, shape.seqlen_q = 150, shape.seqlen_k = 200;
  shape.heads_q = 4, shape.heads_kv = 2, shape.head_dim = 64;
  for (i = 0; i < kThreads; ++i) {
    fp8attn_error err = abi_fresh_error();
    int32_t status = abi_problem_init(&workers[i].own, &shape, &rng);
    abi_check(status == FP8ATTN_OK, "fixture", "abi_problem_init returned %s", fp8attn_status_name(status));
    if (status != FP8ATTN_OK) return abi_finish();
    workers[i].shared = &workers[0].own;
    /* The serial result, with the shared plan. */
    status = fp8attn_attention_forward(workers[0].own.plan, &workers[i].own.args, workers[i].own.workspace,
                                       workers[i].own.workspace_bytes, NULL, &err);
    abi_check(status == FP8ATTN_OK, "serial call", "%s: %s", fp8attn_status_name(status), err.message);
    workers[i].expected_out = (float*)malloc(workers[i].own.out_bytes);
    workers[i].expected_lse = (float*)malloc(workers[i].own.lse_bytes);
    memcpy(workers[i].expected_out, workers[i].own.out, workers[i].own.out_bytes);
    memcpy(workers[i].expected_lse, workers[i].own.lse, workers[i].own.lse_bytes);
  }
  abi_check(memcmp(workers[0].expected_out, workers[1].expected_out, workers[0].own.out_bytes) != 0, "inputs",
            "two threads' inputs give the same output: the test could not see a mix-up");

  for (i = 0; i < kThreads; ++i) pthread_create(&threads[i], NULL, run_worker, &workers[i]);
  for (i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  for (i = 0; i < kThreads; ++i) {
    abi_check(workers[i].first_error == FP8ATTN_OK, "concurrent call", "thread %d: %s", i,
              fp8attn_status_name(workers[i].first_error));
    abi_check(workers[i].mismatched_calls == 0, "concurrent call", "thread %d: %d of %d results differ from serial", i,
              workers[i].mismatched_calls, kRepeats);
    total_mismatches += workers[i].mismatched_calls;
  }
  printf("%d threads x %d calls on one plan: %d results differ from the serial ones\n", kThreads, kRepeats,
         total_mismatches);
  for (i = kThreads - 1; i >= 0; --i) {
    free(workers[i].expected_out);
    free(workers[i].expected_lse);
    abi_problem_free(&workers[i].own);
  }
  return abi_finish();
}
