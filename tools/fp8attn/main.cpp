// fp8attn: the command-line tool. With no subcommand it runs the main job (FP8 attention on the
// CPU backend, tools/fp8attn/attention_job.cpp); `fp8attn spectral` computes QK spectral
// norms of a safetensors model.
#include <cstring>

#include "tools/fp8attn/attention_job.hpp"
#if __has_include("tools/fp8attn/spectral_command.hpp")
#include "tools/fp8attn/spectral_command.hpp"
#define FP8ATTN_HAS_SPECTRAL_COMMAND 1
#endif

int main(int argc, char** argv) {
#ifdef FP8ATTN_HAS_SPECTRAL_COMMAND
  if (argc > 1 && std::strcmp(argv[1], "spectral") == 0) return run_spectral_command(argc - 1, argv + 1);
#endif
  return fp8attn::tools::run_attention_job(argc, argv);
}
