/* A valid forward problem on the CPU backend, built from the C ABI only: context, plan, random
 * E4M3 inputs, F32 outputs, descales and workspace. Bad-input cases copy `args` and change one
 * field, so each case differs from a call known to succeed in exactly that field. */
#ifndef FP8ATTN_TESTS_ABI_FIXTURE_H_
#define FP8ATTN_TESTS_ABI_FIXTURE_H_

#include <stddef.h>
#include <stdint.h>

#include "fp8attn/fp8attn.h"

/** Most sequences a packed fixture holds. */
#define ABI_MAX_BATCH 8

/** What to build. Packed layouts take their sequence lengths from seqlens_q/k. */
typedef struct abi_shape {
  int64_t batch;
  int64_t seqlen_q, seqlen_k; /* padded layouts */
  int32_t heads_q, heads_kv, head_dim;
  int packed;
  int32_t seqlens_q[ABI_MAX_BATCH], seqlens_k[ABI_MAX_BATCH]; /* packed layouts */
} abi_shape;

typedef struct abi_problem {
  abi_shape shape;
  int64_t rows_q, rows_k; /* batch·seqlen (padded) or total (packed) */
  int32_t cu_seqlens_q[ABI_MAX_BATCH + 1], cu_seqlens_k[ABI_MAX_BATCH + 1];
  unsigned char *q, *k, *v;
  float *out, *lse;
  float q_descale[ABI_MAX_BATCH * 64], k_descale[ABI_MAX_BATCH * 64], v_descale[ABI_MAX_BATCH * 64];
  size_t q_bytes, k_bytes, out_bytes, lse_bytes;
  fp8attn_context ctx;
  fp8attn_attention_desc desc;
  fp8attn_plan plan;
  void* workspace;
  size_t workspace_bytes;
  fp8attn_attention_args args; /* valid arguments for plan */
} abi_problem;

/** A contiguous host tensor of `rank` dims. */
fp8attn_tensor abi_tensor(void* data, int32_t dtype, int32_t rank, const int64_t* shape);

/** Builds everything; returns FP8ATTN_OK or the first failing status (printed). */
int32_t abi_problem_init(abi_problem* p, const abi_shape* shape, uint64_t* rng);

/** Frees what abi_problem_init made. */
void abi_problem_free(abi_problem* p);

/** Writes ABI_POISON_BYTE over out and lse. */
void abi_problem_poison(abi_problem* p);

/** 1 when out and lse still hold only ABI_POISON_BYTE. */
int abi_problem_untouched(const abi_problem* p);

#endif /* FP8ATTN_TESTS_ABI_FIXTURE_H_ */
