// Contexts: AUTO falls back to the CPU on a machine without the CUDA backend and says why
// at WARN through the host's log callback; CUDA asked for explicitly fails with a 4xxx status naming
// the missing library; log levels filter.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"

namespace {

struct Captured {
  std::mutex mutex;
  std::vector<std::pair<int32_t, std::string>> lines;
};

void capture(void* user, int32_t level, const char* msg, size_t len) {
  auto* c = static_cast<Captured*>(user);
  std::lock_guard<std::mutex> lock(c->mutex);
  c->lines.emplace_back(level, std::string(msg, len));
}

TEST(Context, AutoFallsBackToCpuAndLogsWhy) {
  Captured captured;
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_AUTO;
  o.log_level = FP8ATTN_LOG_INFO;
  o.log_callback = capture;
  o.log_user_data = &captured;
  fp8attn_context ctx = nullptr;
  fp8attn_error err{sizeof err, -1, {0}};
  ASSERT_EQ(fp8attn_context_create(&o, &ctx, &err), FP8ATTN_OK) << err.message;
  int32_t backend = -1;
  ASSERT_EQ(fp8attn_context_get_backend(ctx, &backend, &err), FP8ATTN_OK);
  fp8attn_context_destroy(ctx);
  if (backend == FP8ATTN_BACKEND_CUDA) GTEST_SKIP() << "a CUDA backend and device are present; no fallback to log";
  EXPECT_EQ(backend, FP8ATTN_BACKEND_CPU);
  bool said_why = false;
  for (const auto& [level, line] : captured.lines) {
    std::printf("log level %d: %s\n", level, line.c_str());
    // NOTE: WARN, the default level, so that a host that did not ask for logs still hears it.
    said_why |= level == FP8ATTN_LOG_WARN && line.find("falling back to the CPU") != std::string::npos &&
                line.find("libfp8attn_cuda") != std::string::npos;
  }
  EXPECT_TRUE(said_why) << "no WARN line naming the fallback and the missing library";
}

TEST(Context, WarnLevelHidesTheInfoLine) {
  Captured captured;
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.log_callback = capture;
  o.log_user_data = &captured;  // default level: WARN
  fp8attn_context ctx = nullptr;
  ASSERT_EQ(fp8attn_context_create(&o, &ctx, nullptr), FP8ATTN_OK);
  fp8attn_context_destroy(ctx);
  for (const auto& [level, line] : captured.lines) EXPECT_LE(level, FP8ATTN_LOG_WARN) << line;
}

TEST(Context, ExplicitCudaWithoutTheBackendIsA4xxxNamingTheLibrary) {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CUDA;
  fp8attn_context ctx = reinterpret_cast<fp8attn_context>(0x1);  // poison: must stay untouched
  fp8attn_error err{sizeof err, 0, {0}};
  const int32_t status = fp8attn_context_create(&o, &ctx, &err);
  if (status == FP8ATTN_OK) {
    fp8attn_context_destroy(ctx);
    GTEST_SKIP() << "a CUDA backend and device are present";
  }
  std::printf("%s: %s\n", fp8attn_status_name(status), err.message);
  EXPECT_EQ(status / 1000, 4);
  EXPECT_EQ(err.status, status);
  EXPECT_NE(std::string(err.message).find("libfp8attn_cuda"), std::string::npos);
  EXPECT_EQ(ctx, reinterpret_cast<fp8attn_context>(0x1));
}

}  // namespace

namespace {

// The REFERENCE backend's workspace grows with max_seqlen_k; a size that overflows size_t is a
// BAD_SHAPE, not a wrapped small number.
TEST(PlanWorkspace, ReferenceSizeOverflowIsBadShape) {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_REFERENCE;
  fp8attn_context ctx = nullptr;
  ASSERT_EQ(fp8attn_context_create(&o, &ctx, nullptr), FP8ATTN_OK);
  fp8attn_attention_desc desc{};
  fp8attn_attention_desc_init(&desc);
  fp8attn_plan plan = nullptr;
  ASSERT_EQ(fp8attn_plan_create(ctx, &desc, &plan, nullptr), FP8ATTN_OK);
  size_t bytes = 12345;
  fp8attn_error err{sizeof err, 0, {0}};
  EXPECT_EQ(fp8attn_plan_workspace_size(plan, 1, 1, int64_t{1} << 61, &bytes, &err), FP8ATTN_STATUS_BAD_SHAPE);
  EXPECT_EQ(bytes, 12345u) << "output written on failure";
  std::printf("%s\n", err.message);
  EXPECT_EQ(fp8attn_plan_workspace_size(plan, 1, 1, 4096, &bytes, &err), FP8ATTN_OK);
  EXPECT_GT(bytes, size_t{4096} * 257 * sizeof(double));
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
}

}  // namespace
