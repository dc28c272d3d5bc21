// The tensor-core decode tile's P·V on E4M3 value codes (lib/attention/engine/decode_tile.cpp):
// where O, rescaled across blocks, falls below the integer form's range, the try on the codes
// gives up, the tile restores O and takes the float panels, and the engine stays bit-equal to the
// emulated decode kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tests/attention/paged_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::paged_test {
namespace {

constexpr int kHeadsQ = 16, kHeadsKv = 2, kHeadDim = 128;
constexpr int64_t kPage = 16, kKeys = 600;

fp8attn_attention_desc tensor_core_decode_desc(int32_t splits) {
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.input_dtype = FP8ATTN_DTYPE_E4M3;
  d.output_dtype = FP8ATTN_DTYPE_F32;
  d.head_dim = kHeadDim;
  d.num_heads_q = kHeadsQ;
  d.num_heads_kv = kHeadsKv;
  d.causal = 1;
  d.page_size = static_cast<int32_t>(kPage);
  d.decode = 1;
  d.num_splits = splits;
  d.accumulator_model = FP8ATTN_ACCUMULATOR_TENSOR_CORE;
  return d;
}

TEST(DecodeTensorCoreORange, decode_o_rescaled_below_the_integer_form_equals_the_emulated_kernel) {
  const uint64_t seed = workloads::fresh_seed();
  std::mt19937_64 rng(seed);
  PagedLayout l;
  l.page_size = kPage;
  l.seqlen_k = {kKeys};
  PagedKvData kv = make_paged_kv(l, FP8ATTN_DTYPE_E4M3, kHeadsKv, kHeadDim, rng);
  Queries q = make_queries(FP8ATTN_DTYPE_E4M3, kHeadsQ, kHeadDim, {1}, /*padded=*/false, rng);
  // NOTE: the logits live in dimension 0 (Q 32 there): key 449 scores 2 · 32 and key 400 28 · 32,
  // so the block of key 400, visited after that of key 449, rescales O by about 2^-106. Before it,
  // O is key 449's value times P (2^8, the cast P's scale): 256 in dims 0-111 and the least E4M3
  // value in dims 112-127, random signs. After the rescale O's first seven panels (about 2^-90) are
  // in the integer form's range, from 2^-100, and its last (about 2^-107) is not; key 400's value is 0 there, so the last panel's
  // instructions hold O alone and need the scalar rule. The form writes the first seven panels
  // and gives up at the last: O must be restored from before the try.
  const uint8_t zero = 0x00, least = 0x01, two = 0x40, twenty_eight = 0x5E, thirty_two = 0x60, v_256 = 0x78;
  for (int head = 0; head < kHeadsQ; ++head) q.q[static_cast<size_t>(head) * kHeadDim] = thirty_two;
  auto at = [&](int64_t key, int head, int e) {
    const int64_t page = kv.entry(0, key / kPage);
    return static_cast<size_t>(((page * kPage + key % kPage) * kHeadsKv + head) * kHeadDim + e);
  };
  std::bernoulli_distribution negative(0.5);
  auto sign = [&] { return static_cast<uint8_t>(negative(rng) ? 0x80 : 0x00); };
  constexpr int kLastPanel = kHeadDim - 16;
  for (int head = 0; head < kHeadsKv; ++head)
    for (int64_t key = 0; key < kKeys; ++key)
      for (int e = 0; e < kHeadDim; ++e) {
        kv.k_cache[at(key, head, e)] = e != 0 ? zero : key == 449 ? two : key == 400 ? twenty_eight : zero;
        uint8_t& v = kv.v_cache[at(key, head, e)];
        if (key == 449)
          v = static_cast<uint8_t>((e < kLastPanel ? v_256 : least) | sign());
        else if (key != 400 || e >= kLastPanel)
          v = zero;  // key 400's dims 0-111 keep their random codes
      }
  int tiny = 0;
  for (int32_t splits : {1, 3}) {
    Outputs cpu, emulated;
    fp8attn_paged_kv pkv_cpu = kv.paged(), pkv_emu = kv.paged();
    fp8attn_attention_args a_cpu = query_args(q, cpu, kHeadDim), a_emu = query_args(q, emulated, kHeadDim);
    a_cpu.next = &pkv_cpu;
    a_emu.next = &pkv_emu;
    run_forward(FP8ATTN_BACKEND_CPU, tensor_core_decode_desc(splits), a_cpu, 1, 1, kv.max_seqlen_k, cpu);
    run_forward(FP8ATTN_BACKEND_EMULATOR, tensor_core_decode_desc(splits), a_emu, 1, 1, kv.max_seqlen_k, emulated);
    ASSERT_EQ(cpu.status, FP8ATTN_OK) << cpu.message;
    ASSERT_EQ(emulated.status, FP8ATTN_OK) << emulated.message;
    std::string where;
    EXPECT_TRUE(same_bits(cpu.out, emulated.out, &where)) << "splits " << splits << ", out " << where << ", seed "
                                                          << seed;
    EXPECT_TRUE(same_bits(cpu.lse, emulated.lse, &where)) << "splits " << splits << ", lse " << where << ", seed "
                                                          << seed;
    for (float x : cpu.out) tiny += (x != 0.0f && std::fabs(x) < 0x1p-100f) ? 1 : 0;
  }
  std::printf("outputs below 2^-100 (both split counts): %d, seed %llu\n", tiny, static_cast<unsigned long long>(seed));
  EXPECT_GT(tiny, 0) << "no output fell below 2^-100: the case does not reach the float panels, seed " << seed;
}

}  // namespace
}  // namespace fp8attn::paged_test
