// What the benches measured against memcpy share (combine, KV append, decode): the ceiling, a
// parallel memcpy on every core, and the table that divides each benchmark's rate by the memcpy
// of the same bytes in the same run.
//
// Naming: a benchmark BM_<op>/<args...> reports a "B/s" counter; BM_memcpy/<args...> copies the
// same bytes. Its row in the table is divided by the BM_memcpy run whose arguments are the longest
// prefix of its own (BM_memcpy with no argument when one byte count serves every configuration).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tools/bench/every_core.hpp"

namespace fp8attn::bench {

/// One iteration copies `bytes` / 2 bytes with one thread per core (EveryCore): the rate it reports counts
/// each byte read and written, so it is comparable with an operation that moves `bytes`.
inline void run_parallel_memcpy(benchmark::State& state, double bytes_moved) {
  const size_t bytes = static_cast<size_t>(bytes_moved / 2);
  std::vector<uint8_t> x(bytes, 1), y(bytes);
  EveryCore cores;
  const size_t chunk = (bytes + cores.size() - 1) / cores.size();
  auto copy = [&](int t) {
    const size_t begin = std::min(bytes, chunk * t), end = std::min(bytes, begin + chunk);
    std::memcpy(y.data() + begin, x.data() + begin, end - begin);
  };
  for (auto _ : state) {
    cores.run(copy);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["B/s"] =
      benchmark::Counter(2.0 * static_cast<double>(bytes), benchmark::Counter::kIsIterationInvariantRate);
}

/// One iteration reads `bytes_moved` bytes (a sum of 64-byte lines, one thread per core) and
/// writes nothing: the rate of a read stream on the same cores, for operations that mostly read.
/// NOTE: memcpy's rate counts its writes too, which use the memory's other direction; an operation
/// whose bytes are mostly reads (a decode, a combine of many parts) can reach at most this rate,
/// which can be well under memcpy's.
inline void run_parallel_read(benchmark::State& state, double bytes_moved) {
  const size_t words = static_cast<size_t>(bytes_moved / 8);
  std::vector<uint64_t> x(words, 1);
  EveryCore cores;
  const size_t chunk = (words + cores.size() - 1) / cores.size();
  std::vector<uint64_t> sums(static_cast<size_t>(cores.size()));
  auto read = [&](int t) {
    const size_t begin = std::min(words, chunk * t), end = std::min(words, begin + chunk);
    // NOTE: eight independent sums over each 64-byte line: the loop vectorizes, and its
    // additions are far cheaper than the line's transfer.
    uint64_t acc[8] = {};
    size_t i = begin;
    for (; i + 8 <= end; i += 8)
      for (int j = 0; j < 8; ++j) acc[j] += x[i + j];
    for (; i < end; ++i) acc[0] += x[i];
    uint64_t total = 0;
    for (uint64_t a : acc) total += a;
    sums[static_cast<size_t>(t)] = total;
  };
  for (auto _ : state) {
    cores.run(read);
    benchmark::DoNotOptimize(sums.data());
  }
  state.counters["B/s"] =
      benchmark::Counter(8.0 * static_cast<double>(words), benchmark::Counter::kIsIterationInvariantRate);
}

/// Console output, then one row per BM_<op> run: its GB/s, its memcpy's and the ratio.
class MemcpyRatioReporter : public benchmark::ConsoleReporter {
 public:
  MemcpyRatioReporter(std::string op, std::string legend) : op_("BM_" + std::move(op)), legend_(std::move(legend)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs)
      if (auto it = r.counters.find("B/s"); it != r.counters.end()) rates_[strip(r.benchmark_name())] = it->second.value;
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    // The other ceilings some benches run: BM_read (a read stream) and BM_products (the decode's
    // multiply-adds alone, tools/bench/decode_vs_memcpy.cpp).
    std::vector<std::string> others;
    for (const char* other : {"BM_read", "BM_products"})
      if (std::any_of(rates_.begin(), rates_.end(), [&](const auto& r) { return r.first.rfind(other, 0) == 0; }))
        others.emplace_back(other);
    std::printf("\n%-44s %10s %12s %10s", op_.c_str(), "GB/s", "memcpy GB/s", "/ memcpy");
    for (const std::string& other : others) {
      const std::string what = other.substr(3);
      std::printf(" %12s %10s", (what + " GB/s").c_str(), ("/ " + what).c_str());
    }
    std::printf("\n");
    for (const auto& [name, rate] : rates_) {
      if (name.rfind(op_ + "/", 0) != 0 && name != op_) continue;
      const double ceiling = ceiling_for("BM_memcpy", name.substr(op_.size()));
      if (ceiling <= 0.0) continue;
      std::printf("%-44s %10.2f %12.2f %10.3f", name.c_str(), rate * 1e-9, ceiling * 1e-9, rate / ceiling);
      for (const std::string& other : others) {
        const double c = ceiling_for(other, name.substr(op_.size()));
        if (c > 0.0)
          std::printf(" %12.2f %10.3f", c * 1e-9, rate / c);
        else
          std::printf(" %12s %10s", "-", "-");
      }
      std::printf("\n");
    }
    std::printf("%s\n(%u threads; the memcpy copies half the bytes: each is read and written)\n", legend_.c_str(),
                std::max(1u, std::thread::hardware_concurrency()));
  }

 private:
  static std::string strip(std::string name) {
    const std::string suffix = "/real_time";
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      name.resize(name.size() - suffix.size());
    return name;
  }
  /// The ceiling run (BM_memcpy or BM_read) whose arguments are the longest prefix of `args` ("/a/b/c").
  double ceiling_for(const std::string& ceiling, std::string args) const {
    for (;;) {
      if (auto it = rates_.find(ceiling + args); it != rates_.end()) return it->second;
      if (args.empty()) return 0.0;
      args.resize(args.rfind('/'));
    }
  }
  std::string op_, legend_;
  std::map<std::string, double> rates_;
};

}  // namespace fp8attn::bench
