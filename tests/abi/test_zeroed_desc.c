/* A description zero-initialized instead of filled by fp8attn_attention_desc_init() gets a
 * message that says so and names fp8attn_attention_desc_init, both fully
 * zeroed and with the obvious fields set; a filled description with one bad field still gets
 * that field's own status and message. The out handle stays untouched on failure. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "abi_harness.h"

#define POISON_PLAN ((fp8attn_plan)(uintptr_t)0xA5A5A5A5u)

static void expect(fp8attn_context ctx, const char* what, const fp8attn_attention_desc* d, int32_t want,
                   const char* needle) {
  fp8attn_error err = abi_fresh_error();
  fp8attn_plan plan = POISON_PLAN;
  abi_expect_status(what, fp8attn_plan_create(ctx, d, &plan, &err), want, &err, needle);
  abi_check(plan == POISON_PLAN, what, "the out handle was written by a failing call");
}

int main(void) {
  fp8attn_context ctx = NULL;
  fp8attn_context_options o;
  fp8attn_attention_desc d;
  fp8attn_error err = abi_fresh_error();
  int32_t status;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CPU;
  o.num_threads = 1;
  status = fp8attn_context_create(&o, &ctx, &err);
  abi_check(status == FP8ATTN_OK, "context", "%s", err.message);
  if (status != FP8ATTN_OK) return abi_finish();

  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  expect(ctx, "all zero", &d, FP8ATTN_STATUS_INVALID_ARGUMENT, "fp8attn_attention_desc_init");
  d.input_dtype = FP8ATTN_DTYPE_E4M3;
  d.output_dtype = FP8ATTN_DTYPE_BF16;
  d.head_dim = 128;
  d.num_heads_q = 8;
  d.num_heads_kv = 8;
  d.window_left = -1;
  d.window_right = -1;
  d.p_scale_log2 = 8;
  expect(ctx, "zero but dtypes, head_dim, heads, window, S_p", &d, FP8ATTN_STATUS_INVALID_ARGUMENT,
         "zero-initialized");

  fp8attn_attention_desc_init(&d);
  d.stabilized_beta = 0.0f;
  expect(ctx, "filled, stabilized_beta 0", &d, FP8ATTN_STATUS_BAD_SCALE, "stabilized_beta");
  fp8attn_context_destroy(ctx);
  return abi_finish();
}
