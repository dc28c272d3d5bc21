/* Bad input for fp8attn_attention_forward on padded (rank-4) tensors: each case changes one
 * field of a call that succeeds, and checks the exact status, a message naming the field, and
 * that out and lse (poisoned beforehand) are bit-identical afterwards. */
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_fixture.h"
#include "abi_harness.h"

static abi_problem g_problem;

static void expect_forward(const char* what, const fp8attn_attention_args* a, void* workspace, size_t workspace_bytes,
                           struct CUstream_st* stream, int32_t want, const char* needle) {
  fp8attn_error err = abi_fresh_error();
  int32_t status;
  abi_problem_poison(&g_problem);
  status = fp8attn_attention_forward(g_problem.plan, a, workspace, workspace_bytes, stream, &err);
  abi_expect_status(what, status, want, &err, needle);
  abi_check(abi_problem_untouched(&g_problem), what, "out or lse was written by a failing call");
}

/* The common case: the fixture's workspace, no stream. */
static void expect_args(const char* what, const fp8attn_attention_args* a, int32_t want, const char* needle) {
  expect_forward(what, a, g_problem.workspace, g_problem.workspace_bytes, NULL, want, needle);
}

static void check_valid_call(void) {
  fp8attn_error err = abi_fresh_error();
  const size_t n_out = g_problem.out_bytes / sizeof(float);
  const size_t n_lse = g_problem.lse_bytes / sizeof(float);
  size_t i, finite = 0;
  int32_t status;
  abi_problem_poison(&g_problem);
  status = fp8attn_attention_forward(g_problem.plan, &g_problem.args, g_problem.workspace, g_problem.workspace_bytes,
                                     NULL, &err);
  abi_check(status == FP8ATTN_OK, "valid call", "returned %s: %s", fp8attn_status_name(status), err.message);
  abi_check(err.status == FP8ATTN_OK && err.message[0] == '\0', "valid call", "err not cleared on success");
  for (i = 0; i < n_out; ++i) finite += isfinite(g_problem.out[i]) ? 1 : 0;
  for (i = 0; i < n_lse; ++i) finite += isfinite(g_problem.lse[i]) ? 1 : 0;
  printf("valid call: %s, %zu of %zu outputs finite\n", fp8attn_status_name(status), finite, n_out + n_lse);
  abi_check(finite == n_out + n_lse, "valid call", "%zu of %zu outputs finite", finite, n_out + n_lse);
}

