// The amax history of one tensor under the delayed recipe (TransformerEngine's DelayedScaling):
// a ring of H per-step maxima. The slot at `position` collects the current step's reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace fp8attn {

class AmaxHistory {
 public:
  AmaxHistory() = default;
  explicit AmaxHistory(int32_t length) : values_(static_cast<size_t>(length), 0.0f) {}

  /// Records an amax for the current step; several reports keep their maximum.
  void report(float amax) {
    if (amax > values_[position_]) values_[position_] = amax;
  }
  /// The current step's amax so far.
  float current() const { return values_[position_]; }
  /// Reduces the history, current step included: the maximum, or the current step's value.
  float reduce(bool most_recent) const;
  /// Moves to the next slot and clears it (the oldest step drops out).
  void advance();

  int32_t length() const { return static_cast<int32_t>(values_.size()); }
  int32_t position() const { return position_; }
  const std::vector<float>& values() const { return values_; }
  /// Restores a history read from a blob (length and position already checked).
  void restore(std::vector<float> values, int32_t position) {
    values_ = std::move(values);
    position_ = position;
  }

 private:
  std::vector<float> values_;
  int32_t position_ = 0;
};

}  // namespace fp8attn
