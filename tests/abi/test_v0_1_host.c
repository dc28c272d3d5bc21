/* A host compiled against a copy of the 0.1 header (tests/abi/compat/v0_1), with that header's
 * struct sizes, run against the current library: context, plan, a forward call on the CPU backend
 * checked against the reference backend, quantize, a scale-state round trip and the error
 * struct. Built with only the copy on the include path (tests/abi/CMakeLists.txt), so once later
 * headers append fields this is the old host the library must keep serving.
 * Bound: CPU vs FP64 reference, random finite E4M3 inputs (|x| ≤ 3.75, descale 1): the P cast
 * keeps 3 mantissa bits, so |out − ref| ≤ (2^-4 + s_k·2^-18)·max|V|. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8attn/fp8attn.h"

static int failures = 0;
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      failures++;                                         \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);         \
      printf(__VA_ARGS__);                                \
      printf("\n");                                       \
    }                                                     \
  } while (0)

static uint64_t rng_state;
static uint64_t next_u64(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static unsigned char random_e4m3(void) {
  uint64_t r = next_u64();
  return (unsigned char)((((r >> 16) & 1u) << 7) | ((r % 9u) << 3) | ((r >> 8) & 7u));
}
static float e4m3_value(unsigned char b) {
  int e = (b >> 3) & 15, m = b & 7;
  float v = e == 0 ? ldexpf((float)m / 8.0f, -6) : ldexpf(1.0f + (float)m / 8.0f, e - 7);
  return (b & 0x80) ? -v : v;
}

static fp8attn_error fresh_error(void) {
  fp8attn_error e;
  memset(&e, 0, sizeof e);
  e.struct_size = sizeof e;
  return e;
}

static fp8attn_tensor tensor4(void* data, int32_t dtype, int64_t b, int64_t s, int64_t h, int64_t d) {
  fp8attn_tensor t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.data = data;
  t.dtype = dtype;
  t.device = FP8ATTN_DEVICE_HOST;
  t.rank = 4;
  t.shape[0] = b, t.shape[1] = s, t.shape[2] = h, t.shape[3] = d;
  t.stride[3] = 1, t.stride[2] = d, t.stride[1] = h * d, t.stride[0] = s * h * d;
  return t;
}

/* One forward call on `backend`; out is F32 [1, sq, 2, 64]. */
static int32_t forward(int32_t backend, unsigned char* q, unsigned char* k, unsigned char* v, float* out, int sq,
                       int sk) {
  fp8attn_context_options o;
  fp8attn_context ctx = NULL;
  fp8attn_attention_desc desc;
  fp8attn_plan plan = NULL;
  fp8attn_attention_args args;
  fp8attn_error err = fresh_error();
  size_t bytes = 0;
  void* ws;
  int32_t status;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.backend = backend;
  o.num_threads = 2;
  status = fp8attn_context_create(&o, &ctx, &err);
  if (status != FP8ATTN_OK) return status;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc; /* the 0.1 size: the library must fill no more */
  fp8attn_attention_desc_init(&desc);
  desc.head_dim = 64, desc.num_heads_q = 2, desc.num_heads_kv = 2, desc.causal = 1;
  desc.output_dtype = FP8ATTN_DTYPE_F32;
  status = fp8attn_plan_create(ctx, &desc, &plan, &err);
  if (status == FP8ATTN_OK) status = fp8attn_plan_workspace_size(plan, 1, sq, sk, &bytes, &err);
  ws = malloc(bytes ? bytes : 1);
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.q = tensor4(q, FP8ATTN_DTYPE_E4M3, 1, sq, 2, 64);
  args.k = tensor4(k, FP8ATTN_DTYPE_E4M3, 1, sk, 2, 64);
  args.v = tensor4(v, FP8ATTN_DTYPE_E4M3, 1, sk, 2, 64);
  args.out = tensor4(out, FP8ATTN_DTYPE_F32, 1, sq, 2, 64);
  if (status == FP8ATTN_OK) status = fp8attn_attention_forward(plan, &args, ws, bytes, NULL, &err);
  if (status != FP8ATTN_OK) printf("backend %d: %s: %s\n", (int)backend, fp8attn_status_name(status), err.message);
  free(ws);
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
  return status;
}