static void args_and_struct_cases(void) {
  const fp8attn_attention_args* valid = &g_problem.args;
  fp8attn_attention_args a;
  fp8attn_error err = abi_fresh_error();
  const int dummy = 0;
  fp8attn_paged_kv paged, unknown;
  int32_t status;
  memset(&paged, 0, sizeof paged);
  paged.struct_size = sizeof paged;
  paged.struct_type = FP8ATTN_STRUCT_TYPE_PAGED_KV;

  abi_problem_poison(&g_problem);
  status = fp8attn_attention_forward(NULL, valid, g_problem.workspace, g_problem.workspace_bytes, NULL, &err);
  abi_expect_status("plan NULL", status, FP8ATTN_STATUS_BAD_HANDLE, &err, "plan");
  abi_check(abi_problem_untouched(&g_problem), "plan NULL", "outputs written");

  expect_args("args NULL", NULL, FP8ATTN_STATUS_NULL_POINTER, "fp8attn_attention_args");
  a = *valid, a.struct_size = 0;
  expect_args("args.struct_size 0", &a, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "struct_size");
  a = *valid, a.struct_size = offsetof(fp8attn_attention_args, q);
  expect_args("args.struct_size too small", &a, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "struct_size");
  /* args.next is an extension chain: each struct starts with struct_size, next and struct_type.
     An unknown type, and a paged cache on a plan whose page_size is 0, are refused. */
  unknown = paged, unknown.struct_type = 77;
  a = *valid, a.next = &unknown;
  expect_args("args.next of an unknown struct_type", &a, FP8ATTN_STATUS_BAD_EXTENSION, "next");
  a = *valid, a.next = &paged;
  expect_args("args.next a paged cache without desc.page_size", &a, FP8ATTN_STATUS_BAD_EXTENSION, "page_size");
  expect_forward("stream given to the CPU backend", valid, g_problem.workspace, g_problem.workspace_bytes,
                 (struct CUstream_st*)&g_problem, FP8ATTN_STATUS_BAD_STREAM, "stream");
  expect_forward("workspace too small", valid, g_problem.workspace, g_problem.workspace_bytes - 1, NULL,
                 FP8ATTN_STATUS_WORKSPACE_TOO_SMALL, "workspace");
  expect_forward("workspace size 0", valid, NULL, 0, NULL, FP8ATTN_STATUS_WORKSPACE_TOO_SMALL, "workspace");
  expect_forward("workspace NULL", valid, NULL, g_problem.workspace_bytes, NULL, FP8ATTN_STATUS_NULL_POINTER,
                 "workspace");

  a = *valid, a.q.data = NULL;
  expect_args("q.data NULL", &a, FP8ATTN_STATUS_NULL_POINTER, "args.q");
  a = *valid, a.k.data = NULL;
  expect_args("k.data NULL", &a, FP8ATTN_STATUS_NULL_POINTER, "args.k");
  a = *valid, a.v.data = NULL;
  expect_args("v.data NULL", &a, FP8ATTN_STATUS_NULL_POINTER, "args.v");
  a = *valid, a.out.data = NULL;
  expect_args("out.data NULL", &a, FP8ATTN_STATUS_NULL_POINTER, "args.out");
  a = *valid, a.q.struct_size = 0;
  expect_args("q.struct_size 0", &a, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "args.q.struct_size");
  a = *valid, a.lse.struct_size = offsetof(fp8attn_tensor, shape);
  expect_args("lse.struct_size too small", &a, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "args.lse.struct_size");
  a = *valid, a.v.next = &dummy;
  expect_args("v.next not NULL", &a, FP8ATTN_STATUS_BAD_EXTENSION, "args.v.next");
}

static void dtype_and_device_cases(void) {
  const fp8attn_attention_args* valid = &g_problem.args;
  fp8attn_attention_args a;
  a = *valid, a.q.dtype = 99;
  expect_args("q.dtype unknown", &a, FP8ATTN_STATUS_BAD_DTYPE, "args.q");
  a = *valid, a.k.dtype = 0;
  expect_args("k.dtype 0", &a, FP8ATTN_STATUS_BAD_DTYPE, "args.k");
  a = *valid, a.v.dtype = FP8ATTN_DTYPE_E5M2;
  expect_args("v.dtype E5M2 for an E4M3 plan", &a, FP8ATTN_STATUS_BAD_DTYPE, "args.v");
  a = *valid, a.out.dtype = FP8ATTN_DTYPE_BF16;
  expect_args("out.dtype BF16 for an F32 plan", &a, FP8ATTN_STATUS_BAD_DTYPE, "args.out");
  a = *valid, a.lse.dtype = FP8ATTN_DTYPE_F64;
  expect_args("lse.dtype F64", &a, FP8ATTN_STATUS_BAD_DTYPE, "args.lse");
  a = *valid, a.q_descale.dtype = FP8ATTN_DTYPE_BF16;
  expect_args("q_descale.dtype BF16", &a, FP8ATTN_STATUS_BAD_DTYPE, "args.q_descale");
  a = *valid, a.q.device = FP8ATTN_DEVICE_CUDA;
  expect_args("q on the CUDA device", &a, FP8ATTN_STATUS_BAD_DEVICE, "args.q");
  a = *valid, a.out.device = 7;
  expect_args("out.device unknown", &a, FP8ATTN_STATUS_BAD_DEVICE, "args.out.device");
}

