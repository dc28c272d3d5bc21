// The source location of an emulated shared-memory access, as its caller's default argument.
// NOTE: not std::source_location alone: clang 14 (the fuzz build) has no
// __builtin_source_location, so libstdc++ 12's <source_location> is empty there; clang takes the
// __builtin_FILE/LINE/COLUMN default arguments instead, evaluated at the outermost call site as
// std::source_location::current() is.
#pragma once

#if !defined(__clang__)
#include <source_location>
#endif

namespace fp8attn::emu {

struct SourceSite {
  const char* file = "";
  unsigned line_number = 0;
  unsigned column_number = 0;

#if defined(__clang__)
  static constexpr SourceSite current(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE(),
                                      unsigned column = __builtin_COLUMN()) {
    return SourceSite{file, line, column};
  }
#else
  // NOTE: GCC 12 has no __builtin_COLUMN, but its <source_location> works.
  static constexpr SourceSite current(std::source_location site = std::source_location::current()) {
    return SourceSite{site.file_name(), site.line(), site.column()};
  }
#endif
  constexpr const char* file_name() const { return file; }
  constexpr unsigned line() const { return line_number; }
  constexpr unsigned column() const { return column_number; }
};

}  // namespace fp8attn::emu
