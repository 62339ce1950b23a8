# llvm.cmake — the one LLVM blkc builds against. BLKC_LLVM_MAJOR below is
# the only place the version is named: scripts/setup.sh reads it from here
# to install llvm-<major>-dev, and any other LLVM is refused, so a machine
# with several (hipcc brings llvm-15 without its -dev package) builds the
# same way everywhere. Why this version: benchmarks/README.md, "LLVM".
set(BLKC_LLVM_MAJOR 15)

# The cache entry is named after the major, so a re-pinned tree searches again.
find_program(BLKC_LLVM${BLKC_LLVM_MAJOR}_CONFIG NAMES llvm-config-${BLKC_LLVM_MAJOR} llvm-config
             PATHS /usr/lib/llvm-${BLKC_LLVM_MAJOR}/bin /usr/bin NO_DEFAULT_PATH)
set(BLKC_LLVM_CONFIG ${BLKC_LLVM${BLKC_LLVM_MAJOR}_CONFIG})
if(NOT BLKC_LLVM_CONFIG)
  message(FATAL_ERROR "blkc needs LLVM ${BLKC_LLVM_MAJOR}: llvm-config-${BLKC_LLVM_MAJOR} not found "
                      "(run scripts/setup.sh, or: apt-get install llvm-${BLKC_LLVM_MAJOR}-dev)")
endif()
execute_process(COMMAND ${BLKC_LLVM_CONFIG} --version
                OUTPUT_VARIABLE BLKC_LLVM_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REGEX MATCH "^[0-9]+" _llvm_major "${BLKC_LLVM_VERSION}")
if(NOT _llvm_major STREQUAL "${BLKC_LLVM_MAJOR}")
  message(FATAL_ERROR "blkc needs LLVM ${BLKC_LLVM_MAJOR}, but ${BLKC_LLVM_CONFIG} is LLVM ${BLKC_LLVM_VERSION}")
endif()
execute_process(COMMAND ${BLKC_LLVM_CONFIG} --includedir
                OUTPUT_VARIABLE BLKC_LLVM_INCLUDE_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${BLKC_LLVM_CONFIG} --libdir
                OUTPUT_VARIABLE BLKC_LLVM_LIB_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${BLKC_LLVM_CONFIG} --link-shared --libs
                OUTPUT_VARIABLE _llvm_libs OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "-l" "" _llvm_libs "${_llvm_libs}")
find_library(BLKC_LLVM${BLKC_LLVM_MAJOR}_SHARED NAMES ${_llvm_libs} PATHS ${BLKC_LLVM_LIB_DIR} NO_DEFAULT_PATH)
set(BLKC_LLVM_SHARED ${BLKC_LLVM${BLKC_LLVM_MAJOR}_SHARED})
if(NOT BLKC_LLVM_SHARED OR NOT EXISTS "${BLKC_LLVM_INCLUDE_DIR}/llvm-c/Core.h")
  message(FATAL_ERROR "blkc needs LLVM ${BLKC_LLVM_MAJOR}'s headers and shared library: "
                      "apt-get install llvm-${BLKC_LLVM_MAJOR}-dev")
endif()
set(BLKC_LLVM_LIBS ${BLKC_LLVM_SHARED})
message(STATUS "blkc: LLVM ${BLKC_LLVM_VERSION} at ${BLKC_LLVM_LIB_DIR}")
