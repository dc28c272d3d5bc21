// One CTA's recorder of shared-memory wavefronts (the model of bank_conflicts.hpp), active only
// when the launch gave a SmemTraffic. Generic loads and stores arrive one lane at a time (each
// lane is a fiber), so they are grouped into warp instructions here: the accesses of a warp's
// lanes at the same call site with the same dynamic instance (the lane's n-th access from that
// site) are one instruction. Collective accesses (ldmatrix, wgmma, TMA) arrive whole.
#pragma once

#include <cstdint>
#include "kernels/emu/source_site.hpp"
#include <unordered_map>
#include <vector>

#include "kernels/emu/bank_conflicts.hpp"

namespace fp8attn::emu {

class SmemTrafficRecorder {
 public:
  void reset(unsigned threads);
  /// One lane's ld.shared / st.shared of `bytes` at `offset`, from `site`.
  void generic(unsigned thread, uint32_t offset, uint32_t bytes, const SourceSite& site);
  /// A whole instruction of another path, on warp `warp`.
  void add(unsigned warp, SmemPath path, const SmemWavefronts& w);
  /// Counts the instructions still open (lanes that diverged) and adds everything to `sink`.
  void flush_into(SmemTraffic& sink);

 private:
  struct Open {
    uint32_t mask = 0;
    uint32_t bytes = 0;
    uint32_t site = 0;
    uint32_t offsets[32] = {};
  };
  uint32_t site_id(const SourceSite& site);
  void close(unsigned warp, const Open& open);

  struct SiteKey {
    const char* file;
    uint32_t line, column;
    bool operator==(const SiteKey&) const = default;
  };
  struct SiteHash {
    size_t operator()(const SiteKey& k) const {
      return std::hash<const void*>()(k.file) ^ (size_t{k.line} * 0x9e3779b97f4a7c15ull) ^ k.column;
    }
  };
  std::unordered_map<SiteKey, uint32_t, SiteHash> sites_;
  std::vector<SiteKey> site_names_;
  std::vector<SmemWavefronts> per_site_;
  /// [thread]: site id -> accesses so far (the next one's dynamic instance).
  std::vector<std::unordered_map<uint32_t, uint32_t>> instance_;
  /// (warp, site, instance) -> the lanes seen so far.
  std::unordered_map<uint64_t, Open> open_;
  std::vector<std::array<SmemWavefronts, kSmemPaths>> per_warp_;
};

}  // namespace fp8attn::emu
