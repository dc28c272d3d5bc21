// Loading the CUDA backend on a machine without a GPU or driver: the real libfp8attn_cuda
// (when the build has one) loads with dlopen and reports NO_CUDA_DEVICE with a message naming
// the device, its compute capability and the driver and runtime versions; AUTO then falls back
// to the CPU and says so at WARN through the log callback; and a backend of another ABI version
// (a fake built here) is refused with a 4xxx status naming both versions.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "lib/backend/backend.hpp"
#include "lib/backend/cuda_backend_abi.hpp"

namespace {

struct Logged {
  std::mutex mutex;
  std::vector<std::pair<int32_t, std::string>> lines;
};

void collect(void* user, int32_t level, const char* msg, size_t len) {
  auto* logged = static_cast<Logged*>(user);
  std::lock_guard<std::mutex> lock(logged->mutex);
  logged->lines.emplace_back(level, std::string(msg, len));
}

int32_t create(int32_t backend, fp8attn_context* ctx, fp8attn_error* err, Logged* logged = nullptr) {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = backend;
  o.num_threads = 1;
  if (logged != nullptr) {
    o.log_callback = &collect;
    o.log_user_data = logged;
  }
  return fp8attn_context_create(&o, ctx, err);
}

fp8attn_error fresh_error() {
  fp8attn_error err{};
  err.struct_size = sizeof err;
  return err;
}

/// AUTO falls back to the CPU backend and says so at WARN, the line containing `reason`.
void expect_auto_falls_back_with_warn(const char* reason) {
  Logged logged;
  fp8attn_context ctx = nullptr;
  fp8attn_error err = fresh_error();
  ASSERT_EQ(create(FP8ATTN_BACKEND_AUTO, &ctx, &err, &logged), FP8ATTN_OK) << err.message;
  int32_t backend = -1;
  ASSERT_EQ(fp8attn_context_get_backend(ctx, &backend, nullptr), FP8ATTN_OK);
  EXPECT_EQ(backend, FP8ATTN_BACKEND_CPU);
  fp8attn_context_destroy(ctx);
  bool warned = false;
  for (const auto& [level, line] : logged.lines)
    warned |= level == FP8ATTN_LOG_WARN && line.find(reason) != std::string::npos;
  EXPECT_TRUE(warned) << "AUTO fell back without a WARN naming " << reason;
}

/// Points the loader at `path` for the scope (the loader reads the variable on every load).
struct BackendPath {
  explicit BackendPath(const std::string& path) { setenv("FP8ATTN_CUDA_BACKEND", path.c_str(), 1); }
  ~BackendPath() { unsetenv("FP8ATTN_CUDA_BACKEND"); }
};

TEST(CudaBackendLoading, AnotherAbiVersionIsRefusedNamingBoth) {
  const BackendPath path(FP8ATTN_FAKE_BACKEND_PATH);
  fp8attn_context ctx = nullptr;
  fp8attn_error err = fresh_error();
  EXPECT_EQ(create(FP8ATTN_BACKEND_CUDA, &ctx, &err), FP8ATTN_STATUS_CUDA_BACKEND_MISSING);
  EXPECT_EQ(ctx, nullptr);
  const std::string message = err.message;
  EXPECT_NE(message.find("ABI version " + std::to_string(FP8ATTN_FAKE_BACKEND_ABI)), std::string::npos) << message;
  EXPECT_NE(message.find("ABI version " + std::to_string(fp8attn::kCudaBackendAbiVersion)), std::string::npos)
      << message;
  // AUTO falls back to the CPU, at WARN, naming the reason.
  expect_auto_falls_back_with_warn("ABI version");
}

#if defined(FP8ATTN_CUDA_BACKEND_PATH)
TEST(CudaBackendLoading, TheRealLibraryLoadsAndReportsNoCudaDevice) {
  // dlopen and the versioned entry, as the core does.
  void* handle = dlopen(FP8ATTN_CUDA_BACKEND_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  using EntryFn = const fp8attn::CudaBackendEntry* (*)();
  auto entry = reinterpret_cast<EntryFn>(dlsym(handle, FP8ATTN_CUDA_BACKEND_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry()->abi_version, fp8attn::kCudaBackendAbiVersion);
  fp8attn_error err = fresh_error();
  // NOTE: on a machine with a GPU the backend is created (and an older GPU is refused): this
  // test is about the machine without one, so it skips there (the `cuda` tests take over).
  if (std::unique_ptr<fp8attn::Backend> backend{entry()->create(0, &err)})
    GTEST_SKIP() << "a CUDA device is present: libfp8attn_cuda created its backend";
  if (err.status == FP8ATTN_STATUS_UNSUPPORTED_DEVICE)
    GTEST_SKIP() << "a CUDA device is present: " << err.message;
  EXPECT_EQ(err.status, FP8ATTN_STATUS_NO_CUDA_DEVICE) << err.message;
  std::printf("libfp8attn_cuda reports: %s\n", err.message);
  const std::string message = err.message;
  for (const char* part : {"device 0", "compute capability", "driver", "runtime"})
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' missing from: " << message;

  // Through the C API: the loader finds the library next to libfp8attn.so (no variable set).
  unsetenv("FP8ATTN_CUDA_BACKEND");
  fp8attn_context ctx = nullptr;
  err = fresh_error();
  EXPECT_EQ(create(FP8ATTN_BACKEND_CUDA, &ctx, &err), FP8ATTN_STATUS_NO_CUDA_DEVICE) << err.message;
  EXPECT_NE(std::string(err.message).find("runtime"), std::string::npos) << err.message;
  expect_auto_falls_back_with_warn("FP8ATTN_STATUS_NO_CUDA_DEVICE");
  // NOTE: the library stays loaded, as the core keeps it (unloading cudart is unsafe).
}
#endif

}  // namespace
