/* Plain C99 use of the scale-state and spectral entry points: NULL handles and pointers,
 * struct_size rules, error detail, and outputs untouched on failure. Exits nonzero on the first
 * unexpected status and prints what it expected. */
#include <stdio.h>
#include <string.h>

#include "fp8attn/fp8attn.h"

static int failures = 0;

static void expect(int32_t got, int32_t want, const char* what) {
  if (got != want) {
    printf("FAIL %s: got %d (%s), expected %d (%s)\n", what, got, fp8attn_status_name(got), want, fp8attn_status_name(want));
    ++failures;
  } else {
    printf("ok   %s: %s\n", what, fp8attn_status_name(got));
  }
}

int main(void) {
  fp8attn_error err;
  fp8attn_context ctx = NULL;
  fp8attn_context_options co;
  fp8attn_scale_state_options so;
  fp8attn_scale_state state = NULL;
  fp8attn_power_iteration_options po;
  fp8attn_tensor wq, wk;
  float weights[4 * 8];
  float sigma[2] = {-5.0f, -5.0f};
  float scale = -5.0f;
  size_t bytes = 12345;
  int i;

  memset(&err, 0, sizeof err);
  err.struct_size = sizeof err;
  memset(&co, 0, sizeof co);
  co.struct_size = sizeof co;
  co.backend = FP8ATTN_BACKEND_CPU;
  expect(fp8attn_context_create(&co, &ctx, &err), FP8ATTN_OK, "context_create");

  /* Scale state. */
  expect(fp8attn_scale_state_create(NULL, NULL, &state, &err), FP8ATTN_STATUS_BAD_HANDLE, "create without ctx");
  expect(fp8attn_scale_state_create(ctx, NULL, NULL, &err), FP8ATTN_STATUS_NULL_POINTER, "create without out");
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  so.next = &so;
  expect(fp8attn_scale_state_create(ctx, &so, &state, &err), FP8ATTN_STATUS_BAD_EXTENSION, "create with next");
  so.next = NULL;
  so.struct_size = sizeof(size_t);
  expect(fp8attn_scale_state_create(ctx, &so, &state, &err), FP8ATTN_STATUS_BAD_STRUCT_SIZE, "create with old size");
  so.struct_size = sizeof so;
  so.num_layers = -1;
  expect(fp8attn_scale_state_create(ctx, &so, &state, &err), FP8ATTN_STATUS_BAD_OPTION, "create with -1 layers");
  if (state != NULL) {
    printf("FAIL state written on failure\n");
    ++failures;
  }
  so.num_layers = 2;
  expect(fp8attn_scale_state_create(ctx, &so, &state, &err), FP8ATTN_OK, "create");
  expect(fp8attn_scale_state_get_scale(NULL, 0, 0, &scale, NULL, &err), FP8ATTN_STATUS_BAD_HANDLE, "get_scale NULL");
  expect(fp8attn_scale_state_get_scale(state, 2, 0, &scale, NULL, &err), FP8ATTN_STATUS_INVALID_ARGUMENT,
         "get_scale layer 2");
  if (scale != -5.0f) {
    printf("FAIL scale written on failure\n");
    ++failures;
  }
  expect(fp8attn_scale_state_step(NULL, &err), FP8ATTN_STATUS_BAD_HANDLE, "step NULL");
  expect(fp8attn_scale_state_serialize(state, NULL, 0, NULL, &err), FP8ATTN_STATUS_NULL_POINTER, "serialize no size");
  expect(fp8attn_scale_state_serialize(state, NULL, 0, &bytes, &err), FP8ATTN_OK, "serialize size query");
  expect(fp8attn_scale_state_deserialize(state, NULL, 10, &err), FP8ATTN_STATUS_NULL_POINTER, "deserialize NULL");
  expect(fp8attn_scale_state_deserialize(state, "F8SS", 4, &err), FP8ATTN_STATUS_TRUNCATED_BLOB, "deserialize 4 bytes");
  printf("     message: %s\n", err.message);
  expect(fp8attn_scale_state_set_qk_sigma(state, 0, sigma, 2, 64, 512, &err), FP8ATTN_STATUS_BAD_SCALE,
         "set_qk_sigma negative");
  expect(fp8attn_scale_state_set_qk_weights(state, 0, NULL, NULL, 1, 1, 4, &err), FP8ATTN_STATUS_NULL_POINTER,
         "set_qk_weights NULL");
  fp8attn_scale_state_destroy(state);
  fp8attn_scale_state_destroy(NULL);

  /* Spectral norms. */
  for (i = 0; i < 4 * 8; ++i) weights[i] = (float)((i * 7) % 11) - 5.0f;
  memset(&wq, 0, sizeof wq);
  wq.struct_size = sizeof wq;
  wq.data = weights;
  wq.dtype = FP8ATTN_DTYPE_F32;
  wq.device = FP8ATTN_DEVICE_HOST;
  wq.rank = 2;
  wq.shape[0] = 4;
  wq.shape[1] = 8;
  wq.stride[0] = 8;
  wq.stride[1] = 1;
  wk = wq;
  expect(fp8attn_qk_spectral_norms_workspace_size(NULL, 2, 1, 2, 8, &bytes, &err), FP8ATTN_STATUS_BAD_HANDLE,
         "workspace_size NULL ctx");
  expect(fp8attn_qk_spectral_norms_workspace_size(ctx, 2, 0, 2, 8, &bytes, &err), FP8ATTN_STATUS_BAD_HEADS,
         "workspace_size 0 kv heads");
  expect(fp8attn_qk_spectral_norms_workspace_size(ctx, 2, 1, 2, 8, &bytes, &err), FP8ATTN_OK, "workspace_size");
  {
    unsigned char workspace[1 << 16];
    memset(&po, 0, sizeof po);
    po.struct_size = sizeof po - 1;
    expect(fp8attn_qk_spectral_norms(ctx, &wq, &wk, 2, 1, 2, &po, sigma, workspace, sizeof workspace, NULL, &err),
           FP8ATTN_STATUS_BAD_STRUCT_SIZE, "spectral with a truncated options struct");
    expect(fp8attn_qk_spectral_norms(ctx, &wq, &wk, 2, 1, 2, NULL, NULL, workspace, sizeof workspace, NULL, &err),
           FP8ATTN_STATUS_NULL_POINTER, "spectral without sigma_out");
    if (sigma[0] != -5.0f || sigma[1] != -5.0f) {
      printf("FAIL sigma written on failure\n");
      ++failures;
    }
    /* wk has 4 rows but 1 KV head of d_h 2 needs 2: a shape error. */
    expect(fp8attn_qk_spectral_norms(ctx, &wq, &wk, 2, 1, 2, NULL, sigma, workspace, sizeof workspace, NULL, &err),
           FP8ATTN_STATUS_BAD_SHAPE, "spectral with a mismatched wk");
    wk.shape[0] = 2;
    expect(fp8attn_qk_spectral_norms(ctx, &wq, &wk, 2, 1, 2, NULL, sigma, workspace, sizeof workspace, NULL, &err),
           FP8ATTN_OK, "spectral");
    printf("     sigma = %g, %g\n", sigma[0], sigma[1]);
    if (!(sigma[0] > 0.0f && sigma[1] > 0.0f)) {
      printf("FAIL sigma not positive\n");
      ++failures;
    }
  }
  expect(fp8attn_logit_bound(sigma, 2, 2, 1.0f, 1.0f, NULL, &scale, &err), FP8ATTN_OK, "logit_bound");
  fp8attn_context_destroy(ctx);
  printf("%d failure(s)\n", failures);
  return failures == 0 ? 0 : 1;
}
