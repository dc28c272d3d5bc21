#include "lib/quantize/cpu_quantizer.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "kernels/sm90/quantize/quantize_math.hpp"
#include "lib/core/error.hpp"
#include "lib/quantize/hadamard_rotation.hpp"
#include "lib/quantize/quantize_problem.hpp"
#include "lib/quantize/quantize_rows.hpp"

namespace fp8attn::quant {
namespace {

using sm90::quant::Granularity;
using sm90::quant::QuantizeParams;
using sm90::quant::UnitBox;

/// Calls f(b, h, u, first_row, row_count) for work unit `index`, in sequence coordinates.
template <class F>
void for_unit_rows(const QuantizeParams& p, int64_t index, F&& f) {
  const int64_t u = index % p.units_per_head, h = (index / p.units_per_head) % p.heads;
  const int64_t b = index / (p.units_per_head * p.heads);
  const sm90::quant::RowSpan span = sm90::quant::sequence_rows(p, b);
  const int64_t begin = sm90::quant::unit_first_row(p, u), end = std::min(span.rows, sm90::quant::unit_first_row(p, u + 1));
  f(b, h, u, span.offset + begin, std::max<int64_t>(0, end - begin));
}

float box_amax(const QuantizeParams& p, const UnitBox& box, const std::vector<float>& unit_amax) {
  float amax = 0.0f;
  for (int64_t i = 0; i < box.count(); ++i) amax = std::max(amax, unit_amax[sm90::quant::unit_in_box(p, box, i)]);
  return amax;
}

/// Computes each descale group's scale once, writes its descale, and gives every unit its scale.
std::vector<float> scales_per_unit(const QuantizeParams& p, const std::vector<float>& unit_amax) {
  std::vector<float> unit_scale(unit_amax.size(), 1.0f);
  auto settle = [&](int64_t b, int64_t h, int64_t u) {
    const UnitBox box = sm90::quant::scale_group(p, b, h, u);
    const float scale = sm90::quant::scale_from_amax(box_amax(p, box, unit_amax), p.margin);
    p.descale[sm90::quant::descale_offset(p, b, h, u)] = sm90::quant::descale_from_scale(scale);
    for (int64_t i = 0; i < box.count(); ++i) unit_scale[sm90::quant::unit_in_box(p, box, i)] = scale;
  };
  switch (p.granularity) {
    case Granularity::PerTensor: settle(0, 0, 0); break;
    case Granularity::PerHead:
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.heads; h += p.head_group) settle(b, h, 0);
      break;
    case Granularity::PerBlock:
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t h = 0; h < p.heads; h += p.head_group)
          for (int64_t u = 0; u < p.num_blocks; ++u) settle(b, h, u);
      break;
  }
  return unit_scale;
}

}  // namespace

float quantize_on_cpu(const QuantizeParams& p, ThreadPool& pool) {
  const int64_t units = unit_count(p);
  std::vector<float> unit_amax(static_cast<size_t>(units), 0.0f);
  // NOTE: an input without rows needs no row buffers: [1, 0, 1, 2^26] once took 771 MiB of them.
  const bool has_rows = p.cu_seqlens != nullptr ? p.cu_seqlens[p.batch] > 0 : p.seqlen > 0;
  std::vector<std::vector<float>> rows(has_rows && units > 0 ? static_cast<size_t>(pool.size()) : 0,
                                       std::vector<float>(static_cast<size_t>(p.head_dim)));
  const std::optional<HadamardRotation> rotation =
      p.rotate ? std::optional<HadamardRotation>(std::in_place, p.log2_head_dim, p.seed) : std::nullopt;
  const float* signed_norm = rotation ? rotation->signed_norm() : nullptr;
  const QuantizeRowOps& ops = quantize_row_ops();
  // Pass 1: the amax of every unit's transformed rows.
  pool.parallel_for(units, [&](int64_t index, int worker) {
    float* x = rows[worker].data();
    for_unit_rows(p, index, [&](int64_t b, int64_t h, int64_t, int64_t first, int64_t count) {
      float amax = 0.0f;
      for (int64_t r = first; r < first + count; ++r)
        amax = std::max(amax, ops.amax(p, RowRef{b, r, h, signed_norm, p.log2_head_dim, x}));
      unit_amax[index] = amax;
    });
  });
  float tensor_amax = 0.0f;
  for (float a : unit_amax) tensor_amax = std::max(tensor_amax, a);
  require(std::isfinite(tensor_amax), FP8ATTN_STATUS_NUMERICS,
          "the input holds a NaN or an infinity" + std::string(p.rotate ? " (or overflows when rotated)" : ""));

  // Pass 2: descales, then the cast of every unit with its group's scale.
  const std::vector<float> unit_scale = scales_per_unit(p, unit_amax);
  pool.parallel_for(units, [&](int64_t index, int worker) {
    float* x = rows[worker].data();
    const float scale = unit_scale[index];
    for_unit_rows(p, index, [&](int64_t b, int64_t h, int64_t, int64_t first, int64_t count) {
      for (int64_t r = first; r < first + count; ++r)
        ops.cast(p, RowRef{b, r, h, signed_norm, p.log2_head_dim, x}, scale);
    });
  });
  return tensor_amax;
}

}  // namespace fp8attn::quant
