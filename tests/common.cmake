# blkc_c_test(NAME SOURCE LABEL [INTERNAL]) — one executable, one ctest entry.
# Exit code 77 marks a skip. INTERNAL links the static library with every
# internal symbol; otherwise the test uses only the public libblkc.
function(blkc_c_test name src label)
  add_executable(${name} ${src})
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE
    BLKC_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  if("INTERNAL" IN_LIST ARGN)
    target_link_libraries(${name} PRIVATE blkc_internal m)
  else()
    target_link_libraries(${name} PRIVATE blkc m)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${label}" SKIP_RETURN_CODE 77
                       TIMEOUT 120)
endfunction()

# blkc_gpu_compile_tests(PREFIX LABEL [HIP]): the
# tests of one GPU source backend through tests/nvrtc/gpu_compile_test.c
# (tests/nvrtc for CUDA, tests/hip for HIP; HIP builds the driver with
# GPU_TEST_HIP):
#   PREFIX_compile   hand-built kernels through the vendor compiler (LABEL;
#                    exit 77 without it)
#   PREFIX_golden    generated source of the golden kernels (label golden)
#   PREFIX_vec       the specialized forms (IR_ASSUME_* set): goldens *_vec /
#                    *_pipe, and the instructions in the vendor compiler's
#                    output (LABEL and golden)
#   PREFIX_examples, PREFIX_examples_spec, PREFIX_blk   every kernel of
#                    examples/*.blk (plain; with every specialization fact,
#                    plus lib/), and of tests/gpu/data, tests/cli/data and
#                    lib/ through the whole pipeline
#   PREFIX_gpuir     --emit=gpu-ir goldens of examples matmul, softmax,
#                    flash_attention, tests/emu/tslice.blk and tparts.blk
#                    (dots a part at a time), each checked
#                    against the C of the same module (LABEL and golden)
#   PREFIX_regcheck  (CUDA) the static checks of the register-resident
#                    matmul main loop: ptxas -v spills, PTX shared traffic
function(blkc_gpu_compile_tests prefix label)
  set(_t ${prefix}_compile)
  blkc_c_test(${_t} ${PROJECT_SOURCE_DIR}/tests/nvrtc/gpu_compile_test.c ${label} INTERNAL)
  if("HIP" IN_LIST ARGN)
    target_compile_definitions(${_t} PRIVATE GPU_TEST_HIP)
  endif()
  set_tests_properties(${_t} PROPERTIES TIMEOUT 300)
  add_test(NAME ${prefix}_golden COMMAND ${_t} golden)
  set_tests_properties(${prefix}_golden PROPERTIES LABELS "golden" SKIP_RETURN_CODE 77)
  add_test(NAME ${prefix}_vec COMMAND ${_t} vec)
  set_tests_properties(${prefix}_vec PROPERTIES LABELS "${label};golden"
                       SKIP_RETURN_CODE 77 TIMEOUT 300)
  if(NOT EXISTS ${PROJECT_SOURCE_DIR}/compiler/pipeline.c)
    return()
  endif()
  target_compile_definitions(${_t} PRIVATE BLKC_HAVE_PIPELINE)
  file(GLOB _blk_examples ${PROJECT_SOURCE_DIR}/examples/*.blk)
  file(GLOB _blk_lib ${PROJECT_SOURCE_DIR}/lib/*.blk)
  add_test(NAME ${prefix}_gpuir COMMAND ${_t} gpuir
           ${PROJECT_SOURCE_DIR}/examples/matmul.blk
           ${PROJECT_SOURCE_DIR}/examples/softmax.blk
           ${PROJECT_SOURCE_DIR}/examples/flash_attention.blk
           ${PROJECT_SOURCE_DIR}/tests/emu/tslice.blk
           ${PROJECT_SOURCE_DIR}/tests/emu/tparts.blk)
  set_tests_properties(${prefix}_gpuir PROPERTIES LABELS "${label};golden"
                       SKIP_RETURN_CODE 77)
  if(NOT "HIP" IN_LIST ARGN)
    add_test(NAME ${prefix}_regcheck COMMAND ${_t} regcheck
             ${PROJECT_SOURCE_DIR}/examples/matmul.blk)
    set_tests_properties(${prefix}_regcheck PROPERTIES LABELS "${label}"
                         SKIP_RETURN_CODE 77 TIMEOUT 300)
  endif()
  if(_blk_examples)
    add_test(NAME ${prefix}_examples COMMAND ${_t} blk ${_blk_examples})
    add_test(NAME ${prefix}_examples_spec COMMAND ${_t} blkspec ${_blk_examples}
             ${_blk_lib})
    set_tests_properties(${prefix}_examples ${prefix}_examples_spec PROPERTIES
                         LABELS "${label}" SKIP_RETURN_CODE 77 TIMEOUT 600)
  endif()
  file(GLOB _blk_more ${PROJECT_SOURCE_DIR}/tests/gpu/data/*.blk
       ${PROJECT_SOURCE_DIR}/tests/cli/data/*.blk ${PROJECT_SOURCE_DIR}/lib/*.blk
       ${PROJECT_SOURCE_DIR}/tests/emu/twgmma.blk)
  list(FILTER _blk_more EXCLUDE REGEX "/bad\\.blk$")
  if(_blk_more)
    add_test(NAME ${prefix}_blk COMMAND ${_t} blk ${_blk_more})
    set_tests_properties(${prefix}_blk PROPERTIES LABELS "${label}"
                         SKIP_RETURN_CODE 77 TIMEOUT 600)
  endif()
endfunction()
