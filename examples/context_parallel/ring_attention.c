/* ring_attention.c: causal attention over a sequence split across MPI ranks (context parallelism).
 *
 * The sequence of S tokens is cut into 2·W chunks for W ranks; rank r holds chunks r and
 * 2W−1−r of Q, K and V (causal load balancing: every rank gets one early and one late chunk, so
 * every rank has the same number of visible (query, key) pairs). W ring steps follow: at step s
 * rank r holds the K/V chunks of rank (r − s) mod W, runs fp8attn's forward (CPU backend) of its
 * two Q chunks against them, and merges the partial results into its running output with
 * fp8attn_attention_combine. The next K/V block travels around the ring (MPI_Isend/MPI_Irecv)
 * while the current one is computed.
 *
 * Q chunk i against K chunk j: j < i sees every key (a non-causal plan), j = i is the diagonal
 * block (a causal plan; equal lengths, so its alignment is the global one), j > i sees nothing
 * and is left out: its partial LSE is −inf, which combine reads as an empty part.
 *
 * Rank 0 gathers the outputs and checks them against the FP64 oracle (the REFERENCE backend) over
 * the whole sequence, with the bound of a one-process run: max|ring − oracle| ≤ 2·max|one-process
 * CPU forward − oracle| + 1e-3, and the LSE within 1e-4 relative. Inputs: Q, K, V ~ N(0,1)
 * rounded to BF16, fresh each run (the seed is printed; pass one as argv[2] to replay).
 * Usage: mpirun -np W ring_attention [S] [seed]; S must be a multiple of 2·W. Exit status 0 on
 * success. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fp8attn/fp8attn.h>

enum { H = 2, D = 64 };

static int fail(const char* what, int32_t status, const fp8attn_error* err) {
  fprintf(stderr, "%s: %s: %s\n", what, fp8attn_status_name(status), err->message);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}
#define CHECK(call, what)                                   \
  do {                                                      \
    int32_t status_ = (call);                               \
    if (status_ != FP8ATTN_OK) return fail(what, status_, &err); \
  } while (0)

static fp8attn_tensor view(void* data, int32_t dtype, int rank, const int64_t* shape, const int64_t* stride) {
  fp8attn_tensor t;
  int i;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.data = data;
  t.dtype = dtype;
  t.device = FP8ATTN_DEVICE_HOST;
  t.rank = rank;
  for (i = 0; i < rank; ++i) t.shape[i] = shape[i], t.stride[i] = stride[i];
  return t;
}

/* [1, rows, H, D] BF16 or F32 rows starting at `data`. */
static fp8attn_tensor rows4(void* data, int32_t dtype, int64_t rows) {
  const int64_t shape[4] = {1, rows, H, D}, stride[4] = {rows * H * D, H * D, D, 1};
  return view(data, dtype, 4, shape, stride);
}

