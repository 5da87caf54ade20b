# One static library per source folder: steptp_add_module(NAME DIR DEPS ...)
# Sources are globbed so adding a file to a module needs no edit here.
function(steptp_add_module name dir)
  cmake_parse_arguments(M "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/src/${dir}/*.cc")
  if(NOT srcs)
    return()
  endif()
  add_library(steptp_${name} STATIC ${srcs})
  target_include_directories(steptp_${name} PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(steptp_${name} PUBLIC ${M_DEPS})
  target_compile_options(steptp_${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()

# One GoogleTest executable per tests/ folder: steptp_add_tests(NAME DIR DEPS ...)
# Files named *_heavy_test.cc form a second executable ${name}_heavy_tests labelled "heavy"
# (excluded from the default test command; run with `ctest -L heavy`).
function(steptp_add_test_exe exe labels srcs deps)
  add_executable(${exe} ${srcs})
  target_link_libraries(${exe} PRIVATE ${deps} GTest::gtest GTest::gtest_main)
  target_include_directories(${exe} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
  target_compile_definitions(${exe} PRIVATE
    STEPTP_SHARED_DIR="${STEPTP_SHARED_DIR}"
    STEPTP_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    STEPTP_BINARY_DIR="${CMAKE_BINARY_DIR}"
    STEPTP_EXE="$<TARGET_FILE:steptp>")
  add_dependencies(${exe} steptp)
  # Tests that time kernels serialize on a lock of their own build (tune/timing_lock.h), not on
  # the machine-wide one that benchmarks hold for minutes: tests assert behaviour, not figures.
  gtest_discover_tests(${exe} DISCOVERY_TIMEOUT 120 PROPERTIES LABELS "${labels}"
                       ENVIRONMENT "STEPTP_TIMING_LOCK=${CMAKE_BINARY_DIR}/timing.lock")
endfunction()

function(steptp_add_tests name dir)
  cmake_parse_arguments(T "" "" "DEPS" ${ARGN})
  file(GLOB all CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/tests/${dir}/*_test.cc")
  file(GLOB heavy CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/tests/${dir}/*_heavy_test.cc")
  set(light ${all})
  if(heavy)
    list(REMOVE_ITEM light ${heavy})
    # One label only: gtest_discover_tests flattens a list given to LABELS.
    steptp_add_test_exe(${name}_heavy_tests "heavy" "${heavy}" "${T_DEPS}")
  endif()
  if(light)
    steptp_add_test_exe(${name}_tests "${name}" "${light}" "${T_DEPS}")
  endif()
endfunction()
