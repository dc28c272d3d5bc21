// Per-context logging through spdlog. A host may install a callback; otherwise messages go to
// stderr. Each context owns its logger (none is registered globally), so two contexts with
// different callbacks never see each other's messages.
//
// What goes out at which level (fp8attn_log_level):
//   WARN   a fallback the caller did not ask for (AUTO falling back to the CPU backend);
//   INFO   the backend a context chose;
//   DEBUG  each context and plan creation and each forward call: shapes, backend, tile,
//          workspace;
//   TRACE  the time each forward call took in the backend.
//
// NOTE: the host's callback never runs under a library lock: the callback
// sink has no mutex, so a callback may call back into the library, on the same context too,
// without deadlocking. It may then be called from several threads at once.
#pragma once

#include <memory>
#include <string>

#include "fp8attn/fp8attn.h"
#include "lib/core/log.hpp"

namespace fp8attn {

// NOTE: spdlog::logger is only declared here (lib/core/log.hpp); logging.cpp defines what needs it.

/// Makes a logger at the given fp8attn_log_level that writes to `callback` (when not NULL) or
/// to stderr. FP8ATTN_LOG_DEFAULT means the level in the environment variable FP8ATTN_LOG_LEVEL
/// (see default_log_level), else WARN.
std::shared_ptr<spdlog::logger> make_logger(int32_t log_level, fp8attn_log_callback callback,
                                            void* user_data);

/// The default level: FP8ATTN_LOG_LEVEL when it names a level (error, warn, info, debug, trace,
/// off, or their numbers 1..6; case-insensitive), else FP8ATTN_LOG_WARN. Read at each call.
int32_t default_log_level();

/// Sets a logger's level (an fp8attn_log_level; DEFAULT as in make_logger). Thread-safe: the
/// level is an atomic in spdlog::logger.
void set_log_level(spdlog::logger& logger, int32_t log_level);

/// "cpu", "cuda", "reference" (or "backend <n>") for log messages.
std::string backend_log_name(int32_t backend_kind);

}  // namespace fp8attn
