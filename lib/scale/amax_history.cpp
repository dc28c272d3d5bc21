#include "lib/scale/amax_history.hpp"

#include <algorithm>

namespace fp8attn {

float AmaxHistory::reduce(bool most_recent) const {
  if (most_recent) return values_[position_];
  return *std::max_element(values_.begin(), values_.end());
}

void AmaxHistory::advance() {
  position_ = (position_ + 1) % length();
  values_[position_] = 0.0f;
}

}  // namespace fp8attn
