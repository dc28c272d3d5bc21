// Per-context logging through spdlog. A host may install a callback; otherwise messages go to
// stderr. Each context owns its logger (none is registered globally), so two contexts with
// different callbacks never see each other's messages.
#pragma once

#include <memory>

#include <spdlog/spdlog.h>

#include "fp8attn/fp8attn.h"

namespace fp8attn {

/// Makes a logger at the given fp8attn_log_level that writes to `callback` (when not NULL) or
/// to stderr.
std::shared_ptr<spdlog::logger> make_logger(int32_t log_level, fp8attn_log_callback callback,
                                            void* user_data);

}  // namespace fp8attn