static void shape_and_stride_cases(void) {
  const fp8attn_attention_args* valid = &g_problem.args;
  fp8attn_attention_args a;
  a = *valid, a.q.rank = 2;
  expect_args("q.rank 2", &a, FP8ATTN_STATUS_BAD_SHAPE, "rank");
  a = *valid, a.q.rank = 9;
  expect_args("q.rank 9", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.q.rank");
  a = *valid, a.k.rank = 3;
  expect_args("k.rank 3 with rank-4 q", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.k.rank");
  a = *valid, a.lse.rank = 2;
  expect_args("lse.rank 2 for padded", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.lse.rank");
  a = *valid, a.q.shape[2] = g_problem.shape.heads_q + 1;
  expect_args("q heads mismatch", &a, FP8ATTN_STATUS_BAD_SHAPE, "num_heads_q");
  a = *valid, a.q.shape[3] = 128;
  expect_args("q head_dim mismatch", &a, FP8ATTN_STATUS_BAD_SHAPE, "head_dim");
  a = *valid, a.k.shape[2] = g_problem.shape.heads_kv * 2;
  expect_args("k heads mismatch", &a, FP8ATTN_STATUS_BAD_SHAPE, "num_heads_kv");
  /* The head_dim of K, V and out each on its own: Q's alone does not reach them. */
  a = *valid, a.k.shape[3] = 128;
  expect_args("k head_dim mismatch", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.k.shape[3] is 128, expected head_dim");
  a = *valid, a.v.shape[3] = 128;
  expect_args("v head_dim mismatch", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.v.shape[3] is 128, expected head_dim_v");
  a = *valid, a.out.shape[3] = 128;
  expect_args("out head_dim mismatch", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.out.shape[3] is 128, expected head_dim_v");
  a = *valid, a.v.shape[1] = g_problem.shape.seqlen_k - 1;
  expect_args("v seqlen differs from k", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.v");
  a = *valid, a.k.shape[0] = g_problem.shape.batch + 1;
  expect_args("k batch mismatch", &a, FP8ATTN_STATUS_BAD_SHAPE, "batch");
  a = *valid, a.out.shape[1] = g_problem.shape.seqlen_q + 1;
  expect_args("out seqlen mismatch", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.out");
  a = *valid, a.lse.shape[2] = g_problem.shape.seqlen_q - 1;
  expect_args("lse seqlen mismatch", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.lse");
  a = *valid, a.q_descale.shape[1] = g_problem.shape.heads_q;
  expect_args("q_descale heads_q instead of heads_kv", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.q_descale");
  a = *valid, a.q.shape[0] = -1;
  expect_args("q negative extent", &a, FP8ATTN_STATUS_BAD_SHAPE, "negative");
  a = *valid, a.cu_seqlens_q = a.q_descale, a.cu_seqlens_q.dtype = FP8ATTN_DTYPE_I32;
  expect_args("cu_seqlens with rank-4 tensors", &a, FP8ATTN_STATUS_BAD_SHAPE, "cu_seqlens");

  a = *valid, a.q.stride[1] = -a.q.stride[1];
  expect_args("q negative stride", &a, FP8ATTN_STATUS_BAD_STRIDE, "args.q.stride[1]");
  a = *valid, a.v.stride[3] = -1;
  expect_args("v negative stride", &a, FP8ATTN_STATUS_BAD_STRIDE, "args.v.stride[3]");
  a = *valid, a.out.stride[0] = -1;
  expect_args("out negative stride", &a, FP8ATTN_STATUS_BAD_STRIDE, "args.out.stride[0]");
  a = *valid, a.lse.stride[2] = -1;
  expect_args("lse negative stride", &a, FP8ATTN_STATUS_BAD_STRIDE, "args.lse.stride[2]");
  a = *valid, a.k_descale.stride[0] = -1;
  expect_args("k_descale negative stride", &a, FP8ATTN_STATUS_BAD_STRIDE, "args.k_descale.stride[0]");
  a = *valid, a.out.stride[2] = 0;
  expect_args("out broadcast over heads (stride 0)", &a, FP8ATTN_STATUS_BAD_STRIDE, "args.out has overlapping");
  a = *valid, a.out.stride[1] = 1;
  expect_args("out rows overlapping", &a, FP8ATTN_STATUS_BAD_STRIDE, "args.out has overlapping");
  a = *valid, a.lse.stride[2] = 0;
  expect_args("lse stride 0", &a, FP8ATTN_STATUS_BAD_STRIDE, "args.lse has overlapping");
}

/* Per-block descales (appended to the args): shape, value and combination checks. */
static void block_descale_cases(void) {
  static float k_blocks[2 * 2 * 8], q_blocks[2 * 4 * 8];
  fp8attn_attention_args a;
  fp8attn_error err = abi_fresh_error();
  int32_t block_m = 0, block_n = 0;
  int64_t q_shape[3], k_shape[3];
  size_t i;
  int32_t status = fp8attn_plan_get_tile(g_problem.plan, &block_m, &block_n, &err);
  abi_check(status == FP8ATTN_OK, "plan_get_tile", "%s", fp8attn_status_name(status));
  if (status != FP8ATTN_OK) return;
  q_shape[0] = k_shape[0] = g_problem.shape.batch;
  q_shape[1] = g_problem.shape.heads_q, k_shape[1] = g_problem.shape.heads_kv;
  q_shape[2] = (g_problem.shape.seqlen_q + block_m - 1) / block_m;
  k_shape[2] = (g_problem.shape.seqlen_k + block_n - 1) / block_n;
  if (q_shape[0] * q_shape[1] * q_shape[2] > 64 || k_shape[0] * k_shape[1] * k_shape[2] > 32) return;
  for (i = 0; i < sizeof k_blocks / sizeof k_blocks[0]; ++i) k_blocks[i] = 0.5f + 0.125f * (float)(i % 5);
  for (i = 0; i < sizeof q_blocks / sizeof q_blocks[0]; ++i) q_blocks[i] = 0.75f + 0.125f * (float)(i % 3);

  a = g_problem.args;
  a.q_block_descale = abi_tensor(q_blocks, FP8ATTN_DTYPE_F32, 3, q_shape);
  a.k_block_descale = abi_tensor(k_blocks, FP8ATTN_DTYPE_F32, 3, k_shape);
  abi_problem_poison(&g_problem);
  err = abi_fresh_error();
  status = fp8attn_attention_forward(g_problem.plan, &a, g_problem.workspace, g_problem.workspace_bytes, NULL, &err);
  printf("valid block descales (q %lld blocks, k %lld blocks): %s\n", (long long)q_shape[2], (long long)k_shape[2],
         fp8attn_status_name(status));
  abi_check(status == FP8ATTN_OK && !abi_problem_untouched(&g_problem), "valid block descales", "%s: %s",
            fp8attn_status_name(status), err.message);

  a.k_block_descale.shape[2] = k_shape[2] + 1;
  expect_args("k_block_descale block count", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.k_block_descale");
  a.k_block_descale.shape[2] = k_shape[2];
  a.q_block_descale.rank = 2;
  expect_args("q_block_descale rank 2", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.q_block_descale.rank");
  a.q_block_descale.rank = 3;
  a.q_block_descale.shape[1] = g_problem.shape.heads_kv;
  expect_args("q_block_descale heads_kv instead of heads_q", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.q_block_descale");
  a.q_block_descale.shape[1] = q_shape[1];
  {
    /* The last block of the last (batch, kv head), named by its index in the message. */
    const size_t last = (size_t)(k_shape[0] * k_shape[1] * k_shape[2] - 1);
    char needle[128];
    sprintf(needle, "args.k_block_descale[%lld, %lld, %lld]", (long long)(k_shape[0] - 1), (long long)(k_shape[1] - 1),
            (long long)(k_shape[2] - 1));
    k_blocks[last] = NAN;
    expect_args("k_block_descale NaN", &a, FP8ATTN_STATUS_BAD_SCALE, needle);
    k_blocks[last] = 0.0f;
    expect_args("k_block_descale 0", &a, FP8ATTN_STATUS_BAD_SCALE, needle);
    k_blocks[last] = 1.0f;
  }
  a.v_block_descale = a.k_block_descale;
  a.v_block_descale.stride[2] = -1;
  expect_args("v_block_descale negative stride", &a, FP8ATTN_STATUS_BAD_STRIDE, "args.v_block_descale.stride[2]");
  a.v_block_descale.stride[2] = 1;

  {
    /* Under sink isolation the K/V block descales follow the isolated blocks: the sink block, then
     * blocks of block_n from key sink_tokens. The grid aligned at key 0 has the wrong extent. */
    fp8attn_attention_desc desc = g_problem.desc;
    fp8attn_plan sink_plan = NULL, saved_plan = g_problem.plan;
    const int64_t sink = 4, isolated = 1 + (g_problem.shape.seqlen_k - sink + block_n - 1) / block_n;
    abi_check(isolated != k_shape[2], "sink grid", "the problem must make the two grids differ (%lld blocks)",
              (long long)isolated);
    desc.sink_tokens = (int32_t)sink;
    err = abi_fresh_error();
    status = fp8attn_plan_create(g_problem.ctx, &desc, &sink_plan, &err);
    abi_check(status == FP8ATTN_OK, "sink plan", "%s: %s", fp8attn_status_name(status), err.message);
    if (status != FP8ATTN_OK) return;
    g_problem.plan = sink_plan;
    expect_args("sink_tokens with k/v block descales of the aligned grid", &a, FP8ATTN_STATUS_BAD_SHAPE,
                "sink_tokens");
    if (k_shape[0] * k_shape[1] * isolated <= 32) { /* the isolated grid is accepted */
      a.k_block_descale.shape[2] = a.v_block_descale.shape[2] = isolated;
      a.k_block_descale.stride[1] = a.v_block_descale.stride[1] = isolated;
      a.k_block_descale.stride[0] = a.v_block_descale.stride[0] = k_shape[1] * isolated;
      /* The sink plan's workspace may differ from the fixture's: the CPU engine caches one decoded
       * K/V block per descale slot, and sink isolation adds a slot. */
      size_t sink_bytes = 0;
      const abi_shape* sh = &g_problem.shape;
      err = abi_fresh_error();
      status = fp8attn_plan_workspace_size(sink_plan, sh->batch, sh->packed ? g_problem.rows_q : sh->seqlen_q,
                                           sh->packed ? g_problem.rows_k : sh->seqlen_k, &sink_bytes, &err);
      abi_check(status == FP8ATTN_OK, "sink plan workspace", "%s: %s", fp8attn_status_name(status), err.message);
      void* sink_workspace = malloc(sink_bytes ? sink_bytes : 1);
      abi_problem_poison(&g_problem);
      err = abi_fresh_error();
      status = fp8attn_attention_forward(sink_plan, &a, sink_workspace, sink_bytes, NULL, &err);
      abi_check(status == FP8ATTN_OK && !abi_problem_untouched(&g_problem), "sink_tokens with the isolated grid",
                "%s: %s", fp8attn_status_name(status), err.message);
      free(sink_workspace);
    }
    g_problem.plan = saved_plan;
    fp8attn_plan_destroy(sink_plan);
  }
}

/* The overlap check must not refuse legal layouts: out stored as [batch, heads, seqlen, dim]
 * through permuted strides gives the same values as the contiguous call. */
static void permuted_out_layout(void) {
  static float contiguous[2 * 37 * 4 * 64];
  fp8attn_attention_args a = g_problem.args;
  fp8attn_error err = abi_fresh_error();
  const int64_t B = g_problem.shape.batch, S = g_problem.shape.seqlen_q, H = g_problem.shape.heads_q;
  const int64_t D = g_problem.shape.head_dim;
  int64_t b, s, h, d, mismatches = 0;
  int32_t status = fp8attn_attention_forward(g_problem.plan, &a, g_problem.workspace, g_problem.workspace_bytes, NULL,
                                             &err);
  abi_check(status == FP8ATTN_OK && g_problem.out_bytes <= sizeof contiguous, "permuted out", "contiguous call %s",
            fp8attn_status_name(status));
  if (status != FP8ATTN_OK || g_problem.out_bytes > sizeof contiguous) return;
  memcpy(contiguous, g_problem.out, g_problem.out_bytes);
  a.out.stride[3] = 1, a.out.stride[1] = D, a.out.stride[2] = S * D, a.out.stride[0] = H * S * D;
  abi_problem_poison(&g_problem);
  status = fp8attn_attention_forward(g_problem.plan, &a, g_problem.workspace, g_problem.workspace_bytes, NULL, &err);
  abi_check(status == FP8ATTN_OK, "permuted out", "returned %s: %s", fp8attn_status_name(status), err.message);
  for (b = 0; b < B; ++b)
    for (s = 0; s < S; ++s)
      for (h = 0; h < H; ++h)
        for (d = 0; d < D; ++d) {
          const float x = g_problem.out[((b * H + h) * S + s) * D + d];
          const float y = contiguous[((b * S + s) * H + h) * D + d];
          mismatches += memcmp(&x, &y, sizeof x) != 0;
        }
  printf("permuted out layout: %s, %lld mismatches against the contiguous call\n", fp8attn_status_name(status),
         (long long)mismatches);
  abi_check(mismatches == 0, "permuted out", "%lld elements differ", (long long)mismatches);
}

static void descale_cases(void) {
  const fp8attn_attention_args* valid = &g_problem.args;
  const size_t last = (size_t)(g_problem.shape.batch * g_problem.shape.heads_kv - 1);
  struct {
    const char* what;
    float* where;
    float value;
    const char* needle;
  } cases[6];
  size_t i;
  cases[0].what = "q_descale NaN", cases[0].where = &g_problem.q_descale[0], cases[0].value = NAN;
  cases[1].what = "k_descale +inf", cases[1].where = &g_problem.k_descale[last], cases[1].value = INFINITY;
  cases[2].what = "v_descale 0", cases[2].where = &g_problem.v_descale[1], cases[2].value = 0.0f;
  cases[3].what = "v_descale negative", cases[3].where = &g_problem.v_descale[last], cases[3].value = -1.0f;
  cases[4].what = "k_descale -0", cases[4].where = &g_problem.k_descale[0], cases[4].value = -0.0f;
  cases[5].what = "q_descale -NaN", cases[5].where = &g_problem.q_descale[last], cases[5].value = -NAN;
  cases[0].needle = "args.q_descale[0, 0]";
  cases[1].needle = "args.k_descale";
  cases[2].needle = "args.v_descale[0, 1]";
  cases[3].needle = "args.v_descale";
  cases[4].needle = "args.k_descale[0, 0]";
  cases[5].needle = "args.q_descale";
  for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const float saved = *cases[i].where;
    *cases[i].where = cases[i].value;
    expect_args(cases[i].what, valid, FP8ATTN_STATUS_BAD_SCALE, cases[i].needle);
    *cases[i].where = saved;
  }
}

static void telemetry_cases(void) {
  fp8attn_attention_desc desc = g_problem.desc;
  fp8attn_plan telemetry_plan = NULL, saved_plan = g_problem.plan;
  fp8attn_telemetry telemetry;
  fp8attn_attention_args a = g_problem.args;
  fp8attn_error err = abi_fresh_error();
  int32_t status;
  desc.telemetry = 1;
  status = fp8attn_plan_create(g_problem.ctx, &desc, &telemetry_plan, &err);
  abi_check(status == FP8ATTN_OK, "telemetry plan", "%s: %s", fp8attn_status_name(status), err.message);
  if (status != FP8ATTN_OK) return;
  memset(&telemetry, 0x5A, sizeof telemetry);
  telemetry.struct_size = offsetof(fp8attn_telemetry, max_abs_scaled_logit);
  a.telemetry = &telemetry;
  g_problem.plan = telemetry_plan;
  expect_args("telemetry.struct_size too small", &a, FP8ATTN_STATUS_BAD_STRUCT_SIZE, "telemetry");
  abi_check(telemetry.p_positive == 0x5A5A5A5A5A5A5A5Aull, "telemetry.struct_size too small",
            "telemetry written by a failing call");
  g_problem.plan = saved_plan;
  fp8attn_plan_destroy(telemetry_plan);
}

/* The fields appended for FP8 training outputs, from C. */
static void training_cases(void) {
  fp8attn_attention_args a = g_problem.args;
  fp8attn_scale_state state = NULL;
  fp8attn_scale_state_options options;
  fp8attn_error err = abi_fresh_error();
  const float scale = 2.0f;
  float amax_o = -3.0f;
  int32_t status;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.num_layers = 2;
  status = fp8attn_scale_state_create(g_problem.ctx, &options, &state, &err);
  abi_check(status == FP8ATTN_OK, "scale state", "%s: %s", fp8attn_status_name(status), err.message);
  if (status != FP8ATTN_OK) return;

  a.out_scale = &scale;
  expect_args("out_scale with F32 output", &a, FP8ATTN_STATUS_BAD_OPTION, "E4M3 output only");
  a = g_problem.args, a.scale_state_layer = 1;
  expect_args("scale_state_layer without a state", &a, FP8ATTN_STATUS_INVALID_ARGUMENT, "scale_state is NULL");
  a = g_problem.args, a.scale_state = state, a.amax_o = &amax_o;
  if (a.q_descale.data != NULL || a.k_descale.data != NULL || a.v_descale.data != NULL)
    expect_args("descale tensors with a state", &a, FP8ATTN_STATUS_BAD_OPTION, "descale");
  memset(&a.q_descale, 0, sizeof a.q_descale);
  memset(&a.k_descale, 0, sizeof a.k_descale);
  memset(&a.v_descale, 0, sizeof a.v_descale);
  a.scale_state_layer = 2;
  expect_args("scale_state_layer out of range", &a, FP8ATTN_STATUS_INVALID_ARGUMENT, "out of range");
  abi_check(amax_o == -3.0f, "scale_state_layer out of range", "amax_o written by a failing call");

  /* A caller of the previous layout: struct_size stops before out_scale, so the bytes after it
     (garbage here) are never read. */
  a = g_problem.args;
  a.struct_size = offsetof(fp8attn_attention_args, out_scale);
  a.out_scale = (const float*)(uintptr_t)0x10;
  a.amax_o = (float*)(uintptr_t)0x20;
  a.scale_state = (fp8attn_scale_state)(uintptr_t)0x30;
  a.scale_state_layer = 77;
  abi_problem_poison(&g_problem);
  status = fp8attn_attention_forward(g_problem.plan, &a, g_problem.workspace, g_problem.workspace_bytes, NULL, &err);
  abi_check(status == FP8ATTN_OK, "struct_size before out_scale", "%s: %s", fp8attn_status_name(status), err.message);
  fp8attn_scale_state_destroy(state);
}

int main(void) {
  uint64_t rng = abi_seed(20261122u);
  abi_shape shape;
  int32_t status;
  memset(&shape, 0, sizeof shape);
  shape.batch = 2, shape.seqlen_q = 37, shape.seqlen_k = 53;
  shape.heads_q = 4, shape.heads_kv = 2, shape.head_dim = 64;
  status = abi_problem_init(&g_problem, &shape, &rng);
  abi_check(status == FP8ATTN_OK, "fixture", "abi_problem_init returned %s", fp8attn_status_name(status));
  if (status == FP8ATTN_OK) {
    check_valid_call();
    args_and_struct_cases();
    dtype_and_device_cases();
    shape_and_stride_cases();
    descale_cases();
    telemetry_cases();
    permuted_out_layout();
    block_descale_cases();
    training_cases();
  }
  abi_problem_free(&g_problem);
  return abi_finish();
}
