// The one switch between the two builds of kernel source: nvcc for sm_90a (the device build) and
// the host C++ compiler for the SIMT emulator in kernels/emu (the emulator build), with the
// function and loop markers of each. It sits in kernels/ptx, below kernels/arch and kernels/emu,
// so that the PTX-format definitions both of them read can use the markers without including
// either; kernels/arch/platform.hpp adds the emulator's runtime to the host build.
#pragma once

// NOTE: the switch is __CUDACC__, not __CUDA_ARCH__. nvcc parses a .cu file twice; in its host
// pass __CUDA_ARCH__ is undefined but __device__ function bodies are only parsed, never emitted,
// so both passes take the inline-PTX branch and the emulator headers never enter an nvcc build.
#if defined(__CUDACC__)
#define FP8ATTN_DEVICE_BUILD 1
#else
#define FP8ATTN_DEVICE_BUILD 0
#endif

#if FP8ATTN_DEVICE_BUILD
// Functions of the arch layer: forced-inline device functions under nvcc.
#define FP8ATTN_ARCH_FN __device__ __forceinline__
// Kernel-side helpers (index math, small structs) usable from host and device code.
#if !defined(FP8ATTN_HOST_DEVICE)  // also defined, identically, by kernels/sm90/tile_config.hpp
#define FP8ATTN_HOST_DEVICE __host__ __device__ __forceinline__
#endif
// A kernel entry point. Under the emulator it is an ordinary host function run by emu::launch.
#define FP8ATTN_KERNEL __global__
#else
#define FP8ATTN_ARCH_FN inline
#if !defined(FP8ATTN_HOST_DEVICE)
#define FP8ATTN_HOST_DEVICE inline
#endif
#define FP8ATTN_KERNEL
#endif

// Loop unrolling hint for the device build (the host compiler does not know the pragma).
// Launch bounds: ptxas needs the register count at kernel entry to honour setmaxnreg.
#if FP8ATTN_DEVICE_BUILD
#define FP8ATTN_UNROLL _Pragma("unroll")
#define FP8ATTN_NO_UNROLL _Pragma("unroll 1")
#define FP8ATTN_LAUNCH_BOUNDS(threads, min_blocks) __launch_bounds__(threads, min_blocks)
#else
#define FP8ATTN_UNROLL
#define FP8ATTN_NO_UNROLL
#define FP8ATTN_LAUNCH_BOUNDS(threads, min_blocks)
#endif
