/* Bad input for fp8attn_plan_create and fp8attn_plan_workspace_size: each case changes one
 * field of a description that succeeds. The out handle and the out size (poisoned) must be
 * unchanged after a failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "abi_harness.h"

#define POISON_PLAN ((fp8attn_plan)(uintptr_t)0xA5A5A5A5u)

static fp8attn_context g_ctx;
static fp8attn_attention_desc g_valid;

static void expect_plan(const char* what, fp8attn_context ctx, const fp8attn_attention_desc* desc, int32_t want,
                        const char* needle) {
  fp8attn_error err = abi_fresh_error();
  fp8attn_plan plan = POISON_PLAN;
  const int32_t status = fp8attn_plan_create(ctx, desc, &plan, &err);
  abi_expect_status(what, status, want, &err, needle);
  abi_check(plan == POISON_PLAN, what, "the out handle was written by a failing call");
  if (plan != POISON_PLAN) fp8attn_plan_destroy(plan);
}

static void expect_desc(const char* what, const fp8attn_attention_desc* desc, int32_t want, const char* needle) {
  expect_plan(what, g_ctx, desc, want, needle);
}

static void plan_create_cases(void) {
  fp8attn_attention_desc d;
  fp8attn_error err = abi_fresh_error();
  const int dummy = 0;
  int32_t status;

  expect_plan("ctx NULL", NULL, &g_valid, FP8ATTN_STATUS_BAD_HANDLE, "ctx");
  expect_desc("desc NULL", NULL, FP8ATTN_STATUS_NULL_POINTER, "fp8attn_attention_desc");
  status = fp8attn_plan_create(g_ctx, &g_valid, NULL, &err);
  abi_expect_status("out NULL", status, FP8ATTN_STATUS_NULL_POINTER, &err, "out");

  d = g_valid, d.struct_size = 0;
  expect_desc("desc.struct_size 0", &d, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "struct_size");
  d = g_valid, d.struct_size = sizeof(size_t);
  expect_desc("desc.struct_size 8", &d, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "struct_size");
  d = g_valid, d.struct_size = offsetof(fp8attn_attention_desc, telemetry);
  expect_desc("desc.struct_size stops before telemetry", &d, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "oldest layout");
  d = g_valid, d.next = &dummy;
  expect_desc("desc.next not NULL", &d, FP8ATTN_STATUS_BAD_EXTENSION, "next");

  d = g_valid, d.input_dtype = 99;
  expect_desc("input_dtype unknown", &d, FP8ATTN_STATUS_BAD_DTYPE, "input_dtype");
  d = g_valid, d.input_dtype = FP8ATTN_DTYPE_F32;
  expect_desc("input_dtype F32", &d, FP8ATTN_STATUS_BAD_DTYPE, "input_dtype");
  d = g_valid, d.input_dtype = FP8ATTN_DTYPE_E5M2;
  expect_desc("input_dtype E5M2", &d, FP8ATTN_STATUS_BAD_DTYPE, "input_dtype");
  /* E4M3 output is allowed (with an output scale at call time); E5M2 output is not. */
  d = g_valid, d.output_dtype = FP8ATTN_DTYPE_E5M2;
  expect_desc("output_dtype E5M2", &d, FP8ATTN_STATUS_BAD_DTYPE, "E5M2 output is not supported");
  d = g_valid, d.output_dtype = -1;
  expect_desc("output_dtype unknown", &d, FP8ATTN_STATUS_BAD_DTYPE, "output_dtype");

  d = g_valid, d.head_dim = 96;
  expect_desc("head_dim 96", &d, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim");
  d = g_valid, d.head_dim = 0;
  expect_desc("head_dim 0", &d, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim");
  d = g_valid, d.head_dim = 512;
  expect_desc("head_dim 512", &d, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim");
  d = g_valid, d.head_dim_v = 64;
  expect_desc("head_dim_v differs", &d, FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim_v");

  d = g_valid, d.num_heads_q = 6, d.num_heads_kv = 4;
  expect_desc("heads_q 6 not a multiple of heads_kv 4", &d, FP8ATTN_STATUS_BAD_HEADS, "multiple");
  d = g_valid, d.num_heads_q = 0;
  expect_desc("num_heads_q 0", &d, FP8ATTN_STATUS_BAD_HEADS, "num_heads_q");
  d = g_valid, d.num_heads_kv = -2;
  expect_desc("num_heads_kv negative", &d, FP8ATTN_STATUS_BAD_HEADS, "num_heads_kv");

  d = g_valid, d.softmax_scale = NAN;
  expect_desc("softmax_scale NaN", &d, FP8ATTN_STATUS_BAD_SCALE, "softmax_scale");
  d = g_valid, d.softmax_scale = INFINITY;
  expect_desc("softmax_scale +inf", &d, FP8ATTN_STATUS_BAD_SCALE, "softmax_scale");
  d = g_valid, d.softmax_scale = -0.125f;
  expect_desc("softmax_scale negative", &d, FP8ATTN_STATUS_BAD_SCALE, "softmax_scale");

  d = g_valid, d.causal = 2;
  expect_desc("causal 2", &d, FP8ATTN_STATUS_BAD_OPTION, "causal");
  d = g_valid, d.window_left = -2;
  expect_desc("window_left -2", &d, FP8ATTN_STATUS_BAD_OPTION, "window_left");
  d = g_valid, d.kv_order = 2;
  expect_desc("kv_order unknown", &d, FP8ATTN_STATUS_BAD_OPTION, "kv_order");
  d = g_valid, d.p_scale_log2 = 9;
  expect_desc("p_scale_log2 9", &d, FP8ATTN_STATUS_BAD_OPTION, "p_scale_log2");
  d = g_valid, d.p_scale_log2 = -1;
  expect_desc("p_scale_log2 -1", &d, FP8ATTN_STATUS_BAD_OPTION, "p_scale_log2");
  d = g_valid, d.pv_promote_interval = -1;
  expect_desc("pv_promote_interval -1", &d, FP8ATTN_STATUS_BAD_OPTION, "pv_promote_interval");
  d = g_valid, d.softmax_variant = 7;
  expect_desc("softmax_variant unknown", &d, FP8ATTN_STATUS_BAD_OPTION, "softmax_variant");
  d = g_valid, d.telemetry = 2;
  expect_desc("telemetry 2", &d, FP8ATTN_STATUS_BAD_OPTION, "telemetry");
  d = g_valid, d.stabilized_beta = NAN;
  expect_desc("stabilized_beta NaN", &d, FP8ATTN_STATUS_BAD_SCALE, "stabilized_beta");
  d = g_valid, d.stabilized_beta = 0.5f;
  expect_desc("stabilized_beta < 1", &d, FP8ATTN_STATUS_BAD_SCALE, "stabilized_beta");
  d = g_valid, d.stabilized_tie_tol = -1e-3f;
  expect_desc("stabilized_tie_tol negative", &d, FP8ATTN_STATUS_BAD_SCALE, "stabilized_tie_tol");
  d = g_valid, d.stabilized_shift_cap_log2 = 0.0f;
  expect_desc("stabilized_shift_cap_log2 0", &d, FP8ATTN_STATUS_BAD_SCALE, "stabilized_shift_cap_log2");
  d = g_valid, d.stabilized_shift_cap_log2 = NAN;
  expect_desc("stabilized_shift_cap_log2 NaN", &d, FP8ATTN_STATUS_BAD_SCALE, "stabilized_shift_cap_log2");
  d = g_valid, d.sink_tokens = -1;
  expect_desc("sink_tokens negative", &d, FP8ATTN_STATUS_BAD_OPTION, "sink_tokens");
  d = g_valid, d.sink_tokens = 100000;
  expect_desc("sink_tokens above block_n", &d, FP8ATTN_STATUS_BAD_OPTION, "sink_tokens");
  d = g_valid, d.accumulator_model = 2;
  expect_desc("accumulator_model 2", &d, FP8ATTN_STATUS_BAD_OPTION, "accumulator_model");
  /* The tensor core's widths are the hardware's: 13 (or 0, the same) in either mode, nothing else. */
  d = g_valid, d.accumulator_model = FP8ATTN_ACCUMULATOR_TENSOR_CORE, d.accumulator_mantissa_bits = 10;
  expect_desc("accumulator_mantissa_bits 10", &d, FP8ATTN_STATUS_BAD_OPTION, "accumulator_mantissa_bits");
  d = g_valid, d.accumulator_model = FP8ATTN_ACCUMULATOR_TENSOR_CORE, d.accumulator_mantissa_bits = 24;
  expect_desc("accumulator_mantissa_bits 24", &d, FP8ATTN_STATUS_BAD_OPTION, "accumulator_mantissa_bits");
  d = g_valid, d.accumulator_model = FP8ATTN_ACCUMULATOR_FP32, d.accumulator_mantissa_bits = 23;
  expect_desc("accumulator_mantissa_bits 23 in FP32 mode", &d, FP8ATTN_STATUS_BAD_OPTION, "accumulator_mantissa_bits");
  d = g_valid, d.accumulator_model = FP8ATTN_ACCUMULATOR_FP32, d.accumulator_mantissa_bits = -1;
  expect_desc("accumulator_mantissa_bits -1 in FP32 mode", &d, FP8ATTN_STATUS_BAD_OPTION, "accumulator_mantissa_bits");
  {
    fp8attn_error err = abi_fresh_error();
    fp8attn_plan plan = NULL;
    d = g_valid, d.accumulator_model = FP8ATTN_ACCUMULATOR_FP32, d.accumulator_mantissa_bits = 0;
    const int32_t status = fp8attn_plan_create(g_ctx, &d, &plan, &err);
    abi_check(status == FP8ATTN_OK, "accumulator_mantissa_bits 0 (the default width)", "%s: %s",
              fp8attn_status_name(status), err.message);
    if (plan != NULL) fp8attn_plan_destroy(plan);
  }
}

static void get_tile_cases(void) {
  fp8attn_error err = abi_fresh_error();
  fp8attn_plan plan = NULL;
  int32_t block_m = 0x5A5A5A5A, block_n = 0x5A5A5A5A;
  int32_t status = fp8attn_plan_create(g_ctx, &g_valid, &plan, &err);
  abi_check(status == FP8ATTN_OK, "get_tile plan", "%s: %s", fp8attn_status_name(status), err.message);
  if (status != FP8ATTN_OK) return;
  status = fp8attn_plan_get_tile(plan, &block_m, &block_n, &err);
  printf("plan_get_tile (head_dim %d, E4M3): %s, block %d x %d\n", g_valid.head_dim, fp8attn_status_name(status),
         (int)block_m, (int)block_n);
  abi_check(status == FP8ATTN_OK && block_m > 0 && block_n > 0 && block_m % 64 == 0, "plan_get_tile",
            "%s, block %d x %d", fp8attn_status_name(status), (int)block_m, (int)block_n);

  block_m = block_n = 0x5A5A5A5A;
  err = abi_fresh_error();
  status = fp8attn_plan_get_tile(NULL, &block_m, &block_n, &err);
  abi_expect_status("get_tile: plan NULL", status, FP8ATTN_STATUS_BAD_HANDLE, &err, "plan");
  abi_check(block_m == 0x5A5A5A5A && block_n == 0x5A5A5A5A, "get_tile: plan NULL", "outputs written on failure");
  err = abi_fresh_error();
  status = fp8attn_plan_get_tile(plan, NULL, &block_n, &err);
  abi_expect_status("get_tile: block_m NULL", status, FP8ATTN_STATUS_NULL_POINTER, &err, "block_m");
  abi_check(block_n == 0x5A5A5A5A, "get_tile: block_m NULL", "block_n written on failure");
  err = abi_fresh_error();
  status = fp8attn_plan_get_tile(plan, &block_m, NULL, &err);
  abi_expect_status("get_tile: block_n NULL", status, FP8ATTN_STATUS_NULL_POINTER, &err, "block_n");
  abi_check(block_m == 0x5A5A5A5A, "get_tile: block_n NULL", "block_m written on failure");
  fp8attn_plan_destroy(plan);
}

static void expect_workspace(const char* what, fp8attn_plan plan, int64_t batch, int64_t seqlen_q, int64_t seqlen_k,
                             int null_bytes, int32_t want, const char* needle) {
  fp8attn_error err = abi_fresh_error();
  size_t bytes;
  int32_t status;
  abi_poison(&bytes, sizeof bytes, ABI_POISON_BYTE);
  status = fp8attn_plan_workspace_size(plan, batch, seqlen_q, seqlen_k, null_bytes ? NULL : &bytes, &err);
  abi_expect_status(what, status, want, &err, needle);
  abi_check(abi_is_poison(&bytes, sizeof bytes, ABI_POISON_BYTE), what, "bytes was written by a failing call");
}

static void workspace_cases(void) {
  fp8attn_error err = abi_fresh_error();
  fp8attn_plan plan = NULL;
  size_t bytes = 0;
  int32_t status = fp8attn_plan_create(g_ctx, &g_valid, &plan, &err);
  abi_check(status == FP8ATTN_OK, "valid plan", "%s: %s", fp8attn_status_name(status), err.message);
  if (status != FP8ATTN_OK) return;
  status = fp8attn_plan_workspace_size(plan, 2, 100, 300, &bytes, &err);
  printf("valid workspace query: %s, %zu bytes\n", fp8attn_status_name(status), bytes);
  abi_check(status == FP8ATTN_OK, "valid workspace query", "%s: %s", fp8attn_status_name(status), err.message);

  expect_workspace("workspace: plan NULL", NULL, 2, 100, 300, 0, FP8ATTN_STATUS_BAD_HANDLE, "plan");
  expect_workspace("workspace: bytes NULL", plan, 2, 100, 300, 1, FP8ATTN_STATUS_NULL_POINTER, "bytes");
  expect_workspace("workspace: batch 0", plan, 0, 100, 300, 0, FP8ATTN_STATUS_BAD_SHAPE, "batch");
  expect_workspace("workspace: max_seqlen_q negative", plan, 2, -1, 300, 0, FP8ATTN_STATUS_BAD_SHAPE, "max_seqlen_q");
  expect_workspace("workspace: max_seqlen_k negative", plan, 2, 100, -1, 0, FP8ATTN_STATUS_BAD_SHAPE, "max_seqlen_k");
  /* An empty key sequence (max_seqlen_k 0) is a valid problem: see the call-contract tests. */
  fp8attn_plan_destroy(plan);
  fp8attn_plan_destroy(NULL); /* allowed */
}

int main(void) {
  fp8attn_context_options options;
  fp8attn_error err = abi_fresh_error();
  int32_t status;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.backend = FP8ATTN_BACKEND_CPU;
  options.num_threads = 1;
  status = fp8attn_context_create(&options, &g_ctx, &err);
  abi_check(status == FP8ATTN_OK, "context", "%s: %s", fp8attn_status_name(status), err.message);
  memset(&g_valid, 0, sizeof g_valid);
  status = fp8attn_attention_desc_init(&g_valid);
  abi_check(status == FP8ATTN_OK, "desc_init", "returned %s", fp8attn_status_name(status));
  g_valid.num_heads_q = 8;
  g_valid.num_heads_kv = 2;
  if (g_ctx != NULL) {
    plan_create_cases();
    workspace_cases();
    get_tile_cases();
  }
  fp8attn_context_destroy(g_ctx);
  return abi_finish();
}
