// The wavefront model of bank_conflicts.hpp and the per-CTA recorder of smem_traffic.hpp.
#include "kernels/emu/bank_conflicts.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "kernels/emu/smem_traffic.hpp"

namespace fp8attn::emu {
namespace {

constexpr int kBanks = 32;

/// One phase: the lanes [first, first + lanes) of the mask.
void add_phase(const uint32_t (&offsets)[32], uint32_t mask, uint32_t bytes, int first, int lanes, SmemWavefronts& out) {
  // (line, bank) of every word the phase touches; a word touched twice is served once.
  std::pair<uint32_t, uint32_t> words[32 * 4];
  int n = 0;
  for (int l = first; l < first + lanes; ++l) {
    if (!(mask >> l & 1u)) continue;
    const uint32_t begin = offsets[l] / 4, end = (offsets[l] + std::max(bytes, 1u) - 1) / 4;
    for (uint32_t w = begin; w <= end && n < 32 * 4; ++w) words[n++] = {w / kBanks, w % kBanks};
  }
  if (n == 0) return;
  std::sort(words, words + n);
  n = static_cast<int>(std::unique(words, words + n) - words);
  int per_bank[kBanks] = {};
  for (int i = 0; i < n; ++i) ++per_bank[words[i].second];
  out.wavefronts += static_cast<uint64_t>(*std::max_element(per_bank, per_bank + kBanks));
  out.minimum += static_cast<uint64_t>((n + kBanks - 1) / kBanks);
}

}  // namespace

SmemWavefronts warp_access_wavefronts(const uint32_t (&offsets)[32], uint32_t active_mask, uint32_t bytes) {
  SmemWavefronts out;
  out.instructions = 1;
  const int lanes = bytes <= 4 ? 32 : bytes <= 8 ? 16 : 8;
  for (int first = 0; first < 32; first += lanes) add_phase(offsets, active_mask, bytes, first, lanes, out);
  return out;
}

SmemWavefronts matrix_access_wavefronts(const uint32_t (&row_offsets)[32], int count) {
  const uint32_t mask = count >= 4 ? 0xffffffffu : (1u << (8 * count)) - 1u;
  return warp_access_wavefronts(row_offsets, mask, 16);
}

void SmemTrafficRecorder::reset(unsigned threads) {
  sites_.clear();
  site_names_.clear();
  per_site_.clear();
  instance_.assign(threads, {});
  open_.clear();
  per_warp_.assign((threads + 31) / 32, {});
}

uint32_t SmemTrafficRecorder::site_id(const SourceSite& site) {
  const SiteKey key{site.file_name(), site.line(), site.column()};
  auto [it, fresh] = sites_.try_emplace(key, static_cast<uint32_t>(site_names_.size()));
  if (fresh) {
    site_names_.push_back(key);
    per_site_.emplace_back();
  }
  return it->second;
}

void SmemTrafficRecorder::generic(unsigned thread, uint32_t offset, uint32_t bytes, const SourceSite& site) {
  const uint32_t id = site_id(site);
  const uint32_t instance = instance_[thread][id]++;
  const unsigned warp = thread / 32, lane = thread % 32;
  // NOTE: 40 bits of instance, 18 of site, 6 of warp: a CTA has at most 32 warps.
  const uint64_t key = (uint64_t{warp} << 58) | (uint64_t{id} << 40) | (instance & ((uint64_t{1} << 40) - 1));
  Open& open = open_[key];
  open.mask |= 1u << lane;
  open.offsets[lane] = offset;
  open.bytes = std::max(open.bytes, bytes);
  open.site = id;
  if (open.mask == 0xffffffffu) {
    close(warp, open);
    open_.erase(key);
  }
}

void SmemTrafficRecorder::close(unsigned warp, const Open& open) {
  const SmemWavefronts w = warp_access_wavefronts(open.offsets, open.mask, open.bytes);
  per_warp_[warp][static_cast<int>(SmemPath::Generic)] += w;
  per_site_[open.site] += w;
}

void SmemTrafficRecorder::add(unsigned warp, SmemPath path, const SmemWavefronts& w) {
  per_warp_[warp][static_cast<int>(path)] += w;
}

void SmemTrafficRecorder::flush_into(SmemTraffic& sink) {
  for (const auto& [key, open] : open_) close(static_cast<unsigned>(key >> 58), open);
  open_.clear();
  std::lock_guard lock(sink.mutex);
  if (sink.per_warp.size() < per_warp_.size()) sink.per_warp.resize(per_warp_.size());
  for (size_t w = 0; w < per_warp_.size(); ++w)
    for (int p = 0; p < kSmemPaths; ++p) sink.per_warp[w][p] += per_warp_[w][p];
  for (size_t s = 0; s < site_names_.size(); ++s) {
    std::string file = site_names_[s].file;
    const size_t kernels = file.rfind("kernels/");
    if (kernels != std::string::npos) file = file.substr(kernels);
    sink.per_site[file + ":" + std::to_string(site_names_[s].line)] += per_site_[s];
  }
  ++sink.ctas;
}

}  // namespace fp8attn::emu
