/* Bad input for fp8attn_attention_forward on packed (rank-3, varlen) tensors: cu_seqlens that
 * do not start at 0, decrease or overrun, that are missing, mistyped or strided, and packed
 * shapes that disagree. Out and lse are poisoned and must stay bit-identical. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "abi_fixture.h"
#include "abi_harness.h"

static abi_problem g_problem;

static void expect_args(const char* what, const fp8attn_attention_args* a, int32_t want, const char* needle) {
  fp8attn_error err = abi_fresh_error();
  int32_t status;
  abi_problem_poison(&g_problem);
  status = fp8attn_attention_forward(g_problem.plan, a, g_problem.workspace, g_problem.workspace_bytes, NULL, &err);
  abi_expect_status(what, status, want, &err, needle);
  abi_check(abi_problem_untouched(&g_problem), what, "out or lse was written by a failing call");
}

/* Runs `a` with cu_seqlens_q replaced by `cu` (batch + 1 entries). */
static void expect_cu_q(const char* what, const int32_t* cu, int32_t want, const char* needle) {
  int32_t copy[ABI_MAX_BATCH + 1];
  fp8attn_attention_args a = g_problem.args;
  memcpy(copy, cu, sizeof(int32_t) * (size_t)(g_problem.shape.batch + 1));
  a.cu_seqlens_q.data = copy;
  expect_args(what, &a, want, needle);
}

static void check_valid_call(void) {
  fp8attn_error err = abi_fresh_error();
  const size_t n_out = g_problem.out_bytes / sizeof(float);
  size_t i, finite = 0;
  int32_t status;
  abi_problem_poison(&g_problem);
  status = fp8attn_attention_forward(g_problem.plan, &g_problem.args, g_problem.workspace, g_problem.workspace_bytes,
                                     NULL, &err);
  abi_check(status == FP8ATTN_OK, "valid packed call", "returned %s: %s", fp8attn_status_name(status), err.message);
  for (i = 0; i < n_out; ++i) finite += isfinite(g_problem.out[i]) ? 1 : 0;
  printf("valid packed call: %s, %zu of %zu outputs finite\n", fp8attn_status_name(status), finite, n_out);
  abi_check(finite == n_out, "valid packed call", "%zu of %zu outputs finite", finite, n_out);
}

