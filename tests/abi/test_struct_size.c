/* The struct_size rules of DESIGN §2 for every struct passed in: 0 and too-small sizes are
 * refused; an older fp8attn_attention_desc layout (ending after `telemetry`) is accepted and
 * gets the default for the field it lacks; a larger size (a newer caller) is accepted and its
 * extra bytes ignored; `next` must be NULL; fp8attn_attention_desc_init writes only what the
 * caller's struct_size covers. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "abi_fixture.h"
#include "abi_harness.h"

/* The layout of fp8attn_attention_desc before stabilized_shift_cap_log2 was appended. */
#define DESC_V0_SIZE offsetof(fp8attn_attention_desc, stabilized_shift_cap_log2)

static abi_problem g_problem;
static uint64_t g_rng;

/* Runs forward with a plan made from `desc`; copies out into `result`. Returns the status of
 * the first call that fails. */
static int32_t forward_with(const fp8attn_attention_desc* desc, float* result) {
  fp8attn_error err = abi_fresh_error();
  fp8attn_plan plan = NULL;
  int32_t status = fp8attn_plan_create(g_problem.ctx, desc, &plan, &err);
  if (status == FP8ATTN_OK) {
    abi_problem_poison(&g_problem);
    status = fp8attn_attention_forward(plan, &g_problem.args, g_problem.workspace, g_problem.workspace_bytes, NULL,
                                       &err);
    memcpy(result, g_problem.out, g_problem.out_bytes);
  }
  if (status != FP8ATTN_OK) printf("forward_with: %s: %s\n", fp8attn_status_name(status), err.message);
  fp8attn_plan_destroy(plan);
  return status;
}

static void old_desc_layout(void) {
  enum { kMaxOut = 64 * 64 };
  static float out_old[kMaxOut], out_cap16[kMaxOut], out_cap1[kMaxOut], out_model_off[kMaxOut];
  fp8attn_attention_desc d = g_problem.desc;
  fp8attn_error err = abi_fresh_error();
  fp8attn_plan plan = NULL;
  int32_t status;
  const int64_t row = g_problem.shape.heads_kv * g_problem.shape.head_dim;
  int64_t j;

  /* Tie every key with its neighbour, so that every block row max is tied and the stabilized
   * shift (and its cap) takes effect. */
  for (j = 0; j + 1 < g_problem.rows_k; j += 2) memcpy(g_problem.k + (j + 1) * row, g_problem.k + j * row, (size_t)row);
  d.softmax_variant = FP8ATTN_SOFTMAX_STABILIZED;
  d.stabilized_beta = 20.0f;

  /* A full-size struct with garbage in the last field is refused: the field is read. */
  d.stabilized_shift_cap_log2 = NAN;
  status = fp8attn_plan_create(g_problem.ctx, &d, &plan, &err);
  abi_expect_status("full desc with cap NaN", status, FP8ATTN_STATUS_BAD_SCALE, &err, "stabilized_shift_cap_log2");
  fp8attn_plan_destroy(status == FP8ATTN_OK ? plan : NULL);

  /* The older layout with garbage in every field past its end is accepted: none is read. */
  d.struct_size = DESC_V0_SIZE;
  d.sink_tokens = -5;
  d.accumulator_model = 7;
  d.accumulator_mantissa_bits = 99;
  printf("older desc layout: struct_size %zu of %zu\n", (size_t)DESC_V0_SIZE, sizeof(fp8attn_attention_desc));
  abi_check(forward_with(&d, out_old) == FP8ATTN_OK, "older desc layout", "refused");

  /* ...and behaves exactly like the default cap, 16, which differs from another cap here. */
  d.struct_size = sizeof d;
  d.sink_tokens = 0, d.accumulator_model = 1, d.accumulator_mantissa_bits = 13; /* the defaults */
  d.stabilized_shift_cap_log2 = 16.0f;
  abi_check(forward_with(&d, out_cap16) == FP8ATTN_OK, "desc with cap 16", "refused");
  d.stabilized_shift_cap_log2 = 1.0f;
  abi_check(forward_with(&d, out_cap1) == FP8ATTN_OK, "desc with cap 1", "refused");
  abi_check(memcmp(out_old, out_cap16, g_problem.out_bytes) == 0, "older desc layout",
            "output differs from the default cap 16: the missing field did not get its default");
  abi_check(memcmp(out_cap1, out_cap16, g_problem.out_bytes) != 0, "older desc layout",
            "cap 1 and cap 16 give the same output: this input cannot tell the default apart");
  printf("older desc layout: output %s the cap-16 output, %s the cap-1 output\n",
         memcmp(out_old, out_cap16, g_problem.out_bytes) == 0 ? "equals" : "DIFFERS FROM",
         memcmp(out_old, out_cap1, g_problem.out_bytes) == 0 ? "EQUALS" : "differs from");

  /* The older layout also predates the accumulator model, so it gets the model on (13 bits):
     switching the model off must change the output. */
  d.stabilized_shift_cap_log2 = 16.0f, d.accumulator_model = 0;
  abi_check(forward_with(&d, out_model_off) == FP8ATTN_OK, "desc with the accumulator model off", "refused");
  abi_check(memcmp(out_old, out_model_off, g_problem.out_bytes) != 0, "older desc layout",
            "output equals the model-off output: the older layout did not get the accumulator model");
}

