// Writes the fuzz targets' seed corpus: scale-state blobs made by the library's own serializer
// (fp8attn_scale_state_serialize after real reports, steps and σ updates), and valid calls for
// the other targets in the harness format (fuzz_input.hpp). Usage: fuzz_make_seed_corpus DIR;
// the committed corpus under tests/fuzz/corpus is this program's output.
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_input.hpp"

using fp8attn::fuzz::Writer;

namespace {

std::string g_root;

void save(const std::string& target, int index, const std::vector<uint8_t>& bytes) {
  const std::string dir = g_root + "/" + target;
  mkdir(g_root.c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/seed_" + std::to_string(index);
  FILE* f = fopen(path.c_str(), "wb");
  if (f == nullptr || fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    fprintf(stderr, "cannot write %s\n", path.c_str());
    exit(1);
  }
  fclose(f);
}

void u32(Writer& w, uint32_t v) { w.put(v); }

/// A blob from a state that went through the given history; mode byte 0 in front.
std::vector<uint8_t> scale_state_seed(fp8attn_context ctx, int32_t layers, int32_t history, int32_t recipe_q, int steps,
                                      bool with_sigma) {
  fp8attn_scale_state_options o{};
  o.struct_size = sizeof o;
  o.num_layers = layers;
  o.amax_history_len = history;
  o.recipe[FP8ATTN_TENSOR_Q] = recipe_q;
  o.burn_in_steps = 3;
  fp8attn_scale_state s = nullptr;
  if (fp8attn_scale_state_create(ctx, &o, &s, nullptr) != FP8ATTN_OK) exit(1);
  if (with_sigma) {
    const float sigma[2] = {3.5f, 1.25f};
    for (int32_t l = 0; l < layers; ++l) fp8attn_scale_state_set_qk_sigma(s, l, sigma, 2, 64, 512, nullptr);
  }
  for (int step = 0; step < steps; ++step) {
    for (int32_t l = 0; l < layers; ++l)
      for (int32_t t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t)
        fp8attn_scale_state_report_amax(s, l, t, 0.5f + 0.25f * static_cast<float>(step + l + t), nullptr);
    fp8attn_scale_state_step(s, nullptr);
  }
  size_t size = 0;
  fp8attn_scale_state_serialize(s, nullptr, 0, &size, nullptr);
  std::vector<uint8_t> bytes(size + 1);
  bytes[0] = 0;
  fp8attn_scale_state_serialize(s, bytes.data() + 1, size, &size, nullptr);
  fp8attn_scale_state_destroy(s);
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  fp8attn_context ctx = fp8attn::fuzz::shared_context();

  // Scale state: serializer blobs, then one op sequence (mode 1).
  save("fuzz_scale_state", 0, scale_state_seed(ctx, 1, 1024, FP8ATTN_RECIPE_DELAYED, 0, false));
  save("fuzz_scale_state", 1, scale_state_seed(ctx, 3, 4, FP8ATTN_RECIPE_DELAYED, 5, true));
  save("fuzz_scale_state", 2, scale_state_seed(ctx, 2, 8, FP8ATTN_RECIPE_CURRENT, 2, true));
  {
    Writer w;
    w.put<uint8_t>(1);
    w.small_extent(2);                           // layers
    for (int t = 0; t < 8; ++t) u32(w, 1);       // recipe 0 = default
    w.small_extent(4);                           // history
    u32(w, 0);                                   // amax_algo
    u32(w, 1);                                   // margin default
    w.small_extent(5);                           // burn-in 5 − 2 = 3
    u32(w, 1), u32(w, 1), u32(w, 1), u32(w, 1);  // B_X, α margin, α decay defaults; grad pick
    for (int op = 0; op < 6; ++op) {
      w.small_extent(static_cast<uint8_t>(op % 2)), u32(w, 1);  // layer
      u32(w, static_cast<uint32_t>(op % 4));                    // op
      u32(w, 2), w.small_number(0.75f), u32(w, 3), w.small_extent(128), w.small_extent(200);
    }
    save("fuzz_scale_state", 3, w.bytes);
  }

  // Forward: padded and packed E4M3 calls that pass validation.
  for (int packed = 0; packed < 2; ++packed) {
    Writer w;
    w.put<uint8_t>(0);                           // no desc edits
    u32(w, 0), u32(w, 1), u32(w, 1), u32(w, 1);  // head_dim 64, heads_kv 2, heads_q ×2, causal
    u32(w, packed ? 0 : 1), u32(w, 1);           // layout, dense strides
    if (packed) {
      u32(w, 2);  // 3 sequences
      for (int b = 0; b < 3; ++b) w.small_extent(static_cast<uint8_t>(5 + 7 * b)), w.small_extent(9), u32(w, 1);
      u32(w, 1);
    } else {
      w.small_extent(2), w.small_extent(20), w.small_extent(33);
    }
    u32(w, 0);  // lse present
    for (int i = 0; i < 3; ++i) {
      u32(w, 0);
      for (int e = 0; e < 16; ++e) w.small_number(0.5f);
      u32(w, static_cast<uint32_t>(i));
    }
    for (int e = 0; e < 256; ++e) w.put<uint8_t>(static_cast<uint8_t>(e * 29 % 0x77));
    save("fuzz_forward", packed, w.bytes);
  }

  // Paged forward: padded E4M3 queries over pages of 16 (no scales), and packed queries with
  // per-token scale caches; block tables list pages 0..5 of a pool of 6.
  for (int variant = 0; variant < 2; ++variant) {
    Writer w;
    w.put<uint8_t>(0);                                    // no desc edits: E4M3, head_dim 64
    u32(w, 0), u32(w, 1), u32(w, 1), w.small_extent(16);  // heads_kv 1, heads_q 2, causal, page_size 16
    w.small_extent(6), u32(w, 1), u32(w, 1);              // 6 pages of the plan's size, dense strides
    u32(w, 1), u32(w, 1);                                 // both caches E4M3
    u32(w, 1), w.small_extent(3);                         // batch 2, 3 pages per sequence
    for (int e = 0; e < 256; ++e) u32(w, static_cast<uint32_t>(e % 6 + 1));  // entries 0..5
    for (int b = 0; b < 8; ++b) w.small_extent(static_cast<uint8_t>(b % 2 ? 20 : 40)), u32(w, 1);
    u32(w, 1), u32(w, 1), u32(w, 1), w.small_extent(40);  // table rows, row stride 4, row-major, max_seqlen_k
    for (int e = 0; e < 64; ++e) w.small_number(0.25f + 0.01f * static_cast<float>(e));
    u32(w, variant ? 2 : 0);  // granularity: none or per (token, head)
    if (!variant) u32(w, 1);  // no scale tensors
    u32(w, 1), u32(w, 1), u32(w, 1);  // header intact, no loop
    u32(w, variant ? 0 : 1), u32(w, 1);  // layout, args.next = the cache
    if (variant)
      u32(w, 7), u32(w, 11);  // packed: 7 and 11 query rows
    else
      u32(w, 5);  // padded: 5 query rows
    u32(w, 1);    // no contiguous K
    save("fuzz_paged_forward", variant, w.bytes);
  }

  // Quantize: per-tensor padded, per-block packed with rotation.
  for (int variant = 0; variant < 2; ++variant) {
    Writer w;
    u32(w, variant ? 0 : 1), u32(w, 1);                      // packed?, F32
    u32(w, variant ? 2 : 0), w.small_extent(16), u32(w, 0);  // granularity, block_rows, head_group
    u32(w, variant ? 0 : 1), w.put<uint64_t>(7), u32(w, 0), w.small_extent(0);
    for (int e = 0; e < (1 << 15); ++e) w.small_number(0.01f * static_cast<float>(e % 97) - 0.4f);
    u32(w, 0), u32(w, 1), u32(w, 0);  // heads 1, dims[1] = 128 (no odd head_dim)
    save("fuzz_quantize", variant, w.bytes);
  }

  // KV append: F32 into E4M3 per (token, head) with rotation, BF16 into a BF16 cache, E4M3 copied
  // (the field order of fuzz_kv_append.cpp).
  for (int variant = 0; variant < 3; ++variant) {
    Writer w;
    u32(w, 0), u32(w, static_cast<uint32_t>(variant));  // input dtype: F32, BF16, E4M3
    u32(w, 1), u32(w, variant == 1 ? 1 : 0);            // cache dtype: E4M3, BF16
    u32(w, 1);                                          // struct_size: sizeof
    u32(w, variant == 0 ? 2 : 0), u32(w, 1);            // granularity: per (token, head), none
    if (variant == 0) u32(w, 0);                        // rotate
    else u32(w, 1), u32(w, 1);                          // no rotation
    w.put<uint64_t>(11);                                // seed
    w.small_extent(6), u32(w, 1);                       // 6 tokens, 2 heads
    u32(w, 1), u32(w, 1), u32(w, 0);                    // head_dim 128, head_dim_v the same
    w.small_extent(3), w.small_extent(4);               // 3 pages of 4 slots
    for (int e = 0; e < 2 * (1 << 14); ++e) w.small_number(0.01f * static_cast<float>(e % 89) - 0.4f);
    for (int t = 0; t < 64; ++t) u32(w, 0), u32(w, static_cast<uint32_t>((t * 5) % 12));
    for (int e = 0; e < 2 * 2048; ++e) w.small_number(0.5f);
    u32(w, 1), u32(w, 1);                   // V's dtype as K's, I64 slots
    u32(w, variant == 0 ? 0 : 1), u32(w, 1);  // token scales for variant 0, dense strides
    u32(w, 10), u32(w, 1);                  // no aliasing, caches present
    save("fuzz_kv_append", variant, w.bytes);
  }

  // Spectral: σ, RoPE norms and the logit bound.
  for (int which = 0; which < 3; ++which) {
    Writer w;
    w.put<uint8_t>(static_cast<uint8_t>(which));
    if (which == 2) {
      for (int i = 0; i < 4; ++i) w.small_number(1.0f + 0.25f * static_cast<float>(i));
      u32(w, 3), w.small_extent(64), w.small_number(2.0f), w.small_number(1.0f);
    } else {
      u32(w, 1), u32(w, 1), u32(w, 1), u32(w, 3), w.small_extent(24);  // 2 kv heads, 4 q heads, head_dim 8, d 24
      u32(w, 0);                                                       // F32
      for (int e = 0; e < (1 << 14); ++e) u32(w, 1), w.put<int8_t>(static_cast<int8_t>(e * 37 % 127 - 63));
      for (int e = 0; e < (1 << 14); ++e) w.put<int8_t>(static_cast<int8_t>(e * 53 % 127 - 63));
    }
    save("fuzz_spectral", which, w.bytes);
  }

  // Predict: a sink model in range.
  {
    Writer w;
    u32(w, 1), u32(w, 1), w.small_number(1.0f), w.small_extent(4), u32(w, 1), u32(w, 0), w.small_extent(128);
    w.small_extent(200);
    save("fuzz_predict", 0, w.bytes);
  }
  // Combine: 3 parts over 5 tokens, 2 heads, head_dim 16, F32 and BF16 partials, dense.
  for (int variant = 0; variant < 2; ++variant) {
    Writer w;
    u32(w, 1), u32(w, static_cast<uint32_t>(variant));  // partial_out F32 or BF16
    u32(w, 1), u32(w, 0);                                // out F32
    u32(w, 1), u32(w, 2);                                // 3 parts (1 + 2)
    u32(w, 1);                                           // LSE parts as O's
    w.small_extent(5), w.small_extent(2), u32(w, 1);     // tokens, heads, head_dim 16
    for (int e = 0; e < (1 << 14); ++e) w.small_number(0.01f * static_cast<float>(e % 89) - 0.4f);
    for (int e = 0; e < (1 << 14); ++e) u32(w, 1), w.small_number(0.02f * static_cast<float>(e % 53) - 0.5f);
    u32(w, 1);                       // F32 lse
    u32(w, 1);                       // out's head_dim as O's
    for (int i = 0; i < 4; ++i) u32(w, 1);  // dense strides
    u32(w, 0);                       // no alias
    u32(w, 1);                       // struct_size as built
    save("fuzz_combine", variant, w.bytes);
  }
  fp8attn_context_destroy(ctx);
  return 0;
}