static uint16_t to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* splitmix64 and Box–Muller: the same stream on every rank. */
static uint64_t next_u64(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double normal(uint64_t* s) {
  const double u = 1.0 - (double)(next_u64(s) >> 11) / 9007199254740992.0;
  const double v = (double)(next_u64(s) >> 11) / 9007199254740992.0;
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static fp8attn_plan make_plan(fp8attn_context ctx, int causal, fp8attn_error* err) {
  fp8attn_attention_desc desc;
  fp8attn_plan plan = NULL;
  int32_t status;
  memset(&desc, 0, sizeof desc); /* struct_size 0: desc_init fills the whole struct */
  fp8attn_attention_desc_init(&desc);
  desc.input_dtype = FP8ATTN_DTYPE_BF16;
  desc.output_dtype = FP8ATTN_DTYPE_F32;
  desc.head_dim = D;
  desc.num_heads_q = desc.num_heads_kv = H;
  desc.causal = (uint32_t)causal;
  desc.accumulator_model = FP8ATTN_ACCUMULATOR_FP32;
  status = fp8attn_plan_create(ctx, &desc, &plan, err);
  if (status != FP8ATTN_OK) fail("fp8attn_plan_create", status, err);
  return plan;
}

/* One forward of C query rows against C key rows, into slot `part` of the partial buffers at row
   offset `q_off` (partial_out [3, 2C, H, D], partial_lse [3, 2C, H]). */
static int forward_into(fp8attn_plan plan, uint16_t* q, uint16_t* k, uint16_t* v, int64_t c, float* po, float* pl,
                        int part, int64_t q_off, void* ws, size_t ws_bytes) {
  fp8attn_attention_args a;
  fp8attn_error err;
  const int64_t lse_shape[3] = {1, H, c}, lse_stride[3] = {2 * c * H, 1, H};
  memset(&err, 0, sizeof err);
  err.struct_size = sizeof err;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.q = rows4(q, FP8ATTN_DTYPE_BF16, c);
  a.k = rows4(k, FP8ATTN_DTYPE_BF16, c);
  a.v = rows4(v, FP8ATTN_DTYPE_BF16, c);
  a.out = rows4(po + ((int64_t)part * 2 * c + q_off) * H * D, FP8ATTN_DTYPE_F32, c);
  /* The forward's LSE is [batch, heads, seqlen]; here it lands in combine's [tokens, heads]. */
  a.lse = view(pl + ((int64_t)part * 2 * c + q_off) * H, FP8ATTN_DTYPE_F32, 3, lse_shape, lse_stride);
  CHECK(fp8attn_attention_forward(plan, &a, ws, ws_bytes, NULL, &err), "fp8attn_attention_forward");
  return 0;
}

int main(int argc, char** argv) {
  int rank, world, step, i;
  fp8attn_error err;
  fp8attn_context ctx = NULL;
  fp8attn_context_options opts;
  fp8attn_plan full, diag;
  int64_t s_len = 512, c, n_local, chunk[2], e;
  uint64_t seed = 0, state;
  uint16_t *q_all, *k_all, *v_all, *q, *kv[2];
  float *po, *pl, *merged, *merged_lse;
  size_t ws_bytes = 0, ws2 = 0;
  void* ws;
  int failed = 0;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  memset(&err, 0, sizeof err);
  err.struct_size = sizeof err;
  if (argc > 1) s_len = atoll(argv[1]);
  if (rank == 0) seed = argc > 2 ? strtoull(argv[2], NULL, 10) : (uint64_t)time(NULL) * 2654435761ull;
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (s_len < 2 * world || s_len % (2 * world) != 0) {
    if (rank == 0) fprintf(stderr, "S = %lld must be a positive multiple of 2·W = %d\n", (long long)s_len, 2 * world);
    MPI_Finalize();
    return 2;
  }
  c = s_len / (2 * world);
  n_local = 2 * c;
  chunk[0] = rank, chunk[1] = 2 * world - 1 - rank;

  /* Every rank draws the same sequence and keeps its two chunks. */
  q_all = malloc(sizeof(uint16_t) * s_len * H * D);
  k_all = malloc(sizeof(uint16_t) * s_len * H * D);
  v_all = malloc(sizeof(uint16_t) * s_len * H * D);
  state = seed;
  for (e = 0; e < s_len * H * D; ++e) q_all[e] = to_bf16((float)normal(&state));
  for (e = 0; e < s_len * H * D; ++e) k_all[e] = to_bf16((float)normal(&state));
  for (e = 0; e < s_len * H * D; ++e) v_all[e] = to_bf16((float)normal(&state));
  q = malloc(sizeof(uint16_t) * n_local * H * D);
  kv[0] = malloc(sizeof(uint16_t) * 2 * n_local * H * D); /* K rows then V rows */
  kv[1] = malloc(sizeof(uint16_t) * 2 * n_local * H * D);
  for (i = 0; i < 2; ++i) {
    const size_t bytes = sizeof(uint16_t) * c * H * D, at = (size_t)(chunk[i] * c * H * D);
    memcpy(q + i * c * H * D, q_all + at, bytes);
    memcpy(kv[0] + i * c * H * D, k_all + at, bytes);
    memcpy(kv[0] + (n_local + i * c) * H * D, v_all + at, bytes);
  }

  memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.backend = FP8ATTN_BACKEND_CPU;
  opts.num_threads = 1; /* one core per rank: the ranks share the machine */
  CHECK(fp8attn_context_create(&opts, &ctx, &err), "fp8attn_context_create");
  full = make_plan(ctx, 0, &err);
  diag = make_plan(ctx, 1, &err);
  CHECK(fp8attn_plan_workspace_size(full, 1, c, c, &ws_bytes, &err), "fp8attn_plan_workspace_size");
  CHECK(fp8attn_plan_workspace_size(diag, 1, c, c, &ws2, &err), "fp8attn_plan_workspace_size");
  if (ws2 > ws_bytes) ws_bytes = ws2;
  ws = malloc(ws_bytes + 1);

  /* Slot 0: the running result (empty at first); slots 1, 2: this step's two K/V chunks. */
  po = malloc(sizeof(float) * 3 * n_local * H * D);
  pl = malloc(sizeof(float) * 3 * n_local * H);
  merged = malloc(sizeof(float) * n_local * H * D);
  merged_lse = malloc(sizeof(float) * n_local * H);
  for (e = 0; e < n_local * H; ++e) pl[e] = -INFINITY;

  for (step = 0; step < world; ++step) {
    const int src = (rank - step + world) % world;
    const int64_t kv_chunk[2] = {src, 2 * world - 1 - src};
    uint16_t* cur = kv[step % 2];
    MPI_Request req[2];
    int qi, ki;
    fp8attn_combine_args ca;
    /* Send the block on around the ring while this one is computed. */
    if (step + 1 < world) {
      const int count = (int)(2 * n_local * H * D);
      MPI_Irecv(kv[(step + 1) % 2], count, MPI_UINT16_T, (rank - 1 + world) % world, step, MPI_COMM_WORLD, &req[0]);
      MPI_Isend(cur, count, MPI_UINT16_T, (rank + 1) % world, step, MPI_COMM_WORLD, &req[1]);
    }
    for (ki = 0; ki < 2; ++ki)
      for (qi = 0; qi < 2; ++qi) {
        float* lse_rows = pl + ((int64_t)(1 + ki) * n_local + qi * c) * H;
        if (kv_chunk[ki] > chunk[qi]) { /* keys after every query of the chunk: an empty part */
          for (e = 0; e < c * H; ++e) lse_rows[e] = -INFINITY;
          continue;
        }
        if (forward_into(kv_chunk[ki] == chunk[qi] ? diag : full, q + qi * c * H * D, cur + ki * c * H * D,
                         cur + (n_local + ki * c) * H * D, c, po, pl, 1 + ki, qi * c, ws, ws_bytes))
          return 1;
      }
    /* Merge the running result with this step's two partials: three parts, any of them empty. */
    {
      const int64_t po_shape[4] = {3, n_local, H, D}, po_stride[4] = {n_local * H * D, H * D, D, 1};
      const int64_t pl_shape[3] = {3, n_local, H}, pl_stride[3] = {n_local * H, H, 1};
      const int64_t o_shape[3] = {n_local, H, D}, o_stride[3] = {H * D, D, 1};
      const int64_t l_shape[2] = {n_local, H}, l_stride[2] = {H, 1};
      size_t combine_ws = 0;
      memset(&ca, 0, sizeof ca);
      ca.struct_size = sizeof ca;
      ca.partial_out = view(po, FP8ATTN_DTYPE_F32, 4, po_shape, po_stride);
      ca.partial_lse = view(pl, FP8ATTN_DTYPE_F32, 3, pl_shape, pl_stride);
      ca.out = view(merged, FP8ATTN_DTYPE_F32, 3, o_shape, o_stride);
      ca.lse = view(merged_lse, FP8ATTN_DTYPE_F32, 2, l_shape, l_stride);
      CHECK(fp8attn_attention_combine_workspace_size(ctx, &ca, &combine_ws, &err),
            "fp8attn_attention_combine_workspace_size");
      if (combine_ws > ws_bytes) {
        fprintf(stderr, "combine asks for %zu workspace bytes\n", combine_ws);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      CHECK(fp8attn_attention_combine(ctx, &ca, ws, ws_bytes, NULL, &err), "fp8attn_attention_combine");
      memcpy(po, merged, sizeof(float) * n_local * H * D);
      memcpy(pl, merged_lse, sizeof(float) * n_local * H);
    }
    if (step + 1 < world) MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  }

  /* Rank 0 gathers and checks against the oracle and a one-process run over the whole sequence. */
  {
    float *all_out = NULL, *all_lse = NULL;
    if (rank == 0) {
      all_out = malloc(sizeof(float) * s_len * H * D);
      all_lse = malloc(sizeof(float) * s_len * H);
    }
    MPI_Gather(merged, (int)(n_local * H * D), MPI_FLOAT, all_out, (int)(n_local * H * D), MPI_FLOAT, 0,
               MPI_COMM_WORLD);
    MPI_Gather(merged_lse, (int)(n_local * H), MPI_FLOAT, all_lse, (int)(n_local * H), MPI_FLOAT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      float *single = malloc(sizeof(float) * s_len * H * D), *oracle = malloc(sizeof(float) * s_len * H * D);
      float* oracle_lse = malloc(sizeof(float) * s_len * H);
      fp8attn_context ref_ctx = NULL;
      fp8attn_plan one, ref_plan;
      fp8attn_attention_args a;
      size_t one_ws = 0;
      void* big_ws;
      const int64_t lse_shape[3] = {1, H, s_len}, lse_stride[3] = {s_len * H, s_len, 1};
      double err_ring = 0, err_single = 0, err_lse = 0, bound;
      int64_t r, t, h, dd;
      fp8attn_context_options ro = opts;
      ro.backend = FP8ATTN_BACKEND_REFERENCE;
      ro.num_threads = 0;
      CHECK(fp8attn_context_create(&ro, &ref_ctx, &err), "fp8attn_context_create (reference)");
      one = make_plan(ctx, 1, &err);
      ref_plan = make_plan(ref_ctx, 1, &err);
      CHECK(fp8attn_plan_workspace_size(one, 1, s_len, s_len, &one_ws, &err), "fp8attn_plan_workspace_size");
      CHECK(fp8attn_plan_workspace_size(ref_plan, 1, s_len, s_len, &ws2, &err), "fp8attn_plan_workspace_size");
      big_ws = malloc((one_ws > ws2 ? one_ws : ws2) + 1);
      memset(&a, 0, sizeof a);
      a.struct_size = sizeof a;
      a.q = rows4(q_all, FP8ATTN_DTYPE_BF16, s_len);
      a.k = rows4(k_all, FP8ATTN_DTYPE_BF16, s_len);
      a.v = rows4(v_all, FP8ATTN_DTYPE_BF16, s_len);
      a.out = rows4(single, FP8ATTN_DTYPE_F32, s_len);
      CHECK(fp8attn_attention_forward(one, &a, big_ws, one_ws, NULL, &err), "fp8attn_attention_forward (one process)");
      a.out = rows4(oracle, FP8ATTN_DTYPE_F32, s_len);
      a.lse = view(oracle_lse, FP8ATTN_DTYPE_F32, 3, lse_shape, lse_stride);
      CHECK(fp8attn_attention_forward(ref_plan, &a, big_ws, ws2, NULL, &err), "fp8attn_attention_forward (oracle)");
      for (r = 0; r < world; ++r)
        for (i = 0; i < 2; ++i) {
          const int64_t g = i == 0 ? r : 2 * world - 1 - r; /* rank r's local chunk i is global chunk g */
          for (t = 0; t < c; ++t)
            for (h = 0; h < H; ++h) {
              const int64_t local = (r * n_local + i * c + t) * H + h, global = (g * c + t) * H + h;
              const double want_lse = oracle_lse[h * s_len + g * c + t];
              const double rel = fabs(all_lse[local] - want_lse) / (fabs(want_lse) > 1 ? fabs(want_lse) : 1);
              if (!(rel <= err_lse)) err_lse = rel; /* NaN-safe: a NaN makes err_lse NaN */
              for (dd = 0; dd < D; ++dd) {
                const double o = oracle[global * D + dd];
                const double d1 = fabs(all_out[local * D + dd] - o), d2 = fabs(single[global * D + dd] - o);
                if (!(d1 <= err_ring)) err_ring = d1;
                if (d2 > err_single) err_single = d2;
              }
            }
        }
      bound = 2 * err_single + 1e-3;
      printf("ring attention: %d ranks, S %lld, %d heads, head_dim %d, BF16 inputs ~ N(0,1), seed %llu\n", world,
             (long long)s_len, H, D, (unsigned long long)seed);
      printf("max|ring - FP64 oracle| %.3e, max|one process - oracle| %.3e, bound 2x + 1e-3 = %.3e; "
             "LSE relative error %.3e (bound 1e-4)\n",
             err_ring, err_single, bound, err_lse);
      failed = !(err_ring <= bound) || !(err_lse <= 1e-4);
      printf("%s\n", failed ? "FAILED" : "OK");
      free(big_ws), free(single), free(oracle), free(oracle_lse), free(all_out), free(all_lse);
      fp8attn_plan_destroy(one);
      fp8attn_plan_destroy(ref_plan);
      fp8attn_context_destroy(ref_ctx);
    }
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  fp8attn_plan_destroy(full);
  fp8attn_plan_destroy(diag);
  fp8attn_context_destroy(ctx);
  free(q_all), free(k_all), free(v_all), free(q), free(kv[0]), free(kv[1]);
  free(po), free(pl), free(merged), free(merged_lse), free(ws);
  MPI_Finalize();
  return failed;
}
