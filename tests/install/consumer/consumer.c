/* A C99 host built against an installed fp8attn: creates a CPU context, plans a small causal
 * GQA attention, queries the workspace, runs one E4M3 forward on random data and checks that
 * every output was written (poisoned beforehand) and is finite and within the range of V. */
#include <fp8attn/fp8attn.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBatch = 1, kSeqQ = 40, kSeqK = 70, kHeadsQ = 2, kHeadsKv = 1, kHeadDim = 64 };

static uint64_t g_state;

/* A random finite E4M3 byte with |x| < 4 (exponent field 0..8). */
static unsigned char random_e4m3(void) {
  uint64_t r;
  g_state = g_state * 6364136223846793005ull + 1442695040888963407ull;
  r = g_state >> 33;
  return (unsigned char)(((r & 1u) << 7) | (((r >> 1) % 9u) << 3) | ((r >> 5) & 7u));
}

static float e4m3_value(unsigned char b) {
  const int exponent = (b >> 3) & 15, mantissa = b & 7;
  const float magnitude = exponent == 0 ? ldexpf((float)mantissa, -9) : ldexpf(1.0f + mantissa / 8.0f, exponent - 7);
  return (b & 0x80) ? -magnitude : magnitude;
}

static int fail(const char* what, int32_t status, const fp8attn_error* err) {
  printf("consumer: %s failed: %s: %s\n", what, fp8attn_status_name(status), err->message);
  return 1;
}

int main(void) {
  static unsigned char q[kBatch * kSeqQ * kHeadsQ * kHeadDim], k[kBatch * kSeqK * kHeadsKv * kHeadDim],
      v[kBatch * kSeqK * kHeadsKv * kHeadDim];
  static float out[kBatch * kSeqQ * kHeadsQ * kHeadDim], lse[kBatch * kHeadsQ * kSeqQ];
  const int64_t q_shape[4] = {kBatch, kSeqQ, kHeadsQ, kHeadDim}, kv_shape[4] = {kBatch, kSeqK, kHeadsKv, kHeadDim};
  const int64_t lse_shape[3] = {kBatch, kHeadsQ, kSeqQ};
  const int32_t version = fp8attn_get_version();
  fp8attn_error err;
  fp8attn_context_options options;
  fp8attn_context ctx = NULL;
  fp8attn_attention_desc desc;
  fp8attn_plan plan = NULL;
  fp8attn_attention_args args;
  fp8attn_tensor* tensors[5];
  const int64_t* shapes[5];
  void* data[5];
  int32_t dtypes[5], ranks[5], backend = -1, status;
  size_t workspace_bytes = 0, i, bad = 0;
  void* workspace;
  float v_max = 0.0f, out_max = 0.0f;
  int t, d;

  g_state = 20261122u;
  printf("consumer: fp8attn %d.%d.%d (library %d, header %d.%d.%d), seed %llu\n", (int)(version / 10000),
         (int)(version / 100 % 100), (int)(version % 100), (int)version, FP8ATTN_VERSION_MAJOR, FP8ATTN_VERSION_MINOR,
         FP8ATTN_VERSION_PATCH, (unsigned long long)g_state);
  if (version / 10000 != FP8ATTN_VERSION_MAJOR) return printf("consumer: major version mismatch\n"), 1;

  memset(&err, 0, sizeof err);
  err.struct_size = sizeof err;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.backend = FP8ATTN_BACKEND_CPU;
  options.num_threads = 1;
  status = fp8attn_context_create(&options, &ctx, &err);
  if (status != FP8ATTN_OK) return fail("fp8attn_context_create", status, &err);
  status = fp8attn_context_get_backend(ctx, &backend, &err);
  if (status != FP8ATTN_OK || backend != FP8ATTN_BACKEND_CPU) return fail("fp8attn_context_get_backend", status, &err);

  memset(&desc, 0, sizeof desc);
  fp8attn_attention_desc_init(&desc);
  desc.output_dtype = FP8ATTN_DTYPE_F32;
  desc.head_dim = kHeadDim;
  desc.num_heads_q = kHeadsQ;
  desc.num_heads_kv = kHeadsKv;
  desc.causal = 1;
  status = fp8attn_plan_create(ctx, &desc, &plan, &err);
  if (status != FP8ATTN_OK) return fail("fp8attn_plan_create", status, &err);
  status = fp8attn_plan_workspace_size(plan, kBatch, kSeqQ, kSeqK, &workspace_bytes, &err);
  if (status != FP8ATTN_OK) return fail("fp8attn_plan_workspace_size", status, &err);
  workspace = malloc(workspace_bytes ? workspace_bytes : 1);
  printf("consumer: workspace %zu bytes\n", workspace_bytes);

  for (i = 0; i < sizeof q; ++i) q[i] = random_e4m3();
  for (i = 0; i < sizeof k; ++i) k[i] = random_e4m3();
  for (i = 0; i < sizeof v; ++i) {
    v[i] = random_e4m3();
    v_max = fmaxf(v_max, fabsf(e4m3_value(v[i])));
  }
  memset(out, 0xFF, sizeof out); /* NaN in every element */
  memset(lse, 0xFF, sizeof lse);

  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  tensors[0] = &args.q, tensors[1] = &args.k, tensors[2] = &args.v, tensors[3] = &args.out, tensors[4] = &args.lse;
  data[0] = q, data[1] = k, data[2] = v, data[3] = out, data[4] = lse;
  shapes[0] = q_shape, shapes[1] = kv_shape, shapes[2] = kv_shape, shapes[3] = q_shape, shapes[4] = lse_shape;
  dtypes[0] = dtypes[1] = dtypes[2] = FP8ATTN_DTYPE_E4M3, dtypes[3] = dtypes[4] = FP8ATTN_DTYPE_F32;
  ranks[0] = ranks[1] = ranks[2] = ranks[3] = 4, ranks[4] = 3;
  for (t = 0; t < 5; ++t) {
    int64_t stride = 1;
    tensors[t]->struct_size = sizeof(fp8attn_tensor);
    tensors[t]->data = data[t];
    tensors[t]->dtype = dtypes[t];
    tensors[t]->device = FP8ATTN_DEVICE_HOST;
    tensors[t]->rank = ranks[t];
    for (d = ranks[t] - 1; d >= 0; --d) {
      tensors[t]->shape[d] = shapes[t][d];
      tensors[t]->stride[d] = stride;
      stride *= shapes[t][d];
    }
  }
  status = fp8attn_attention_forward(plan, &args, workspace, workspace_bytes, NULL, &err);
  if (status != FP8ATTN_OK) return fail("fp8attn_attention_forward", status, &err);

  /* Each output row is a weighted mean of V rows; the E4M3 rounding of P moves the weights by at
   * most 2^-4 relative, so |out| stays within max|V|·(1 + 2^-3). */
  for (i = 0; i < sizeof out / sizeof out[0]; ++i) {
    if (!isfinite(out[i]) || fabsf(out[i]) > v_max * 1.125f) ++bad;
    if (isfinite(out[i])) out_max = fmaxf(out_max, fabsf(out[i]));
  }
  for (i = 0; i < sizeof lse / sizeof lse[0]; ++i)
    if (!isfinite(lse[i])) ++bad;
  printf("consumer: forward %s; max|out| %.4f, max|V| %.4f; %zu bad of %zu outputs\n", fp8attn_status_name(status),
         out_max, v_max, bad, sizeof out / sizeof out[0] + sizeof lse / sizeof lse[0]);
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
  free(workspace);
  return bad == 0 ? 0 : 1;
}
