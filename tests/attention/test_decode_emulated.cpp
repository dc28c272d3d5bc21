// The decode kernels (kernels/sm90/decode) on the SIMT emulator (FP8ATTN_BACKEND_EMULATOR)
// against the CPU engine's decode path, bit for bit (out and LSE): num_splits 1, 2, 3 and 0 (the
// heuristic, decided on the device), GQA 8:1, 4:1 and MHA, q_len 1..8, pages of 1, 16 and 64
// keys, E4M3 and BF16. The heuristic fills a fixed worker count (kDecodeHeuristicWorkers), so the
// engine's threads (3 here) and the emulator's SMs (FP8ATTN_EMULATOR_SMS: 4) need not match, and
// DecodeEmulatedThreads checks other counts on both. Graph safety: one plan,
// workspace and argument struct run three times while seqused_k and the block table (device
// memory) change between the runs; each run gives the engine's answer for what it read. Bad
// input: a specific status with the outputs untouched. Inputs: fresh N(0, 1) codes, outputs
// poisoned before every call (paged_support.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tests/attention/paged_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::paged_test {
namespace {

constexpr int kWorkers = 4;        ///< the emulator's SMs (set below)
constexpr int kEngineThreads = 3;  ///< the engine's: not the emulator's SM count, on purpose

void use_emulated_sms(int n) { setenv("FP8ATTN_EMULATOR_SMS", std::to_string(n).c_str(), 1); }
void use_four_emulated_sms() { use_emulated_sms(kWorkers); }

struct Shape {
  std::string name;
  int32_t dtype = FP8ATTN_DTYPE_E4M3;
  int heads_q = 8, heads_kv = 2, head_dim = 64;
  int64_t page_size = 16;
  std::vector<int64_t> seqlen_k, seqlen_q;
  bool causal = true;
  int window_left = -1, window_right = -1;
  int sink_tokens = 0;
  int32_t softmax_variant = FP8ATTN_SOFTMAX_STANDARD;
  int32_t pv_promote_interval = 0;  ///< 1: E4M3's every-block decode kernel
};

void PrintTo(const Shape& s, std::ostream* os) { *os << s.name; }

fp8attn_attention_desc decode_desc(const Shape& s, int32_t splits) {
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.input_dtype = s.dtype;
  d.output_dtype = FP8ATTN_DTYPE_F32;
  d.head_dim = s.head_dim;
  d.num_heads_q = s.heads_q;
  d.num_heads_kv = s.heads_kv;
  d.causal = s.causal;
  d.window_left = s.window_left;
  d.window_right = s.window_right;
  d.sink_tokens = s.sink_tokens;
  d.softmax_variant = s.softmax_variant;
  d.pv_promote_interval = s.pv_promote_interval;
  d.page_size = static_cast<int32_t>(s.page_size);
  d.decode = 1;
  d.num_splits = splits;
  return d;
}

/// One context, plan and workspace, for calls that reuse them (a captured launch's replays).
struct Session {
  fp8attn_context ctx = nullptr;
  fp8attn_plan plan = nullptr;
  std::vector<unsigned char> ws;
  fp8attn_error err{};
  int32_t status = FP8ATTN_OK;

