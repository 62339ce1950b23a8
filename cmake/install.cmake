# Install libblkc, its headers, the CLI, a CMake package and blkc.pc.
# libblkc_runtime (blkc::runtime, blkc::runtime_static) is the library that
# `blkc compile --emit=aot` output links; it has its own blkc_runtime.pc.
install(TARGETS blkc blkc_runtime blkc_runtime_static EXPORT blkcTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS blkc_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS blkc_cc RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/blkc)
install(DIRECTORY include/blkc DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT blkcTargets NAMESPACE blkc::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/blkc)
include(CMakePackageConfigHelpers)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/blkcConfig.cmake.in
"@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
find_dependency(Threads)
include(\"\${CMAKE_CURRENT_LIST_DIR}/blkcTargets.cmake\")
")
configure_package_config_file(${CMAKE_CURRENT_BINARY_DIR}/blkcConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/blkcConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/blkc)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/blkcConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/blkcConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/blkcConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/blkc)
# The .pc files are relocatable: prefix is found from the file's own place
# (${pcfiledir}), so `cmake --install build --prefix DIR` works anywhere.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(BLKC_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _pc_up "/_p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/_p")
  string(REGEX REPLACE "/$" "" _pc_up "${_pc_up}")
  set(BLKC_PC_PREFIX "\${pcfiledir}/${_pc_up}")
endif()
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/blkc.pc.in
               ${CMAKE_CURRENT_BINARY_DIR}/blkc.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/blkc.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/blkc_runtime.pc.in
               ${CMAKE_CURRENT_BINARY_DIR}/blkc_runtime.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/blkc_runtime.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
