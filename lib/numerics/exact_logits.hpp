// The FP64 oracles' logits: one query row against a run of keys, each dot product summed in
// double over the head dimension in order (lib/attention/oracle.cpp, tools/fa3_table3).
#pragma once

#include <cstdint>

namespace fp8attn::num {

/// logits[j] = scale · Σ_e q[e]·key(j)[e] for j in [first, last], summed over e = 0..d-1 in order.
/// key(j) returns a pointer to key j's d values (float or double).
/// NOTE: kKeys keys per pass over q. One key at a time is one chain of d dependent adds, bound by
/// the add latency rather than by the adds themselves, and it was most of the time of the tests
/// that compare against an oracle at a few thousand tokens. Each key's sum keeps its order over e,
/// so the bits are exactly those of one key at a time.
template <typename KeyRow>
inline void exact_logits(const double* q, int d, int64_t first, int64_t last, double scale, KeyRow key,
                         double* logits) {
  constexpr int kKeys = 8;
  int64_t j = first;
  for (; j + kKeys - 1 <= last; j += kKeys) {
    decltype(key(j)) k[kKeys];
    double dot[kKeys] = {};
    for (int t = 0; t < kKeys; ++t) k[t] = key(j + t);
    for (int e = 0; e < d; ++e) {
      const double qe = q[e];
      for (int t = 0; t < kKeys; ++t) dot[t] += qe * static_cast<double>(k[t][e]);
    }
    for (int t = 0; t < kKeys; ++t) logits[j + t] = dot[t] * scale;
  }
  for (; j <= last; ++j) {
    const auto* k = key(j);
    double dot = 0.0;
    for (int e = 0; e < d; ++e) dot += q[e] * static_cast<double>(k[e]);
    logits[j] = dot * scale;
  }
}

}  // namespace fp8attn::num
