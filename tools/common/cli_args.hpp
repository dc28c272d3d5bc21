// Small helpers for the study tools' command lines.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fp8attn::workloads {

/// "4096,16384,65536" → {4096, 16384, 65536}.
inline std::vector<int64_t> parse_int_list(const char* s) {
  std::vector<int64_t> v;
  for (const char* p = s; *p;) {
    v.push_back(std::atoll(p));
    const char* comma = std::strchr(p, ',');
    if (!comma) break;
    p = comma + 1;
  }
  return v;
}

}  // namespace fp8attn::workloads
