#include "lib/backend/gpu/quantize_plan.hpp"

#include "kernels/sm90/quantize/quantize_launch.hpp"
#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"
#include "lib/quantize/quantize_problem.hpp"

namespace fp8attn::gpu {

size_t quantize_workspace_bytes(const sm90::quant::QuantizeParams& p) {
  checked_mul(quant::unit_count(p), int64_t{sizeof(float)}, "quantizer workspace", FP8ATTN_STATUS_OUT_OF_MEMORY);
  return quant::quantize_workspace_bytes(quant::unit_count(p));
}

sm90::quant::QuantizeParams plan_quantize(const sm90::quant::QuantizeParams& p, void* workspace) {
  sm90::quant::QuantizeParams k = p;
  k.unit_amax = static_cast<float*>(workspace);
  const std::string why = sm90::quant::kernel_refusal(k);
  FP8ATTN_REQUIRE(why.empty(), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, "the Hopper quantizer cannot run this problem: " + why);
  return k;
}

}  // namespace fp8attn::gpu
