// The library's internal error: a status code from fp8attn.h plus a message. Code below the C
// ABI throws it; capi/ catches it at every entry point and turns it into the status and the
// caller's fp8attn_error. Nothing else is ever thrown across a layer on purpose.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "fp8attn/fp8attn.h"

namespace fp8attn {

class Error : public std::runtime_error {
 public:
  Error(int32_t status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int32_t status() const noexcept { return status_; }

 private:
  int32_t status_;
};

/// Throws Error(status, message) when `ok` is false.
inline void require(bool ok, int32_t status, const std::string& message) {
  if (!ok) throw Error(status, message);
}

}  // namespace fp8attn

/// require() whose message is built only on failure: for checks on the execute path, which
/// must not allocate when they pass (an execute call allocates nothing).
#define FP8ATTN_REQUIRE(ok, status, message)                         \
  do {                                                               \
    if (!(ok)) throw ::fp8attn::Error((status), (message));          \
  } while (0)
