// The library's logging front end: what every file that logs includes. A Log wraps a context's
// spdlog logger; only lib/core/logging.cpp includes spdlog and formats.
// NOTE: why a front end: spdlog and fmt are used header-only (libfp8attn depends on neither at
// run time), so every file that included spdlog compiled fmt's formatting engine and spdlog's
// pattern formatter again: about 200 KB of code and two thirds of each such file's compile time,
// in every build of CI. Callers still get fmt's compile-time check of the format string against
// the arguments (fmt::format_string); the arguments cross type-erased (fmt::format_args) into
// the one file that formats them, and only when the level is on.
#pragma once

#include <cstdint>

#include <fmt/core.h>

namespace spdlog {
class logger;
}

namespace fp8attn {

enum class LogLevel { trace, debug, info, warn, error };

class Log {
 public:
  explicit Log(spdlog::logger* logger = nullptr) : logger_(logger) {}

  /// Whether a message at `level` goes out (a relaxed atomic read in spdlog).
  bool enabled(LogLevel level) const;
  /// Sets the level (an fp8attn_log_level; DEFAULT as in make_logger). Thread-safe.
  void set_level(int32_t log_level) const;

  template <class... A> void trace(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::trace, f, fmt::make_format_args(a...)); }
  template <class... A> void debug(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::debug, f, fmt::make_format_args(a...)); }
  template <class... A> void info(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::info, f, fmt::make_format_args(a...)); }
  template <class... A> void warn(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::warn, f, fmt::make_format_args(a...)); }
  template <class... A> void error(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::error, f, fmt::make_format_args(a...)); }

 private:
  /// Formats and writes the message when `level` is on; does nothing otherwise.
  void emit(LogLevel level, fmt::string_view format, fmt::format_args args) const;

  spdlog::logger* logger_;
};

}  // namespace fp8attn
