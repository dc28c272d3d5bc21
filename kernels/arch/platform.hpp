// The arch layer's platform: the switch between the device build (nvcc, sm_90a) and the emulator
// build (kernels/ptx/build_switch.hpp), plus, in the emulator build, the SIMT runtime of
// kernels/emu that the arch functions call. Kernel code above this layer never tests
// __CUDA_ARCH__ or __CUDACC__ itself (DESIGN.md §1: only kernels/arch differs between builds).
#pragma once

#include "kernels/ptx/build_switch.hpp"

#if !FP8ATTN_DEVICE_BUILD
#include "kernels/emu/runtime.hpp"
#endif