  Session(int32_t backend, const fp8attn_attention_desc& d, int64_t batch, int64_t max_q, int64_t max_k,
          int workers = kEngineThreads) {
    err.struct_size = sizeof err;
    fp8attn_context_options opt{};
    opt.struct_size = sizeof opt;
    opt.backend = backend;
    opt.num_threads = workers;
    status = fp8attn_context_create(&opt, &ctx, &err);
    if (status == FP8ATTN_OK) status = fp8attn_plan_create(ctx, &d, &plan, &err);
    size_t bytes = 0;
    if (status == FP8ATTN_OK) status = fp8attn_plan_workspace_size(plan, batch, max_q, max_k, &bytes, &err);
    ws.assign(bytes + 1, 0xA5);
  }
  ~Session() {
    fp8attn_plan_destroy(plan);
    fp8attn_context_destroy(ctx);
  }
  /// Runs the forward on `a` (whose out and lse point into `o`, poisoned here first).
  void run(const fp8attn_attention_args& a, Outputs& o) {
    std::fill(o.out.begin(), o.out.end(), kPoison);
    std::fill(o.lse.begin(), o.lse.end(), kPoison);
    o.status = status == FP8ATTN_OK ? fp8attn_attention_forward(plan, &a, ws.data(), ws.size() - 1, nullptr, &err)
                                    : status;
    o.message = err.message;
  }
};

struct Inputs {
  PagedKvData kv;
  Queries q;
  Inputs(const Shape& s, std::mt19937_64& rng, bool padded = false) {
    PagedLayout l;
    l.page_size = s.page_size;
    l.seqlen_k = s.seqlen_k;
    kv = make_paged_kv(l, s.dtype, s.heads_kv, s.head_dim, rng);
    q = make_queries(s.dtype, s.heads_q, s.head_dim, s.seqlen_q, padded, rng);
  }
};

/// The decode call on `backend`, paged or over the packed contiguous K and V.
Outputs decode_call(int32_t backend, const Shape& s, Inputs& in, int32_t splits, bool paged) {
  Outputs o;
  fp8attn_attention_args a = query_args(in.q, o, s.head_dim);
  fp8attn_paged_kv pkv = in.kv.paged();
  int64_t max_k = in.kv.max_seqlen_k;
  if (paged) {
    a.next = &pkv;
  } else {
    const int64_t total_k = in.kv.cu_seqlens_k.back();
    a.k = dense_host_tensor(in.kv.k_packed.data(), s.dtype, {total_k, s.heads_kv, s.head_dim});
    a.v = dense_host_tensor(in.kv.v_packed.data(), s.dtype, {total_k, s.heads_kv, s.head_dim});
    a.cu_seqlens_k = dense_host_tensor(in.kv.cu_seqlens_k.data(), FP8ATTN_DTYPE_I32, {in.kv.batch + 1});
  }
  fp8attn_attention_desc d = decode_desc(s, splits);
  if (!paged) d.page_size = 0;
  Session session(backend, d, in.q.batch(), in.q.max_len(), max_k);
  session.run(a, o);
  return o;
}

class DecodeEmulated : public ::testing::TestWithParam<Shape> {};

TEST_P(DecodeEmulated, decode_emulated_kernel_equals_engine_bit_for_bit) {
  use_four_emulated_sms();
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const Shape& s = GetParam();
  Inputs in(s, rng);
  std::string where;
  for (int32_t splits : {1, 2, 3, 0}) {
    for (bool paged : {true, false}) {
      if (!paged && s.page_size != 16) continue;  // the contiguous layout once per shape
      SCOPED_TRACE("num_splits " + std::to_string(splits) + (paged ? ", paged" : ", contiguous") + ", seed " +
                   std::to_string(seed));
      const Outputs engine = decode_call(FP8ATTN_BACKEND_CPU, s, in, splits, paged);
      ASSERT_EQ(engine.status, FP8ATTN_OK) << engine.message;
      const Outputs kernel = decode_call(FP8ATTN_BACKEND_EMULATOR, s, in, splits, paged);
      ASSERT_EQ(kernel.status, FP8ATTN_OK) << kernel.message;
      EXPECT_TRUE(same_bits(kernel.out, engine.out, &where)) << "out, " << where;
      EXPECT_TRUE(same_bits(kernel.lse, engine.lse, &where)) << "lse, " << where;
      const size_t poisoned = static_cast<size_t>(std::count(kernel.out.begin(), kernel.out.end(), kPoison));
      EXPECT_EQ(poisoned, 0u) << "outputs the kernel never wrote";
    }
  }
}

std::vector<Shape> shapes() {
  std::vector<Shape> v;
  struct Heads {
    const char* name;
    int q, kv;
  };
  const Heads heads[] = {{"gqa8to1", 16, 2}, {"gqa4to1", 8, 2}, {"mha", 2, 2}};
  for (const Heads& h : heads)
    for (int64_t page : {1, 16, 64})
      for (int32_t dtype : {FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16}) {
        Shape s;
        s.name = std::string(h.name) + "_page" + std::to_string(page) + (dtype == FP8ATTN_DTYPE_E4M3 ? "_e4m3" : "_bf16");
        s.dtype = dtype;
        s.heads_q = h.q;
        s.heads_kv = h.kv;
        s.page_size = page;
        // Lengths 0 and 1, several KV blocks, and q_len 1..8.
        s.seqlen_k = {700, 0, 1, 260, 9};
        s.seqlen_q = {1, 2, 8, 5, 3};
        v.push_back(s);
      }
  Shape odd;  // BlockM 192 at head_dim 64 holds 64 tokens of a group of 3
  odd.name = "gqa3to1_hd64_page16_e4m3";
  odd.heads_q = 6;
  odd.heads_kv = 2;
  odd.seqlen_k = {500, 3, 90};
  odd.seqlen_q = {8, 1, 4};
  v.push_back(odd);
  // Sink isolation (the sink block is slot 0 of the split grid) under the stabilized softmax,
  // and a sliding window.
  Shape sink;
  sink.name = "gqa4to1_page16_e4m3_sink_tokens4_stabilized";
  sink.seqlen_k = {1000, 3, 260, 5};
  sink.seqlen_q = {8, 2, 1, 4};
  sink.sink_tokens = 4;
  sink.softmax_variant = FP8ATTN_SOFTMAX_STABILIZED;
  v.push_back(sink);
  Shape window;
  window.name = "gqa8to1_page16_bf16_window_300_0";
  window.dtype = FP8ATTN_DTYPE_BF16;
  window.heads_q = 16;
  window.seqlen_k = {1200, 4, 600};
  window.seqlen_q = {4, 4, 7};
  window.window_left = 300;
  window.window_right = 0;
  v.push_back(window);
  // Two-level accumulation after every KV block (pv_promote_interval 1): the every-block decode
  // kernel, each split promoting its own blocks as the engine does.
  for (int hd : {64, 256}) {
    Shape promote;
    promote.name = "gqa4to1_page16_e4m3_hd" + std::to_string(hd) + "_promote_every_block";
    promote.head_dim = hd;
    promote.seqlen_k = {900, 1, 260, 40};
    promote.seqlen_q = {3, 1, 8, 2};
    promote.pv_promote_interval = 1;
    v.push_back(promote);
  }
  Shape wide;
  wide.name = "gqa4to1_page16_e4m3_hd128_non_causal_q_len_1_to_8";
  wide.head_dim = 128;
  wide.causal = false;
  wide.seqlen_k = {600, 40, 300, 8, 1, 500, 17, 64};
  wide.seqlen_q = {1, 2, 3, 4, 5, 6, 7, 8};
  v.push_back(wide);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Decode, DecodeEmulated, ::testing::ValuesIn(shapes()),
                         [](const auto& info) { return info.param.name; });

/// Q, out and LSE in the padded layout ([batch, q_len, ...], no cu_seqlens_q): the merge maps the
/// partial rows back through the output's batch stride.
TEST(DecodeEmulatedPadded, decode_emulated_padded_layout_equals_engine) {
  use_four_emulated_sms();
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  Shape s;
  s.name = "padded";
  s.dtype = FP8ATTN_DTYPE_BF16;
  s.seqlen_k = {900, 2, 350};
  s.seqlen_q = {3, 3, 3};
  Inputs in(s, rng, /*padded=*/true);
  std::string where;
  for (int32_t splits : {1, 3, 0}) {
    SCOPED_TRACE("num_splits " + std::to_string(splits) + ", seed " + std::to_string(seed));
    const Outputs engine = decode_call(FP8ATTN_BACKEND_CPU, s, in, splits, true);
    ASSERT_EQ(engine.status, FP8ATTN_OK) << engine.message;
    const Outputs kernel = decode_call(FP8ATTN_BACKEND_EMULATOR, s, in, splits, true);
    ASSERT_EQ(kernel.status, FP8ATTN_OK) << kernel.message;
    EXPECT_TRUE(same_bits(kernel.out, engine.out, &where)) << "out, " << where;
    EXPECT_TRUE(same_bits(kernel.lse, engine.lse, &where)) << "lse, " << where;
    EXPECT_EQ(std::count(kernel.out.begin(), kernel.out.end(), kPoison), 0);
  }
}

/// Per-(sequence, KV head) K and V descales and per-KV-block K descales (folded into each block's
/// logits, by slot: the split grid's blocks), with GQA 4:1; then per-KV-block V descales too, which
/// run the every-block decode kernel (each block's P·V promoted with its V descale).
TEST(DecodeEmulatedDescales, decode_emulated_block_descales_equal_engine) {
  use_four_emulated_sms();
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  Shape s;
  s.name = "descales";
  s.seqlen_k = {1100, 0, 300};
  s.seqlen_q = {2, 3, 8};
  s.sink_tokens = 4;
  Inputs in(s, rng);
  std::uniform_real_distribution<float> scale(0.25f, 2.0f);
  const int64_t batch = in.q.batch();
  std::vector<float> k_desc, v_desc;
  for (int64_t i = 0; i < batch * s.heads_kv; ++i) k_desc.push_back(scale(rng)), v_desc.push_back(scale(rng));
  std::string where;
  for (const bool v_blocks : {false, true})
  for (int32_t splits : {1, 3, 0}) {
    SCOPED_TRACE("num_splits " + std::to_string(splits) + (v_blocks ? ", V block descales" : "") + ", seed " +
                 std::to_string(seed));
    std::vector<Outputs> got;
    for (int32_t backend : {FP8ATTN_BACKEND_CPU, FP8ATTN_BACKEND_EMULATOR}) {
      Session session(backend, decode_desc(s, splits), batch, in.q.max_len(), in.kv.max_seqlen_k);
      ASSERT_EQ(session.status, FP8ATTN_OK) << session.err.message;
      int32_t block_m = 0, block_n = 0;
      ASSERT_EQ(fp8attn_plan_get_tile(session.plan, &block_m, &block_n, nullptr), FP8ATTN_OK);
      const int64_t slots = 1 + (in.kv.max_seqlen_k - s.sink_tokens + block_n - 1) / block_n;
      std::mt19937_64 block_rng(seed + 1);  // the same block descales on both backends
      std::vector<float> k_block, v_block;
      for (int64_t i = 0; i < batch * s.heads_kv * slots; ++i) k_block.push_back(scale(block_rng));
      for (int64_t i = 0; i < batch * s.heads_kv * slots; ++i) v_block.push_back(scale(block_rng));
      Outputs o;
      fp8attn_attention_args a = query_args(in.q, o, s.head_dim);
      fp8attn_paged_kv pkv = in.kv.paged();
      a.next = &pkv;
      a.k_descale = dense_host_tensor(k_desc.data(), FP8ATTN_DTYPE_F32, {batch, s.heads_kv});
      a.v_descale = dense_host_tensor(v_desc.data(), FP8ATTN_DTYPE_F32, {batch, s.heads_kv});
      a.k_block_descale = dense_host_tensor(k_block.data(), FP8ATTN_DTYPE_F32, {batch, s.heads_kv, slots});
      if (v_blocks) a.v_block_descale = dense_host_tensor(v_block.data(), FP8ATTN_DTYPE_F32, {batch, s.heads_kv, slots});
      session.run(a, o);
      ASSERT_EQ(o.status, FP8ATTN_OK) << o.message;
      got.push_back(o);
    }
    EXPECT_TRUE(same_bits(got[1].out, got[0].out, &where)) << "out, " << where;
    EXPECT_TRUE(same_bits(got[1].lse, got[0].lse, &where)) << "lse, " << where;
  }
}

/// One launch, run three times: the lengths and the block table change between the runs (device
/// memory, as a captured graph's replays would see them); the host arguments stay fixed. The
/// heuristic's splits follow the lengths on the device.
TEST(DecodeGraphSafety, decode_emulated_replay_reads_lengths_and_tables_from_device_memory) {
  // NOTE: the heuristic's split count follows the longest sequence here (7, 6, then 2 of the
  // host bound's 7: 6 items, at most two blocks per split).
  constexpr int kReplayWorkers = 16;
  use_emulated_sms(kReplayWorkers);
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  Shape s;
  s.name = "replay";
  s.seqlen_k = {1200, 800, 300};
  s.seqlen_q = {2, 8, 1};
  Inputs in(s, rng);
  for (int32_t splits : {0, 3}) {
    Session emu(FP8ATTN_BACKEND_EMULATOR, decode_desc(s, splits), in.q.batch(), in.q.max_len(), in.kv.max_seqlen_k,
                kReplayWorkers);
    ASSERT_EQ(emu.status, FP8ATTN_OK) << emu.err.message;
    Session cpu(FP8ATTN_BACKEND_CPU, decode_desc(s, splits), in.q.batch(), in.q.max_len(), in.kv.max_seqlen_k,
                kReplayWorkers);
    ASSERT_EQ(cpu.status, FP8ATTN_OK) << cpu.err.message;
    Outputs o_emu, o_cpu;
    fp8attn_attention_args a = query_args(in.q, o_emu, s.head_dim);
    fp8attn_paged_kv pkv = in.kv.paged();
    a.next = &pkv;
    fp8attn_attention_args a_cpu = query_args(in.q, o_cpu, s.head_dim);
    a_cpu.next = &pkv;
    const std::vector<int32_t> table = in.kv.table;
    std::vector<Outputs> seen;
    for (int replay = 0; replay < 3; ++replay) {
      SCOPED_TRACE("num_splits " + std::to_string(splits) + ", replay " + std::to_string(replay) + ", seed " +
                   std::to_string(seed));
      // NOTE: written in place: the argument struct keeps pointing at the same buffers.
      std::copy(table.begin(), table.end(), in.kv.table.begin());
      std::vector<int32_t> used = {1200, 800, 300};
      if (replay == 1) {  // sequences 0 and 1 swap their pages and shorten
        for (int64_t i = 0; i < in.kv.max_pages; ++i) std::swap(in.kv.entry(0, i), in.kv.entry(1, i));
        used = {700, 1100, 250};
      } else if (replay == 2) {  // short: 4 KV blocks at most, so the heuristic picks two splits
        used = {300, 3, 33};
      }
      std::copy(used.begin(), used.end(), in.kv.seqused.begin());
      emu.run(a, o_emu);
      cpu.run(a_cpu, o_cpu);
      ASSERT_EQ(o_emu.status, FP8ATTN_OK) << o_emu.message;
      ASSERT_EQ(o_cpu.status, FP8ATTN_OK) << o_cpu.message;
      std::string where;
      EXPECT_TRUE(same_bits(o_emu.out, o_cpu.out, &where)) << "out, " << where;
      EXPECT_TRUE(same_bits(o_emu.lse, o_cpu.lse, &where)) << "lse, " << where;
      seen.push_back(o_emu);
    }
    std::string where;
    EXPECT_FALSE(same_bits(seen[0].out, seen[1].out, &where)) << "the replays read the same lengths";
    EXPECT_FALSE(same_bits(seen[1].out, seen[2].out, &where)) << "the replays read the same lengths";
  }
}

/// num_splits 0 gives the same bits whatever the engine's threads and the emulator's SMs: the
/// heuristic fills a fixed worker count (kDecodeHeuristicWorkers), not the machine's.
TEST(DecodeEmulatedThreads, decode_heuristic_splits_do_not_depend_on_threads_or_sms) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  Shape s;
  s.name = "threads";
  s.seqlen_k = {2000, 40, 700};
  s.seqlen_q = {1, 4, 2};
  Inputs in(s, rng);
  auto run = [&](int32_t backend, int workers) {
    Outputs o;
    fp8attn_attention_args a = query_args(in.q, o, s.head_dim);
    fp8attn_paged_kv pkv = in.kv.paged();
    a.next = &pkv;
    Session session(backend, decode_desc(s, 0), in.q.batch(), in.q.max_len(), in.kv.max_seqlen_k, workers);
    session.run(a, o);
    return o;
  };
  const Outputs one = run(FP8ATTN_BACKEND_CPU, 1);
  ASSERT_EQ(one.status, FP8ATTN_OK) << one.message;
  std::string where;
  for (int threads : {2, 5}) {
    const Outputs o = run(FP8ATTN_BACKEND_CPU, threads);
    ASSERT_EQ(o.status, FP8ATTN_OK) << o.message;
    EXPECT_TRUE(same_bits(o.out, one.out, &where)) << threads << " threads, out, " << where << ", seed " << seed;
    EXPECT_TRUE(same_bits(o.lse, one.lse, &where)) << threads << " threads, lse, " << where << ", seed " << seed;
  }
  for (int sms : {1, 7}) {
    use_emulated_sms(sms);
    const Outputs o = run(FP8ATTN_BACKEND_EMULATOR, 1);
    ASSERT_EQ(o.status, FP8ATTN_OK) << o.message;
    EXPECT_TRUE(same_bits(o.out, one.out, &where)) << sms << " SMs, out, " << where << ", seed " << seed;
    EXPECT_TRUE(same_bits(o.lse, one.lse, &where)) << sms << " SMs, lse, " << where << ", seed " << seed;
  }
  use_four_emulated_sms();
}