static void forward_against_reference(void) {
  enum { SQ = 70, SK = 150, N_Q = SQ * 2 * 64, N_K = SK * 2 * 64 };
  static unsigned char q[N_Q], k[N_K], v[N_K];
  static float cpu[N_Q], ref[N_Q];
  float vmax = 0, worst = 0, bound;
  int i;
  for (i = 0; i < N_Q; ++i) q[i] = random_e4m3(), cpu[i] = NAN, ref[i] = NAN;
  for (i = 0; i < N_K; ++i) k[i] = random_e4m3(), v[i] = random_e4m3();
  CHECK(forward(FP8ATTN_BACKEND_CPU, q, k, v, cpu, SQ, SK) == FP8ATTN_OK, "CPU forward");
  CHECK(forward(FP8ATTN_BACKEND_REFERENCE, q, k, v, ref, SQ, SK) == FP8ATTN_OK, "reference forward");
  for (i = 0; i < N_K; ++i) vmax = fmaxf(vmax, fabsf(e4m3_value(v[i])));
  for (i = 0; i < N_Q; ++i) {
    CHECK(isfinite(cpu[i]) && isfinite(ref[i]), "element %d unwritten", i);
    if (isfinite(cpu[i]) && isfinite(ref[i])) worst = fmaxf(worst, fabsf(cpu[i] - ref[i]));
  }
  bound = vmax * (1.0f / 16.0f + (float)SK / 262144.0f);
  printf("forward: max|cpu - reference| = %.3e, bound %.3e\n", (double)worst, (double)bound);
  CHECK(worst <= bound, "error %g over %g", (double)worst, (double)bound);
}

static void errors_and_scale_state(void) {
  fp8attn_context_options o;
  fp8attn_context ctx = NULL;
  fp8attn_attention_desc desc;
  fp8attn_plan plan = NULL;
  fp8attn_scale_state_options so;
  fp8attn_scale_state s = NULL, t = NULL;
  fp8attn_error err = fresh_error();
  unsigned char blob[1 << 16], again[1 << 16];
  size_t n = 0, m = 0;
  float a = 0, b = 0;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CPU;
  o.log_level = FP8ATTN_LOG_OFF;
  CHECK(fp8attn_context_create(&o, &ctx, &err) == FP8ATTN_OK, "context: %s", err.message);
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  fp8attn_attention_desc_init(&desc);
  desc.head_dim = 96;
  CHECK(fp8attn_plan_create(ctx, &desc, &plan, &err) == FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM &&
            err.status == FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM && strstr(err.message, "head_dim") && plan == NULL,
        "head_dim 96: %s", err.message);
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  so.num_layers = 1;
  CHECK(fp8attn_scale_state_create(ctx, &so, &s, &err) == FP8ATTN_OK, "state: %s", err.message);
  CHECK(fp8attn_scale_state_report_amax(s, 0, FP8ATTN_TENSOR_Q, 3.5f + (float)(next_u64() % 100), &err) == FP8ATTN_OK,
        "report");
  CHECK(fp8attn_scale_state_step(s, &err) == FP8ATTN_OK, "step");
  CHECK(fp8attn_scale_state_serialize(s, blob, sizeof blob, &n, &err) == FP8ATTN_OK, "serialize: %s", err.message);
  CHECK(fp8attn_scale_state_create(ctx, NULL, &t, &err) == FP8ATTN_OK, "state 2");
  CHECK(fp8attn_scale_state_deserialize(t, blob, n, &err) == FP8ATTN_OK, "deserialize: %s", err.message);
  CHECK(fp8attn_scale_state_serialize(t, again, sizeof again, &m, &err) == FP8ATTN_OK && m == n &&
            memcmp(blob, again, n) == 0, "the blob changed in a round trip");
  CHECK(fp8attn_scale_state_get_scale(t, 0, FP8ATTN_TENSOR_Q, &a, NULL, &err) == FP8ATTN_OK &&
            fp8attn_scale_state_get_scale(s, 0, FP8ATTN_TENSOR_Q, &b, NULL, &err) == FP8ATTN_OK && a == b && a != 1.0f,
        "scales %g and %g", (double)a, (double)b);
  fp8attn_scale_state_destroy(s);
  fp8attn_scale_state_destroy(t);
  fp8attn_context_destroy(ctx);
}

int main(void) {
  const char* seed = getenv("FP8ATTN_TEST_SEED");
  rng_state = seed ? strtoull(seed, NULL, 10) : 20261123u;
  printf("seed %llu; library %d, host header 0.1\n", (unsigned long long)rng_state, (int)fp8attn_get_version());
  CHECK(fp8attn_get_version() / 10000 == FP8ATTN_VERSION_MAJOR, "major version");
  forward_against_reference();
  errors_and_scale_state();
  printf("%d failure(s)\n", failures);
  return failures != 0;
}
