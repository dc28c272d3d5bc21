/* See abi_fixture.h. */
#include "abi_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_harness.h"

fp8attn_tensor abi_tensor(void* data, int32_t dtype, int32_t rank, const int64_t* shape) {
  fp8attn_tensor t;
  int64_t stride = 1;
  int i;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.next = NULL;
  t.data = data;
  t.dtype = dtype;
  t.device = FP8ATTN_DEVICE_HOST;
  t.rank = rank;
  for (i = rank - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.stride[i] = stride;
    stride *= shape[i];
  }
  return t;
}

static int32_t fail(const char* step, int32_t status, const fp8attn_error* err) {
  printf("fixture: %s failed: %s: %s\n", step, fp8attn_status_name(status), err->message);
  return status;
}

static void fill_e4m3(unsigned char* x, size_t n, uint64_t* rng) {
  size_t i;
  for (i = 0; i < n; ++i) x[i] = abi_random_e4m3(rng);
}

int32_t abi_problem_init(abi_problem* p, const abi_shape* shape, uint64_t* rng) {
  fp8attn_context_options options;
  fp8attn_error err = abi_fresh_error();
  fp8attn_attention_args* a = &p->args;
  const int64_t d = shape->head_dim;
  int64_t b;
  int32_t status;
  size_t i;

  memset(p, 0, sizeof *p);
  p->shape = *shape;
  if (shape->packed) {
    p->cu_seqlens_q[0] = p->cu_seqlens_k[0] = 0;
    for (b = 0; b < shape->batch; ++b) {
      p->cu_seqlens_q[b + 1] = p->cu_seqlens_q[b] + shape->seqlens_q[b];
      p->cu_seqlens_k[b + 1] = p->cu_seqlens_k[b] + shape->seqlens_k[b];
    }
    p->rows_q = p->cu_seqlens_q[shape->batch];
    p->rows_k = p->cu_seqlens_k[shape->batch];
  } else {
    p->rows_q = shape->batch * shape->seqlen_q;
    p->rows_k = shape->batch * shape->seqlen_k;
  }
  p->q_bytes = (size_t)(p->rows_q * shape->heads_q * d);
  p->k_bytes = (size_t)(p->rows_k * shape->heads_kv * d);
  p->out_bytes = p->q_bytes * sizeof(float);
  p->lse_bytes = (size_t)(p->rows_q * shape->heads_q) * sizeof(float);
  p->q = (unsigned char*)malloc(p->q_bytes);
  p->k = (unsigned char*)malloc(p->k_bytes);
  p->v = (unsigned char*)malloc(p->k_bytes);
  p->out = (float*)malloc(p->out_bytes);
  p->lse = (float*)malloc(p->lse_bytes);
  if (!p->q || !p->k || !p->v || !p->out || !p->lse) return FP8ATTN_STATUS_OUT_OF_MEMORY;
  fill_e4m3(p->q, p->q_bytes, rng);
  fill_e4m3(p->k, p->k_bytes, rng);
  fill_e4m3(p->v, p->k_bytes, rng);
  for (i = 0; i < (size_t)(shape->batch * shape->heads_kv); ++i) {
    p->q_descale[i] = 0.5f + (float)(abi_random_u64(rng) % 1024u) / 1024.0f;
    p->k_descale[i] = 0.5f + (float)(abi_random_u64(rng) % 1024u) / 1024.0f;
    p->v_descale[i] = 0.5f + (float)(abi_random_u64(rng) % 1024u) / 1024.0f;
  }

  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.backend = FP8ATTN_BACKEND_CPU;
  options.num_threads = 2;
  status = fp8attn_context_create(&options, &p->ctx, &err);
  if (status != FP8ATTN_OK) return fail("fp8attn_context_create", status, &err);

  memset(&p->desc, 0, sizeof p->desc);
  fp8attn_attention_desc_init(&p->desc);
  p->desc.output_dtype = FP8ATTN_DTYPE_F32;
  p->desc.head_dim = shape->head_dim;
  p->desc.num_heads_q = shape->heads_q;
  p->desc.num_heads_kv = shape->heads_kv;
  status = fp8attn_plan_create(p->ctx, &p->desc, &p->plan, &err);
  if (status != FP8ATTN_OK) return fail("fp8attn_plan_create", status, &err);

  status = fp8attn_plan_workspace_size(p->plan, shape->batch, shape->packed ? p->rows_q : shape->seqlen_q,
                                       shape->packed ? p->rows_k : shape->seqlen_k, &p->workspace_bytes, &err);
  if (status != FP8ATTN_OK) return fail("fp8attn_plan_workspace_size", status, &err);
  p->workspace = malloc(p->workspace_bytes ? p->workspace_bytes : 1);
  if (!p->workspace) return FP8ATTN_STATUS_OUT_OF_MEMORY;

  memset(a, 0, sizeof *a);
  a->struct_size = sizeof *a;
  if (shape->packed) {
    const int64_t q_shape[3] = {p->rows_q, shape->heads_q, d};
    const int64_t k_shape[3] = {p->rows_k, shape->heads_kv, d};
    const int64_t lse_shape[2] = {shape->heads_q, p->rows_q};
    const int64_t cu_shape[1] = {shape->batch + 1};
    a->q = abi_tensor(p->q, FP8ATTN_DTYPE_E4M3, 3, q_shape);
    a->k = abi_tensor(p->k, FP8ATTN_DTYPE_E4M3, 3, k_shape);
    a->v = abi_tensor(p->v, FP8ATTN_DTYPE_E4M3, 3, k_shape);
    a->out = abi_tensor(p->out, FP8ATTN_DTYPE_F32, 3, q_shape);
    a->lse = abi_tensor(p->lse, FP8ATTN_DTYPE_F32, 2, lse_shape);
    a->cu_seqlens_q = abi_tensor(p->cu_seqlens_q, FP8ATTN_DTYPE_I32, 1, cu_shape);
    a->cu_seqlens_k = abi_tensor(p->cu_seqlens_k, FP8ATTN_DTYPE_I32, 1, cu_shape);
  } else {
    const int64_t q_shape[4] = {shape->batch, shape->seqlen_q, shape->heads_q, d};
    const int64_t k_shape[4] = {shape->batch, shape->seqlen_k, shape->heads_kv, d};
    const int64_t lse_shape[3] = {shape->batch, shape->heads_q, shape->seqlen_q};
    a->q = abi_tensor(p->q, FP8ATTN_DTYPE_E4M3, 4, q_shape);
    a->k = abi_tensor(p->k, FP8ATTN_DTYPE_E4M3, 4, k_shape);
    a->v = abi_tensor(p->v, FP8ATTN_DTYPE_E4M3, 4, k_shape);
    a->out = abi_tensor(p->out, FP8ATTN_DTYPE_F32, 4, q_shape);
    a->lse = abi_tensor(p->lse, FP8ATTN_DTYPE_F32, 3, lse_shape);
  }
  {
    const int64_t descale_shape[2] = {shape->batch, shape->heads_kv};
    a->q_descale = abi_tensor(p->q_descale, FP8ATTN_DTYPE_F32, 2, descale_shape);
    a->k_descale = abi_tensor(p->k_descale, FP8ATTN_DTYPE_F32, 2, descale_shape);
    a->v_descale = abi_tensor(p->v_descale, FP8ATTN_DTYPE_F32, 2, descale_shape);
  }
  return FP8ATTN_OK;
}

void abi_problem_free(abi_problem* p) {
  fp8attn_plan_destroy(p->plan);
  fp8attn_context_destroy(p->ctx);
  free(p->q);
  free(p->k);
  free(p->v);
  free(p->out);
  free(p->lse);
  free(p->workspace);
  memset(p, 0, sizeof *p);
}

void abi_problem_poison(abi_problem* p) {
  abi_poison(p->out, p->out_bytes, ABI_POISON_BYTE);
  abi_poison(p->lse, p->lse_bytes, ABI_POISON_BYTE);
}

int abi_problem_untouched(const abi_problem* p) {
  return abi_is_poison(p->out, p->out_bytes, ABI_POISON_BYTE) && abi_is_poison(p->lse, p->lse_bytes, ABI_POISON_BYTE);
}
