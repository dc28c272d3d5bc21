// libFuzzer target: fp8attn_predict_p_underflow with fuzzed sink models. Invariants: a refused
// call leaves both outputs untouched; a successful one returns fractions in [0, 1].
#include <cstdint>

#include "tests/fuzz/fuzz_input.hpp"

using namespace fp8attn::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  fp8attn_sink_model m{};
  m.struct_size = r.pick(16) == 0 ? r.take<uint8_t>() : sizeof m;
  m.sink_strength = r.pick(4) == 0 ? r.take<double>() : r.number() * 8.0;
  m.k_sink = static_cast<int32_t>(r.extent(16));
  m.p_scale = r.pick(4) == 0 ? r.take<double>() : 256.0;
  m.kv_order = static_cast<int32_t>(r.pick(3));
  m.block_n = static_cast<int32_t>(r.extent(256));
  m.seqlen_k = r.extent(100000);
  double leading = -5.0, expected = -5.0;
  fp8attn_error err = fresh_error();
  const int32_t s = fp8attn_predict_p_underflow(&m, &leading, &expected, &err);
  if (s != FP8ATTN_OK && (leading != -5.0 || expected != -5.0)) broken("a refused prediction wrote outputs", err);
  if (s == FP8ATTN_OK && !(leading >= 0.0 && leading <= 1.0 && expected >= 0.0 && expected <= 1.0))
    broken("a prediction is not a fraction in [0, 1]", err);
  return 0;
}
