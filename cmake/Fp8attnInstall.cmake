# Install rules: the public header, libfp8attn, a CMake package (find_package(fp8attn)) and a
# pkg-config file.
include(CMakePackageConfigHelpers)

install(TARGETS fp8attn EXPORT fp8attnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/fp8attn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The license (Apache-2.0); the CMake package and the .pc file name it.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(EXPORT fp8attnTargets NAMESPACE fp8attn:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fp8attn)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fp8attnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fp8attnConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fp8attn)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fp8attnConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fp8attnConfig.cmake ${PROJECT_BINARY_DIR}/fp8attnConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/fp8attn)

# NOTE: the .pc file finds its prefix from its own folder (${pcfiledir}), so the package stays
# usable after `cmake --install --prefix <elsewhere>` or a move of the installed tree.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(FP8ATTN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH FP8ATTN_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
  string(REGEX REPLACE "/$" "" FP8ATTN_PC_TO_PREFIX "${FP8ATTN_PC_TO_PREFIX}")
  set(FP8ATTN_PC_PREFIX "\${pcfiledir}/${FP8ATTN_PC_TO_PREFIX}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/fp8attn.pc.in ${PROJECT_BINARY_DIR}/fp8attn.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fp8attn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
