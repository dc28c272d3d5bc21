#include "lib/backend/gpu/combine_plan.hpp"

#include <string>

#include "kernels/sm90/combine/combine_launch.hpp"
#include "lib/core/error.hpp"

namespace fp8attn::gpu {

void check_combine_supported(const sm90::combine::CombineParams& p) {
  if (sm90::combine::row_count(p) == 0) return;
  const std::string why = sm90::combine::kernel_refusal(p);
  FP8ATTN_REQUIRE(why.empty(), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, "the combine kernel cannot run this problem: " + why);
}

}  // namespace fp8attn::gpu
