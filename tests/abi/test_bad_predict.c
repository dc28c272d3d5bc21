/* Bad input for fp8attn_predict_p_underflow: both outputs are poisoned doubles that must be
 * bit-identical after a failure. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "abi_harness.h"

static fp8attn_sink_model g_valid;

static void expect_model(const char* what, const fp8attn_sink_model* model, int32_t want, const char* needle) {
  fp8attn_error err = abi_fresh_error();
  double leading, expected;
  int32_t status;
  abi_poison(&leading, sizeof leading, ABI_POISON_BYTE);
  abi_poison(&expected, sizeof expected, ABI_POISON_BYTE);
  status = fp8attn_predict_p_underflow(model, &leading, &expected, &err);
  abi_expect_status(what, status, want, &err, needle);
  abi_check(abi_is_poison(&leading, sizeof leading, ABI_POISON_BYTE), what, "leading_order written on failure");
  abi_check(abi_is_poison(&expected, sizeof expected, ABI_POISON_BYTE), what, "expected written on failure");
}

int main(void) {
  fp8attn_sink_model m;
  fp8attn_error err = abi_fresh_error();
  double leading = -1.0, expected = -1.0;
  const int dummy = 0;
  int32_t status;

  memset(&g_valid, 0, sizeof g_valid);
  g_valid.struct_size = sizeof g_valid;
  g_valid.sink_strength = 11.0;
  g_valid.k_sink = 4;
  g_valid.p_scale = 256.0;
  g_valid.kv_order = FP8ATTN_KV_ORDER_FORWARD;
  g_valid.block_n = 128;
  g_valid.seqlen_k = 4096;
  status = fp8attn_predict_p_underflow(&g_valid, &leading, &expected, &err);
  printf("valid model (delta 11, k 4, S_p 256, forward): %s, leading %.6f, expected %.6f\n",
         fp8attn_status_name(status), leading, expected);
  abi_check(status == FP8ATTN_OK, "valid model", "%s: %s", fp8attn_status_name(status), err.message);
  abi_check(leading > 0.0 && leading < 1.0 && expected > 0.0 && expected < 1.0, "valid model",
            "predictions outside (0, 1): %g %g", leading, expected);
  status = fp8attn_predict_p_underflow(&g_valid, NULL, NULL, &err);
  abi_check(status == FP8ATTN_OK, "both outputs NULL", "%s: %s", fp8attn_status_name(status), err.message);

  expect_model("model NULL", NULL, FP8ATTN_STATUS_NULL_POINTER, "fp8attn_sink_model");
  m = g_valid, m.struct_size = 0;
  expect_model("model.struct_size 0", &m, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "struct_size");
  m = g_valid, m.struct_size = offsetof(fp8attn_sink_model, seqlen_k);
  expect_model("model.struct_size too small", &m, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "struct_size");
  m = g_valid, m.next = &dummy;
  expect_model("model.next not NULL", &m, FP8ATTN_STATUS_BAD_EXTENSION, "next");
  m = g_valid, m.sink_strength = NAN;
  expect_model("sink_strength NaN", &m, FP8ATTN_STATUS_INVALID_ARGUMENT, "sink_strength");
  m = g_valid, m.sink_strength = -INFINITY;
  expect_model("sink_strength -inf", &m, FP8ATTN_STATUS_INVALID_ARGUMENT, "sink_strength");
  m = g_valid, m.k_sink = 0;
  expect_model("k_sink 0", &m, FP8ATTN_STATUS_INVALID_ARGUMENT, "k_sink");
  m = g_valid, m.p_scale = 0.0;
  expect_model("p_scale 0", &m, FP8ATTN_STATUS_BAD_SCALE, "p_scale");
  m = g_valid, m.p_scale = NAN;
  expect_model("p_scale NaN", &m, FP8ATTN_STATUS_BAD_SCALE, "p_scale");
  m = g_valid, m.kv_order = 3;
  expect_model("kv_order unknown", &m, FP8ATTN_STATUS_BAD_OPTION, "kv_order");
  m = g_valid, m.block_n = 0;
  expect_model("block_n 0", &m, FP8ATTN_STATUS_INVALID_ARGUMENT, "block_n");
  m = g_valid, m.seqlen_k = m.k_sink;
  expect_model("seqlen_k not above k_sink", &m, FP8ATTN_STATUS_INVALID_ARGUMENT, "seqlen_k");
  return abi_finish();
}