TEST(DecodeEmulatedBadInput, decode_emulated_refuses_with_specific_status_and_untouched_outputs) {
  use_four_emulated_sms();
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  Shape s;
  s.seqlen_k = {100, 50};
  s.seqlen_q = {9, 1};  // above FP8ATTN_MAX_DECODE_Q_LEN
  Inputs in(s, rng);
  for (bool paged : {true, false}) {
    const Outputs o = decode_call(FP8ATTN_BACKEND_EMULATOR, s, in, 2, paged);
    EXPECT_EQ(o.status, FP8ATTN_STATUS_BAD_SHAPE) << o.message;
    EXPECT_NE(o.message.find("FP8ATTN_MAX_DECODE_Q_LEN"), std::string::npos) << o.message;
    EXPECT_TRUE(o.untouched());
  }
  // num_splits above 256 (FP8ATTN_MAX_COMBINE_PARTS): the plan is refused.
  s.seqlen_q = {1, 1};
  Inputs ok(s, rng);
  const Outputs too_many = decode_call(FP8ATTN_BACKEND_EMULATOR, s, ok, 257, true);
  EXPECT_EQ(too_many.status, FP8ATTN_STATUS_BAD_OPTION) << too_many.message;
  EXPECT_NE(too_many.message.find("num_splits"), std::string::npos) << too_many.message;
  EXPECT_TRUE(too_many.untouched());
  // Three query heads per KV head at head_dim 128: the packed Q box needs the group to divide BlockM.
  Shape odd = s;
  odd.head_dim = 128;  // BlockM 128 (at head_dim 64, BlockM 192 takes a group of 3: gqa3to1_hd64 above)
  odd.heads_q = 6;
  odd.heads_kv = 2;
  Inputs odd_in(odd, rng);
  const Outputs group3 = decode_call(FP8ATTN_BACKEND_EMULATOR, odd, odd_in, 2, true);
  EXPECT_EQ(group3.status, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND) << group3.message;
  EXPECT_NE(group3.message.find("query heads per KV head"), std::string::npos) << group3.message;
  EXPECT_TRUE(group3.untouched());
  // Promotion every 2 blocks: no decode kernel keeps a second O tile across blocks.
  Shape every2 = s;
  every2.pv_promote_interval = 2;
  const Outputs promote2 = decode_call(FP8ATTN_BACKEND_EMULATOR, every2, ok, 2, true);
  EXPECT_EQ(promote2.status, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND) << promote2.message;
  EXPECT_NE(promote2.message.find("pv_promote_interval 2"), std::string::npos) << promote2.message;
  EXPECT_TRUE(promote2.untouched());
}

}  // namespace
}  // namespace fp8attn::paged_test
