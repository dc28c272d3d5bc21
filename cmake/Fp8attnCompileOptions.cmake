# Compile options shared by every C++ target of the project: warnings, the vector ISA of the
# CPU engine, and the sanitizers chosen with FP8ATTN_SANITIZE.
add_library(fp8attn_options INTERFACE)
target_compile_options(fp8attn_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
if(FP8ATTN_NATIVE)
  # NOTE: opt-in (the default build dispatches the engine by CPUID instead). Results do not
  # depend on it: -ffp-contract=off below holds for every ISA and the engine calls std::fma
  # explicitly, so no build fuses or reassociates differently.
  target_compile_options(fp8attn_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
# Keep IEEE semantics: the engine must round exactly like the kernel.
# NOTE: -fno-trapping-math changes no result (the project never enables floating-point traps);
# it lets GCC if-convert the comparisons of the engine's row loops (row max, the ex2 model's
# range checks, the cast's counts), which it otherwise keeps as branches because a comparison
# with a NaN may trap, and those loops then stay scalar.
target_compile_options(fp8attn_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-fno-fast-math -ffp-contract=off -fno-trapping-math>)
if(FP8ATTN_SANITIZE)
  target_compile_options(fp8attn_options INTERFACE -fsanitize=${FP8ATTN_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(fp8attn_options INTERFACE -fsanitize=${FP8ATTN_SANITIZE})
endif()
if(FP8ATTN_BUILD_FUZZERS)
  # Coverage instrumentation for libFuzzer in every library target (tests/fuzz links the driver).
  target_compile_options(fp8attn_options INTERFACE -fsanitize=fuzzer-no-link)
endif()
