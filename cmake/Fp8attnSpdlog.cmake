# spdlog and fmt, header-only: their code is compiled into the core with hidden visibility, so
# that libfp8attn's only runtime dependencies are the C/C++ runtime and OpenBLAS (checked by
# tests/abi/check_runtime_deps.sh against tests/abi/runtime_deps.txt).
#
# NOTE: Debian's spdlog::spdlog_header_only still links fmt::fmt, the shared libfmt, so the
# target below takes only the packages' include folders and compile definitions.
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
add_library(fp8attn_spdlog INTERFACE)
foreach(imported spdlog::spdlog_header_only fmt::fmt-header-only)
  get_target_property(dirs ${imported} INTERFACE_INCLUDE_DIRECTORIES)
  if(dirs)
    target_include_directories(fp8attn_spdlog SYSTEM INTERFACE ${dirs})
  endif()
endforeach()
# SPDLOG_FMT_EXTERNAL: spdlog uses the fmt headers above (the package was built that way);
# FMT_HEADER_ONLY: fmt's functions are inline too. Neither SPDLOG_COMPILED_LIB nor
# SPDLOG_SHARED_LIB, so spdlog's .cpp parts come inline from its headers.
target_compile_definitions(fp8attn_spdlog INTERFACE SPDLOG_FMT_EXTERNAL FMT_HEADER_ONLY=1)
target_link_libraries(fp8attn_spdlog INTERFACE Threads::Threads)
