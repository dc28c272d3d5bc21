// Shared by the hardening regression tests: each reproducer runs in a forked child
// with a time limit (a hang fails instead of stalling the suite) and, outside the sanitizer
// builds, an address-space limit (a runaway allocation fails instead of eating the machine).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FP8ATTN_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FP8ATTN_TEST_SANITIZED 1
#endif
#endif
#ifndef FP8ATTN_TEST_SANITIZED
#define FP8ATTN_TEST_SANITIZED 0
#endif

namespace fp8attn::test {

/// Runs `body` in a forked child with `seconds` of wall time and (unsanitized) `address_limit`
/// bytes of address space. `body` returns "" on success or what went wrong. The child's death by
/// a signal, its timeout, or a non-empty answer all fail the calling test.
inline void run_isolated(const std::function<std::string()>& body, unsigned seconds = 30,
                         uint64_t address_limit = uint64_t{8} << 30) {
  fflush(nullptr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0) << "fork failed";
  if (pid == 0) {
    if (!FP8ATTN_TEST_SANITIZED) {
      rlimit lim{address_limit, address_limit};
      setrlimit(RLIMIT_AS, &lim);
    }
    alarm(seconds);
    const std::string problem = body();
    if (!problem.empty()) fprintf(stderr, "FAILED: %s\n", problem.c_str());
    fflush(nullptr);
    _exit(problem.empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  if (WIFSIGNALED(status)) {
    FAIL() << "the reproducer died by signal " << WTERMSIG(status)
           << (WTERMSIG(status) == SIGALRM ? " (it ran past its time limit: a hang)" : "");
  } else {
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the reproducer failed (see its FAILED line above)";
  }
}

/// "" when `got` is `want`, else a message with the error text.
inline std::string expect_status(int32_t got, int32_t want, const fp8attn_error& err, const std::string& what) {
  if (got == want) return "";
  return what + ": status " + fp8attn_status_name(got) + " (" + err.message + "), expected " +
         fp8attn_status_name(want);
}

inline fp8attn_error fresh_error() {
  fp8attn_error e{};
  e.struct_size = sizeof e;
  return e;
}

inline fp8attn_context make_cpu_context(int32_t threads = 2) {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CPU;
  o.num_threads = threads;
  o.log_level = FP8ATTN_LOG_OFF;
  fp8attn_context ctx = nullptr;
  if (fp8attn_context_create(&o, &ctx, nullptr) != FP8ATTN_OK) return nullptr;
  return ctx;
}

/// A host tensor with the given shape and strides (elements).
inline fp8attn_tensor host_tensor(void* data, int32_t dtype, std::vector<int64_t> shape, std::vector<int64_t> stride) {
  fp8attn_tensor t{};
  t.struct_size = sizeof t;
  t.data = data;
  t.dtype = dtype;
  t.device = FP8ATTN_DEVICE_HOST;
  t.rank = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    t.shape[i] = shape[i];
    t.stride[i] = stride[i];
  }
  return t;
}

/// Dense row-major strides of `shape`.
inline std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

inline std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

inline uint64_t fresh_seed() { return std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}(); }

/// CRC32C (Castagnoli, reflected 0x82F63B78), bit by bit: independent of the library's table.
inline uint32_t crc32c_bitwise(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

/// Rewrites a scale-state blob's trailing CRC after an edit.
inline void reseal_blob(std::vector<uint8_t>& blob) {
  const uint32_t c = crc32c_bitwise(blob.data(), blob.size() - 4);
  for (int i = 0; i < 4; ++i) blob[blob.size() - 4 + i] = static_cast<uint8_t>(c >> (8 * i));
}

inline void put_u32(std::vector<uint8_t>& blob, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) blob[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace fp8attn::test
