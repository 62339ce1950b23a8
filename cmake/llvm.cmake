# Find LLVM through llvm-config (newest first) and link its shared library.
find_program(BLKC_LLVM_CONFIG NAMES llvm-config-19 llvm-config-18 llvm-config-17
             llvm-config-16 llvm-config-15 llvm-config-14 llvm-config REQUIRED)
execute_process(COMMAND ${BLKC_LLVM_CONFIG} --includedir
                OUTPUT_VARIABLE BLKC_LLVM_INCLUDE_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${BLKC_LLVM_CONFIG} --libdir
                OUTPUT_VARIABLE BLKC_LLVM_LIB_DIR OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${BLKC_LLVM_CONFIG} --version
                OUTPUT_VARIABLE BLKC_LLVM_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${BLKC_LLVM_CONFIG} --link-shared --libs
                OUTPUT_VARIABLE _llvm_libs OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE "-l" "" _llvm_libs "${_llvm_libs}")
find_library(BLKC_LLVM_SHARED NAMES ${_llvm_libs} PATHS ${BLKC_LLVM_LIB_DIR} NO_DEFAULT_PATH REQUIRED)
set(BLKC_LLVM_LIBS ${BLKC_LLVM_SHARED})
message(STATUS "blkc: LLVM ${BLKC_LLVM_VERSION} at ${BLKC_LLVM_LIB_DIR}")
