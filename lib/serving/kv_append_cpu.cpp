#include "lib/serving/kv_append_cpu.hpp"

#include <optional>
#include <vector>

#include "lib/quantize/hadamard_rotation.hpp"
#include "lib/serving/kv_append_rows.hpp"

namespace fp8attn::serving {

void kv_append_on_cpu(const sm90::kv::KvAppendParams& p, ThreadPool& pool) {
  if (p.tokens == 0) return;
  // NOTE: the quantizer's rotation (lib/quantize/hadamard_rotation.hpp): D's signs and the
  // normalization folded once, the butterflies in the row loop, the same bits as rotate_row.
  const std::optional<quant::HadamardRotation> rotation =
      p.k.rotate ? std::optional<quant::HadamardRotation>(std::in_place, p.log2_head_dim, p.seed) : std::nullopt;
  const float* signed_norm = rotation ? rotation->signed_norm() : nullptr;
  const KvAppendRowOps& ops = kv_append_row_ops();
  const size_t width = static_cast<size_t>(p.k.dim > p.v.dim ? p.k.dim : p.v.dim);
  std::vector<std::vector<float>> rows(static_cast<size_t>(pool.size()), std::vector<float>(width));
  pool.parallel_for(p.tokens, [&](int64_t t, int worker) {
    const int64_t slot = sm90::kv::token_slot(p, t);
    if (slot < 0) return;
    float* x = rows[static_cast<size_t>(worker)].data();
    for (int64_t h = 0; h < p.heads; ++h) {
      ops.append_row(p, p.k, KvRow{t, slot, h, signed_norm, p.log2_head_dim, x});
      ops.append_row(p, p.v, KvRow{t, slot, h, nullptr, 0, x});
    }
  });
}

}  // namespace fp8attn::serving