static void cu_seqlens_cases(void) {
  const int32_t* good = g_problem.cu_seqlens_q;
  const fp8attn_attention_args* valid = &g_problem.args;
  fp8attn_attention_args a;
  int32_t bad[ABI_MAX_BATCH + 1];
  const size_t n = (size_t)(g_problem.shape.batch + 1);

  memcpy(bad, good, n * sizeof(int32_t));
  bad[1] = bad[2] + 1; /* [1] > [2] */
  expect_cu_q("cu_seqlens_q decreasing", bad, FP8ATTN_STATUS_BAD_SEQLENS, "non-decreasing");
  memcpy(bad, good, n * sizeof(int32_t));
  bad[0] = 1;
  expect_cu_q("cu_seqlens_q not starting at 0", bad, FP8ATTN_STATUS_BAD_SEQLENS, "args.cu_seqlens_q[0]");
  memcpy(bad, good, n * sizeof(int32_t));
  bad[n - 1] += 1;
  expect_cu_q("cu_seqlens_q past the packed total", bad, FP8ATTN_STATUS_BAD_SEQLENS, "ends at");
  memcpy(bad, good, n * sizeof(int32_t));
  bad[n - 1] -= 1;
  expect_cu_q("cu_seqlens_q short of the packed total", bad, FP8ATTN_STATUS_BAD_SEQLENS, "ends at");
  memcpy(bad, good, n * sizeof(int32_t));
  bad[1] = -5;
  expect_cu_q("cu_seqlens_q negative entry", bad, FP8ATTN_STATUS_BAD_SEQLENS, "non-decreasing");

  a = *valid, a.cu_seqlens_q.data = NULL;
  expect_args("cu_seqlens_q missing", &a, FP8ATTN_STATUS_NULL_POINTER, "args.cu_seqlens_q");
  a = *valid, a.cu_seqlens_k.data = NULL;
  expect_args("cu_seqlens_k missing", &a, FP8ATTN_STATUS_NULL_POINTER, "args.cu_seqlens_k");
  a = *valid, a.cu_seqlens_k.dtype = FP8ATTN_DTYPE_F32;
  expect_args("cu_seqlens_k F32", &a, FP8ATTN_STATUS_BAD_DTYPE, "args.cu_seqlens_k");
  a = *valid, a.cu_seqlens_q.rank = 2;
  expect_args("cu_seqlens_q rank 2", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.cu_seqlens_q.rank");
  a = *valid, a.cu_seqlens_q.shape[0] = 1;
  expect_args("cu_seqlens_q one entry", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.cu_seqlens_q");
  a = *valid, a.cu_seqlens_k.shape[0] = g_problem.shape.batch; /* a prefix: 0..[batch-1] */
  expect_args("cu_seqlens_k batch differs from q", &a, FP8ATTN_STATUS_BAD_SEQLENS, "args.cu_seqlens_k");
  a = *valid, a.cu_seqlens_q.stride[0] = 2;
  expect_args("cu_seqlens_q strided", &a, FP8ATTN_STATUS_BAD_STRIDE, "contiguous");
  a = *valid, a.cu_seqlens_q.stride[0] = -1;
  expect_args("cu_seqlens_q negative stride", &a, FP8ATTN_STATUS_BAD_STRIDE, "args.cu_seqlens_q.stride[0]");
}

static void packed_shape_cases(void) {
  const fp8attn_attention_args* valid = &g_problem.args;
  fp8attn_attention_args a;
  a = *valid, a.k.rank = 4, a.k.shape[3] = a.k.shape[2], a.k.shape[2] = a.k.shape[1], a.k.shape[1] = 1;
  expect_args("k rank 4 with packed q", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.k.rank");
  a = *valid, a.out.shape[0] = g_problem.rows_q - 1;
  expect_args("out rows differ from q", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.out");
  a = *valid, a.v.shape[0] = g_problem.rows_k + 1;
  expect_args("v rows differ from k", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.v");
  a = *valid, a.lse.rank = 3;
  expect_args("lse rank 3 for packed", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.lse.rank");
  a = *valid, a.lse.shape[1] = g_problem.rows_q + 1;
  expect_args("lse total_q mismatch", &a, FP8ATTN_STATUS_BAD_SHAPE, "total_q");
  a = *valid, a.q.shape[2] = 256;
  expect_args("packed q head_dim mismatch", &a, FP8ATTN_STATUS_BAD_SHAPE, "head_dim");
  a = *valid, a.q_descale.shape[0] = g_problem.shape.batch + 1;
  expect_args("q_descale batch differs from cu_seqlens", &a, FP8ATTN_STATUS_BAD_SHAPE, "args.q_descale");
  a = *valid, a.k.stride[0] = -a.k.stride[0];
  expect_args("packed k negative stride", &a, FP8ATTN_STATUS_BAD_STRIDE, "args.k.stride[0]");
}

int main(void) {
  uint64_t rng = abi_seed(20261123u);
  abi_shape shape;
  int32_t status;
  memset(&shape, 0, sizeof shape);
  shape.packed = 1;
  shape.batch = 4;
  shape.heads_q = 8, shape.heads_kv = 1, shape.head_dim = 128;
  shape.seqlens_q[0] = 1, shape.seqlens_q[1] = 17, shape.seqlens_q[2] = 0, shape.seqlens_q[3] = 40;
  shape.seqlens_k[0] = 5, shape.seqlens_k[1] = 33, shape.seqlens_k[2] = 3, shape.seqlens_k[3] = 40;
  status = abi_problem_init(&g_problem, &shape, &rng);
  abi_check(status == FP8ATTN_OK, "fixture", "abi_problem_init returned %s", fp8attn_status_name(status));
  if (status == FP8ATTN_OK) {
    check_valid_call();
    cu_seqlens_cases();
    packed_shape_cases();
  }
  abi_problem_free(&g_problem);
  return abi_finish();
}
