// The main job of the `fp8attn` tool: FP8 attention on a realistic attention-sink problem on
// the chosen backend, with accuracy against the FP64 oracle, predicted against measured P
// underflow for both KV orders, and throughput.
#pragma once

namespace fp8attn::tools {

int run_attention_job(int argc, char** argv);

}  // namespace fp8attn::tools