static void newer_caller_sizes(void) {
  struct {
    fp8attn_attention_desc d;
    unsigned char tail[64];
  } big_desc;
  struct {
    fp8attn_attention_args a;
    unsigned char tail[64];
  } big_args;
  struct {
    fp8attn_sink_model m;
    unsigned char tail[64];
  } big_model;
  struct {
    fp8attn_context_options o;
    unsigned char tail[64];
  } big_options;
  static float expected_out[64 * 64];
  fp8attn_error err = abi_fresh_error();
  fp8attn_plan plan = NULL;
  fp8attn_context ctx = NULL;
  double lead_small, exp_small, lead_big, exp_big;
  int32_t status;
  size_t i;

  for (i = 0; i < sizeof big_desc.tail; ++i) big_desc.tail[i] = (unsigned char)abi_random_u64(&g_rng);
  memcpy(big_args.tail, big_desc.tail, sizeof big_args.tail);
  memcpy(big_model.tail, big_desc.tail, sizeof big_model.tail);
  memcpy(big_options.tail, big_desc.tail, sizeof big_options.tail);

  big_desc.d = g_problem.desc;
  big_desc.d.struct_size = sizeof big_desc;
  status = fp8attn_plan_create(g_problem.ctx, &big_desc.d, &plan, &err);
  printf("newer desc layout: struct_size %zu -> %s\n", sizeof big_desc, fp8attn_status_name(status));
  abi_check(status == FP8ATTN_OK, "newer desc layout", "%s: %s", fp8attn_status_name(status), err.message);

  abi_check(forward_with(&g_problem.desc, expected_out) == FP8ATTN_OK, "reference forward", "failed");
  big_args.a = g_problem.args;
  big_args.a.struct_size = sizeof big_args;
  abi_problem_poison(&g_problem);
  status = fp8attn_attention_forward(plan ? plan : g_problem.plan, &big_args.a, g_problem.workspace,
                                     g_problem.workspace_bytes, NULL, &err);
  printf("newer args layout: struct_size %zu -> %s\n", sizeof big_args, fp8attn_status_name(status));
  abi_check(status == FP8ATTN_OK, "newer args layout", "%s: %s", fp8attn_status_name(status), err.message);
  abi_check(memcmp(expected_out, g_problem.out, g_problem.out_bytes) == 0, "newer args layout",
            "output differs from the same call with the exact size");
  fp8attn_plan_destroy(plan);

  memset(&big_model.m, 0, sizeof big_model.m);
  big_model.m.struct_size = sizeof big_model.m;
  big_model.m.sink_strength = 9.0, big_model.m.k_sink = 1, big_model.m.p_scale = 1.0;
  big_model.m.kv_order = FP8ATTN_KV_ORDER_REVERSE, big_model.m.block_n = 128, big_model.m.seqlen_k = 1000;
  status = fp8attn_predict_p_underflow(&big_model.m, &lead_small, &exp_small, &err);
  abi_check(status == FP8ATTN_OK, "sink model exact size", "%s", fp8attn_status_name(status));
  big_model.m.struct_size = sizeof big_model;
  status = fp8attn_predict_p_underflow(&big_model.m, &lead_big, &exp_big, &err);
  printf("newer sink model layout: struct_size %zu -> %s\n", sizeof big_model, fp8attn_status_name(status));
  abi_check(status == FP8ATTN_OK && lead_big == lead_small && exp_big == exp_small, "newer sink model layout",
            "%s, or predictions differ", fp8attn_status_name(status));

  memset(&big_options.o, 0, sizeof big_options.o);
  big_options.o.struct_size = sizeof big_options;
  big_options.o.backend = FP8ATTN_BACKEND_CPU;
  status = fp8attn_context_create(&big_options.o, &ctx, &err);
  printf("newer options layout: struct_size %zu -> %s\n", sizeof big_options, fp8attn_status_name(status));
  abi_check(status == FP8ATTN_OK && ctx != NULL, "newer options layout", "%s", fp8attn_status_name(status));
  fp8attn_context_destroy(ctx);
}

