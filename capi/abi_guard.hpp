// The catch-all at every entry point: runs the body, and turns whatever it throws into a status
// and a message in the caller's fp8attn_error. No exception leaves the library.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "fp8attn/fp8attn.h"
#include "lib/core/error.hpp"

namespace fp8attn::capi {

/// Writes status and message into `err` when it is usable (non-NULL, struct_size covers the
/// fields written). The message is truncated to the caller's buffer and always NUL-terminated.
inline void report(fp8attn_error* err, int32_t status, const char* message) {
  if (err == nullptr || err->struct_size < offsetof(fp8attn_error, status) + sizeof(int32_t)) return;
  err->status = status;
  if (err->struct_size <= offsetof(fp8attn_error, message)) return;
  const size_t room = std::min<size_t>(err->struct_size - offsetof(fp8attn_error, message), FP8ATTN_ERROR_MESSAGE_LEN);
  const size_t n = std::min(std::strlen(message), room - 1);
  std::memcpy(err->message, message, n);
  err->message[n] = '\0';
}

/// Runs `body` (which returns nothing and throws fp8attn::Error on failure).
template <class Body>
int32_t guarded(fp8attn_error* err, Body&& body) noexcept {
  try {
    body();
    report(err, FP8ATTN_OK, "");
    return FP8ATTN_OK;
  } catch (const Error& e) {
    report(err, e.status(), e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    report(err, FP8ATTN_STATUS_OUT_OF_MEMORY, "out of host memory");
    return FP8ATTN_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    const std::string message = std::string("internal error: ") + e.what();
    report(err, FP8ATTN_STATUS_INTERNAL, message.c_str());
    return FP8ATTN_STATUS_INTERNAL;
  } catch (...) {
    report(err, FP8ATTN_STATUS_INTERNAL, "internal error: unknown exception");
    return FP8ATTN_STATUS_INTERNAL;
  }
}

}  // namespace fp8attn::capi
