// `fp8attn spectral`: QK spectral norms, logit bounds and FP8 logit scales of every attention
// layer of a safetensors model. argv[0] is "spectral"; `fp8attn spectral --help` lists options.
#pragma once

/// Runs the command; returns the process exit status (0 on success).
int run_spectral_command(int argc, char** argv);
