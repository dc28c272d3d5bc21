// The threads a CTA's scheduler may run next without polling: one bit per thread, searched in
// round-robin order from a starting thread (kernels/emu/cta.cpp, pick_next).
//
// NOTE: why bits: the scheduler picks a thread at every switch, and scanning 384 thread slots for
// the runnable ones was a sixth of an emulated kernel's time. The set gives the same choice as that
// scan, in the same order, so a shuffle seed still names the same schedule.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace fp8attn::emu {

class ReadySet {
 public:
  /// n threads, all ready or none.
  void reset(unsigned n, bool ready) {
    n_ = n;
    words_.assign((n + 63) / 64, 0);
    count_ = 0;
    if (ready) {
      for (unsigned t = 0; t < n; ++t) set(t, true);
    }
  }

  void set(unsigned t, bool ready) {
    uint64_t& w = words_[t / 64];
    const uint64_t bit = uint64_t{1} << (t % 64);
    if (((w & bit) != 0) == ready) return;
    w ^= bit;
    count_ += ready ? 1 : -1;
  }

  unsigned count() const { return count_; }

  /// The k-th ready thread (k < count()) in the order start, start + 1, ..., n - 1, 0, ...,
  /// start - 1.
  unsigned nth_from(unsigned start, unsigned k) const {
    const unsigned first = start / 64, words = static_cast<unsigned>(words_.size());
    const uint64_t at_or_after = ~uint64_t{0} << (start % 64);
    // The start's word from the start on, the words after it, those before it, then the start's
    // word below the start.
    for (unsigned step = 0; step <= words; ++step) {
      const unsigned i = (first + step) % words;
      uint64_t w = words_[i];
      if (step == 0) w &= at_or_after;
      if (step == words) w &= ~at_or_after;
      const auto c = static_cast<unsigned>(std::popcount(w));
      if (k >= c) {
        k -= c;
        continue;
      }
      for (; k > 0; --k) w &= w - 1;  // drop the k lowest set bits
      return i * 64 + static_cast<unsigned>(std::countr_zero(w));
    }
    return n_;  // k ≥ count(): no such thread
  }

 private:
  std::vector<uint64_t> words_;
  unsigned n_ = 0;
  unsigned count_ = 0;
};

}  // namespace fp8attn::emu
