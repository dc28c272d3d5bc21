// A progress line for long-running tools: on a terminal, stderr shows what the tool is doing and
// for how long, rewritten in place every half second; anywhere else (a pipe, a file, CI) it
// prints nothing, so captured output stays clean. A study with many steps names the current one
// with step(), so the line says what is running now, not only that something is.
#pragma once

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace fp8attn::workloads {

class ProgressLine {
 public:
  /// Starts showing "[fp8attn] <what>: N.N s" when stderr is a terminal.
  explicit ProgressLine(std::string what) : what_(std::move(what)), start_(std::chrono::steady_clock::now()) {
    if (isatty(STDERR_FILENO) == 1) ticker_ = std::thread([this] { run(); });
  }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  /// Names the step now running: the line becomes "[fp8attn] <what>, <step>: N.N s".
  /// On a terminal the line is redrawn at once, so even a short step shows.
  void step(std::string now) {
    std::lock_guard<std::mutex> lock(mutex_);
    step_ = std::move(now);
    if (ticker_.joinable()) draw();
  }
  /// True when the line is shown (stderr is a terminal).
  bool shown() const { return ticker_.joinable(); }
  /// Leaves "[fp8attn] <what>: done in N.N s" on the terminal.
  ~ProgressLine() {
    if (!ticker_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    ticker_.join();
    std::fprintf(stderr, "\r\033[K[fp8attn] %s: done in %.1f s\n", what_.c_str(), elapsed());
  }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  /// Rewrites the line; called with mutex_ held.
  void draw() const {
    std::fprintf(stderr, "\r\033[K[fp8attn] %s%s%s: %.1f s", what_.c_str(), step_.empty() ? "" : ", ", step_.c_str(),
                 elapsed());
    std::fflush(stderr);
  }
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) {
      draw();
      wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; });
    }
  }

  std::string what_;
  std::string step_;  ///< guarded by mutex_
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread ticker_;
};

}  // namespace fp8attn::workloads