static void zero_small_and_next(void) {
  const int dummy = 0;
  fp8attn_attention_desc d;
  fp8attn_context_options o;
  fp8attn_sink_model m;
  fp8attn_attention_args a;
  fp8attn_error err;
  fp8attn_plan plan = NULL;
  fp8attn_context ctx = NULL;
  double x = 0.0;
  int32_t status;

  memset(&o, 0, sizeof o);
  o.struct_size = 0;
  err = abi_fresh_error();
  status = fp8attn_context_create(&o, &ctx, &err);
  abi_expect_status("options.struct_size 0", status, FP8ATTN_STATUS_BAD_STRUCT_SIZE, &err, "fp8attn_context_options");
  o.struct_size = offsetof(fp8attn_context_options, log_user_data); /* the first layout, cut short */
  err = abi_fresh_error();
  status = fp8attn_context_create(&o, &ctx, &err);
  abi_expect_status("options.struct_size first layout - 1 field", status, FP8ATTN_STATUS_BAD_STRUCT_SIZE, &err,
                    "oldest layout");
  o.struct_size = sizeof o, o.next = &dummy;
  err = abi_fresh_error();
  status = fp8attn_context_create(&o, &ctx, &err);
  abi_expect_status("options.next", status, FP8ATTN_STATUS_BAD_EXTENSION, &err, "next must be NULL");

  d = g_problem.desc, d.struct_size = 0;
  err = abi_fresh_error();
  status = fp8attn_plan_create(g_problem.ctx, &d, &plan, &err);
  abi_expect_status("desc.struct_size 0", status, FP8ATTN_STATUS_BAD_STRUCT_SIZE, &err, "fp8attn_attention_desc");
  d.struct_size = DESC_V0_SIZE - 1;
  err = abi_fresh_error();
  status = fp8attn_plan_create(g_problem.ctx, &d, &plan, &err);
  abi_expect_status("desc.struct_size older layout - 1", status, FP8ATTN_STATUS_BAD_STRUCT_SIZE, &err, "oldest layout");
  d.struct_size = sizeof d, d.next = &dummy;
  err = abi_fresh_error();
  status = fp8attn_plan_create(g_problem.ctx, &d, &plan, &err);
  abi_expect_status("desc.next", status, FP8ATTN_STATUS_BAD_EXTENSION, &err, "next must be NULL");

  a = g_problem.args, a.struct_size = offsetof(fp8attn_attention_args, telemetry); /* the first layout, cut short */
  err = abi_fresh_error();
  status = fp8attn_attention_forward(g_problem.plan, &a, g_problem.workspace, g_problem.workspace_bytes, NULL, &err);
  abi_expect_status("args.struct_size first layout - 1 field", status, FP8ATTN_STATUS_BAD_STRUCT_SIZE, &err,
                    "oldest layout");
  /* The first args layout (through `telemetry`) stays accepted whatever was appended since. */
  a = g_problem.args, a.struct_size = offsetof(fp8attn_attention_args, telemetry) + sizeof a.telemetry;
  err = abi_fresh_error();
  abi_problem_poison(&g_problem);
  status = fp8attn_attention_forward(g_problem.plan, &a, g_problem.workspace, g_problem.workspace_bytes, NULL, &err);
  printf("first args layout: struct_size %zu of %zu -> %s\n", a.struct_size, sizeof a, fp8attn_status_name(status));
  abi_check(status == FP8ATTN_OK && !abi_problem_untouched(&g_problem), "first args layout", "%s: %s",
            fp8attn_status_name(status), err.message);
  a = g_problem.args, a.k.struct_size = sizeof a.k - 1;
  err = abi_fresh_error();
  status = fp8attn_attention_forward(g_problem.plan, &a, g_problem.workspace, g_problem.workspace_bytes, NULL, &err);
  abi_expect_status("tensor struct_size sizeof-1", status, FP8ATTN_STATUS_BAD_STRUCT_SIZE, &err, "args.k.struct_size");

  memset(&m, 0, sizeof m);
  err = abi_fresh_error();
  status = fp8attn_predict_p_underflow(&m, &x, &x, &err);
  abi_expect_status("sink_model.struct_size 0", status, FP8ATTN_STATUS_BAD_STRUCT_SIZE, &err, "fp8attn_sink_model");
  m.struct_size = sizeof m, m.next = &dummy;
  err = abi_fresh_error();
  status = fp8attn_predict_p_underflow(&m, &x, &x, &err);
  abi_expect_status("sink_model.next", status, FP8ATTN_STATUS_BAD_EXTENSION, &err, "next must be NULL");
}

