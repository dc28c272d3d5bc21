#include "lib/core/logging.hpp"

#include <cctype>
#include <cstdlib>
#include <iterator>
#include <string>

#include <spdlog/spdlog.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace fp8attn {
namespace {

int32_t to_fp8attn_level(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return FP8ATTN_LOG_TRACE;
    case spdlog::level::debug: return FP8ATTN_LOG_DEBUG;
    case spdlog::level::info: return FP8ATTN_LOG_INFO;
    case spdlog::level::warn: return FP8ATTN_LOG_WARN;
    default: return FP8ATTN_LOG_ERROR;
  }
}

spdlog::level::level_enum to_spdlog_level(int32_t level) {
  switch (level) {
    case FP8ATTN_LOG_ERROR: return spdlog::level::err;
    case FP8ATTN_LOG_INFO: return spdlog::level::info;
    case FP8ATTN_LOG_DEBUG: return spdlog::level::debug;
    case FP8ATTN_LOG_TRACE: return spdlog::level::trace;
    case FP8ATTN_LOG_OFF: return spdlog::level::off;
    default: return spdlog::level::warn;
  }
}

spdlog::level::level_enum to_spdlog_level(LogLevel level) {
  switch (level) {
    case LogLevel::trace: return spdlog::level::trace;
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    default: return spdlog::level::err;
  }
}

/// Forwards each formatted message to the host's callback.
/// NOTE: null_mutex, not std::mutex: spdlog's base_sink holds its mutex around sink_it_, so a
/// callback that logged through the library again (any call on the same context) would lock it
/// twice and deadlock. spdlog::logger itself takes no lock to log, so with this sink no library
/// lock is held while the callback runs.
class CallbackSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  CallbackSink(fp8attn_log_callback callback, void* user_data) : callback_(callback), user_data_(user_data) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    callback_(user_data_, to_fp8attn_level(msg.level), msg.payload.data(), msg.payload.size());
  }
  void flush_() override {}

 private:
  fp8attn_log_callback callback_;
  void* user_data_;
};

}  // namespace

int32_t default_log_level() {
  const char* v = std::getenv("FP8ATTN_LOG_LEVEL");
  if (v == nullptr) return FP8ATTN_LOG_WARN;
  std::string s(v);
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  static const char* const kNames[] = {"error", "warn", "info", "debug", "trace", "off"};
  for (int i = 0; i < 6; ++i)
    if (s == kNames[i] || s == std::to_string(i + 1)) return FP8ATTN_LOG_ERROR + i;
  return FP8ATTN_LOG_WARN;
}

void set_log_level(spdlog::logger& logger, int32_t log_level) {
  logger.set_level(to_spdlog_level(log_level == FP8ATTN_LOG_DEFAULT ? default_log_level() : log_level));
}

std::string backend_log_name(int32_t backend_kind) {
  switch (backend_kind) {
    case FP8ATTN_BACKEND_CPU: return "cpu";
    case FP8ATTN_BACKEND_CUDA: return "cuda";
    case FP8ATTN_BACKEND_REFERENCE: return "reference";
    case FP8ATTN_BACKEND_EMULATOR: return "emulator";
    default: return "backend " + std::to_string(backend_kind);
  }
}

std::shared_ptr<spdlog::logger> make_logger(int32_t log_level, fp8attn_log_callback callback, void* user_data) {
  spdlog::sink_ptr sink;
  if (callback) {
    sink = std::make_shared<CallbackSink>(callback, user_data);
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    sink->set_pattern("[fp8attn] [%l] %v");
  }
  auto logger = std::make_shared<spdlog::logger>("fp8attn", sink);
  set_log_level(*logger, log_level);
  return logger;
}

bool Log::enabled(LogLevel level) const { return logger_ != nullptr && logger_->should_log(to_spdlog_level(level)); }

void Log::set_level(int32_t log_level) const {
  if (logger_ != nullptr) set_log_level(*logger_, log_level);
}

void Log::emit(LogLevel level, fmt::string_view format, fmt::format_args args) const {
  if (!enabled(level)) return;
  // NOTE: fmt's inline buffer: a message of the usual length makes no heap allocation here.
  fmt::memory_buffer text;
  fmt::vformat_to(std::back_inserter(text), format, args);
  logger_->log(to_spdlog_level(level), spdlog::string_view_t(text.data(), text.size()));
}

}  // namespace fp8attn
