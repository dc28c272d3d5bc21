// libFuzzer target: the scale state. Mode 0 loads a fuzzed blob (the seeds are blobs written by
// the library's own serializer); mode 1 creates a state from fuzzed options and runs a fuzzed
// sequence of reports, steps and σ updates. Invariants: a refused call leaves the state
// unchanged (its blob is byte-identical), every scale read back is finite and > 0, and the
// state's own blob always loads back.
#include <cstdint>
#include <vector>

#include "tests/fuzz/fuzz_input.hpp"

using namespace fp8attn::fuzz;

namespace {

std::vector<uint8_t> blob_of(fp8attn_scale_state s) {
  size_t size = 0;
  fp8attn_error err = fresh_error();
  if (fp8attn_scale_state_serialize(s, nullptr, 0, &size, &err) != FP8ATTN_OK) broken("sizing a blob failed", err);
  std::vector<uint8_t> blob(size);
  if (fp8attn_scale_state_serialize(s, blob.data(), blob.size(), &size, &err) != FP8ATTN_OK)
    broken("serialize failed", err);
  return blob;
}

void check_state(fp8attn_scale_state s, int32_t layers) {
  fp8attn_error err = fresh_error();
  for (int32_t l = 0; l < layers && l < 8; ++l)
    for (int32_t t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t) {
      float scale = 0, scale_inv = 0;
      if (fp8attn_scale_state_get_scale(s, l, t, &scale, &scale_inv, &err) != FP8ATTN_OK)
        broken("get_scale failed", err);
      if (!(std::isfinite(scale) && scale > 0 && std::isfinite(scale_inv) && scale_inv > 0))
        broken("the state holds a scale that is not finite and > 0", err);
    }
  const std::vector<uint8_t> blob = blob_of(s);
  if (fp8attn_scale_state_deserialize(s, blob.data(), blob.size(), &err) != FP8ATTN_OK)
    broken("the state's own blob does not load back", err);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  fp8attn_context ctx = shared_context();
  fp8attn_error err = fresh_error();
  const uint8_t mode = r.take<uint8_t>() % 2;
  fp8attn_scale_state_options o{};
  o.struct_size = sizeof o;
  if (mode == 1) {
    o.num_layers = static_cast<int32_t>(r.extent(4));
    for (int32_t& rec : o.recipe) rec = static_cast<int32_t>(r.pick(5)) - 1;
    o.amax_history_len = static_cast<int32_t>(r.extent(8));
    o.amax_algo = static_cast<int32_t>(r.pick(3));
    o.margin = r.pick(2) ? 0.0f : r.number() * 16.0f;
    o.burn_in_steps = static_cast<int32_t>(r.extent(6) - 2);
    o.token_norm_bound = r.pick(2) ? 0.0f : r.number();
    o.alpha_margin = r.pick(2) ? 0.0f : r.number();
    o.alpha_decay = r.pick(2) ? 0.0f : r.number();
    o.grad_dtype = r.pick(4) == 0 ? static_cast<int32_t>(r.pick(8)) : 0;
  }
  fp8attn_scale_state state = nullptr;
  if (fp8attn_scale_state_create(ctx, &o, &state, &err) != FP8ATTN_OK) return 0;
  int32_t layers = o.num_layers == 0 ? 1 : o.num_layers;
  if (mode == 1 && layers > 64) {  // valid, but too slow to serialize after every op
    fp8attn_scale_state_destroy(state);
    return 0;
  }

  if (mode == 0) {
    const std::vector<uint8_t> before = blob_of(state);
    const int32_t s = fp8attn_scale_state_deserialize(state, r.rest(), r.remaining(), &err);
    if (s != FP8ATTN_OK && blob_of(state) != before) broken("a refused blob changed the state", err);
    if (s == FP8ATTN_OK) {
      // get_scale on a layer past the loaded count is refused: read the count from the blob.
      layers = static_cast<int32_t>(r.rest()[16] | (r.rest()[17] << 8) | (r.rest()[18] << 16) | (r.rest()[19] << 24));
    }
  } else {
    for (int op = 0; op < 24 && r.remaining() > 0; ++op) {
      const std::vector<uint8_t> before = blob_of(state);
      const int32_t layer = static_cast<int32_t>(r.extent(4) - (r.pick(16) == 0 ? 1 : 0));
      int32_t s = FP8ATTN_OK;
      switch (r.pick(5)) {
        case 0:
          s = fp8attn_scale_state_report_amax(state, layer, static_cast<int32_t>(r.pick(9)), r.number() * 1e6f, &err);
          break;
        case 1: {
          std::vector<float> amax(static_cast<size_t>(layers) * FP8ATTN_NUM_TENSOR_KINDS);
          for (float& a : amax) a = r.number();
          s = fp8attn_scale_state_report_amax_batch(state, amax.data(), amax.size() - (r.pick(8) == 0 ? 1 : 0), &err);
          break;
        }
        case 2:
          s = fp8attn_scale_state_step(state, &err);
          break;
        case 3: {
          float sigma[3] = {r.number() * 1e3f, r.number(), r.number()};
          if (r.pick(4) == 0) sigma[0] = r.take<float>();
          s = fp8attn_scale_state_set_qk_sigma(state, layer, sigma, 1 + static_cast<int32_t>(r.pick(3)),
                                               static_cast<int32_t>(r.extent(256)), r.extent(100000), &err);
          break;
        }
        default: {
          float scale = -5.0f, scale_inv = -5.0f;
          s = fp8attn_scale_state_get_scale(state, layer, static_cast<int32_t>(r.pick(9)), &scale, &scale_inv, &err);
          if (s != FP8ATTN_OK && (scale != -5.0f || scale_inv != -5.0f)) broken("a refused get_scale wrote", err);
        }
      }
      if (s != FP8ATTN_OK && blob_of(state) != before) broken("a refused call changed the state", err);
    }
  }
  if (layers >= 1) check_state(state, layers);
  fp8attn_scale_state_destroy(state);
  return 0;
}
