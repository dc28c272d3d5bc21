// Tests draw fresh random inputs on every run and print the seed, so a failure can be replayed.
#pragma once

#include <cstdint>
#include <random>

namespace fp8attn::workloads {

/// A 64-bit seed from the system's entropy source.
inline uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace fp8attn::workloads
