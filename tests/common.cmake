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
