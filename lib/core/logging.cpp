#include "lib/core/logging.hpp"

#include <mutex>

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

/// Forwards each formatted message to the host's callback.
class CallbackSink final : public spdlog::sinks::base_sink<std::mutex> {
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

std::shared_ptr<spdlog::logger> make_logger(int32_t log_level, fp8attn_log_callback callback, void* user_data) {
  spdlog::sink_ptr sink;
  if (callback) {
    sink = std::make_shared<CallbackSink>(callback, user_data);
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    sink->set_pattern("[fp8attn] [%l] %v");
  }
  auto logger = std::make_shared<spdlog::logger>("fp8attn", sink);
  logger->set_level(to_spdlog_level(log_level));
  return logger;
}

}  // namespace fp8attn