static void desc_init_sizes(void) {
  struct {
    fp8attn_attention_desc d;
    unsigned char guard[16];
  } s;
  fp8attn_attention_desc full;
  const unsigned char* bytes = (const unsigned char*)&s;
  int32_t status;

  /* An older caller: only DESC_V0_SIZE bytes may be written; the rest holds a canary. */
  memset(&s, 0xC3, sizeof s);
  s.d.struct_size = DESC_V0_SIZE;
  status = fp8attn_attention_desc_init(&s.d);
  abi_check(status == FP8ATTN_OK, "desc_init older size", "returned %s", fp8attn_status_name(status));
  abi_check(s.d.struct_size == DESC_V0_SIZE, "desc_init older size", "struct_size became %zu", s.d.struct_size);
  abi_check(abi_is_poison(bytes + DESC_V0_SIZE, sizeof s - DESC_V0_SIZE, 0xC3), "desc_init older size",
            "bytes past struct_size were written");
  abi_check(s.d.head_dim == 128 && s.d.p_scale_log2 == 8 && s.d.kv_order == FP8ATTN_KV_ORDER_REVERSE &&
                s.d.input_dtype == FP8ATTN_DTYPE_E4M3 && s.d.window_left == -1 && s.d.next == NULL,
            "desc_init older size", "defaults not filled (head_dim %d, p_scale_log2 %d)", s.d.head_dim,
            s.d.p_scale_log2);

  /* struct_size 0 means the full size. */
  memset(&s, 0xC3, sizeof s);
  s.d.struct_size = 0;
  status = fp8attn_attention_desc_init(&s.d);
  abi_check(status == FP8ATTN_OK && s.d.struct_size == sizeof(fp8attn_attention_desc), "desc_init size 0",
            "struct_size became %zu", s.d.struct_size);
  abi_check(s.d.stabilized_shift_cap_log2 == 16.0f, "desc_init size 0", "cap default %g", s.d.stabilized_shift_cap_log2);
  /* The FP8 accumulator model is on by default with Hopper's 13 mantissa bits (FP22). */
  abi_check(s.d.accumulator_model == 1 && s.d.accumulator_mantissa_bits == 13, "desc_init size 0",
            "accumulator model default %u with %d bits", s.d.accumulator_model, s.d.accumulator_mantissa_bits);
  abi_check(abi_is_poison(s.guard, sizeof s.guard, 0xC3), "desc_init size 0", "wrote past the struct");

  /* A newer caller's larger size: the library fills its own layout and nothing past it. */
  memset(&s, 0xC3, sizeof s);
  s.d.struct_size = sizeof s;
  memset(&full, 0, sizeof full);
  fp8attn_attention_desc_init(&full);
  status = fp8attn_attention_desc_init(&s.d);
  abi_check(status == FP8ATTN_OK, "desc_init larger size", "returned %s", fp8attn_status_name(status));
  abi_check(abi_is_poison(s.guard, sizeof s.guard, 0xC3), "desc_init larger size", "wrote past its own layout");
  abi_check(memcmp((const unsigned char*)&s.d + sizeof(size_t), (const unsigned char*)&full + sizeof(size_t),
                   sizeof full - sizeof(size_t)) == 0,
            "desc_init larger size", "fields differ from a full-size init");
  printf("desc_init: older size %zu, size 0 -> %zu, larger size -> %zu\n", (size_t)DESC_V0_SIZE,
         sizeof(fp8attn_attention_desc), s.d.struct_size);
}

int main(void) {
  abi_shape shape;
  int32_t status;
  g_rng = abi_seed(20261124u);
  memset(&shape, 0, sizeof shape);
  shape.batch = 1, shape.seqlen_q = 64, shape.seqlen_k = 64;
  shape.heads_q = 1, shape.heads_kv = 1, shape.head_dim = 64;
  status = abi_problem_init(&g_problem, &shape, &g_rng);
  abi_check(status == FP8ATTN_OK, "fixture", "abi_problem_init returned %s", fp8attn_status_name(status));
  if (status == FP8ATTN_OK) {
    newer_caller_sizes();
    zero_small_and_next();
    desc_init_sizes();
    old_desc_layout(); /* last: it rewrites k */
  }
  abi_problem_free(&g_problem);
  return abi_finish();
}
