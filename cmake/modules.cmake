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
  set_property(GLOBAL APPEND PROPERTY STEPTP_MODULES steptp_${name})
endfunction()

# Precompiled headers (issue 34): the standard and third-party headers that most sources include.
# Parsing nlohmann/json.hpp, fmt and the standard library took most of each object's compile time
# (a 30-line source cost ~7 s); from a precompiled header it is loaded in a fraction of a second.
# Only headers outside src/ belong here: a project header would make every object depend on it.
set(STEPTP_PCH_HEADERS
  <algorithm> <chrono> <cmath> <cstdint> <filesystem> <fstream> <functional> <iostream> <map> <memory>
  <optional> <set> <stdexcept> <string> <string_view> <utility> <vector>
  <fmt/format.h> <nlohmann/json.hpp>)

# Whether `target` compiles with -fopenmp: it links OpenMP, itself or through a steptp_ library.
function(steptp_links_openmp target out)
  set(found OFF)
  get_target_property(libs ${target} LINK_LIBRARIES)
  foreach(lib IN LISTS libs)
    if(lib STREQUAL "OpenMP::OpenMP_CXX")
      set(found ON)
    elseif(lib MATCHES "^steptp_" AND TARGET ${lib})
      steptp_links_openmp(${lib} sub)
      if(sub)
        set(found ON)
      endif()
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# steptp_share_precompiled_headers(NAME name HEADERS h... LINK lib... TARGETS t...): the targets
# compile with one precompiled form of the headers (built by steptp_pch_<name>, which links LINK
# for the headers' include folders and definitions) instead of one each. GCC rejects a
# precompiled header built with other -fopenmp (_OPENMP) or -fPIC settings (-Winvalid-pch, and the
# object then parses the headers as before), so each such flavour gets its own.
function(steptp_share_precompiled_headers)
  cmake_parse_arguments(P "" "NAME" "HEADERS;LINK;TARGETS" ${ARGN})
  set(stub "${CMAKE_BINARY_DIR}/generated/pch_stub.cc")
  if(NOT EXISTS "${stub}")
    file(WRITE "${stub}" "// The one source of the steptp_pch_* targets, which exist to build precompiled headers.\n")
  endif()
  foreach(t IN LISTS P_TARGETS)
    steptp_links_openmp(${t} omp)
    get_target_property(pic ${t} POSITION_INDEPENDENT_CODE)
    set(owner steptp_pch_${P_NAME})
    if(omp)
      string(APPEND owner _openmp)
    endif()
    if(pic)
      string(APPEND owner _pic)
    endif()
    if(NOT TARGET ${owner})
      add_library(${owner} OBJECT EXCLUDE_FROM_ALL "${stub}")
      target_link_libraries(${owner} PRIVATE ${P_LINK})
      if(omp)
        target_link_libraries(${owner} PRIVATE OpenMP::OpenMP_CXX)
      endif()
      if(pic)
        set_target_properties(${owner} PROPERTIES POSITION_INDEPENDENT_CODE ON)
      endif()
      target_precompile_headers(${owner} PRIVATE ${P_HEADERS})
      # Compiled through the same launcher as its users (python/CMakeLists.txt sets one for pip).
      get_target_property(launcher ${t} CXX_COMPILER_LAUNCHER)
      if(launcher)
        set_target_properties(${owner} PROPERTIES CXX_COMPILER_LAUNCHER "${launcher}")
      endif()
    endif()
    target_precompile_headers(${t} REUSE_FROM ${owner})
  endforeach()
endfunction()

# One GoogleTest executable per tests/ folder: steptp_add_tests(NAME DIR DEPS ...)
# Files named *_heavy_test.cc form a second executable ${name}_heavy_tests labelled "heavy"
# (excluded from the default test command; run with `ctest -L heavy`).
function(steptp_add_test_exe exe labels srcs deps)
  add_executable(${exe} ${srcs})
  set_property(GLOBAL APPEND PROPERTY STEPTP_TEST_EXES ${exe})
  target_link_libraries(${exe} PRIVATE ${deps} GTest::gtest GTest::gtest_main)
  target_include_directories(${exe} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
  target_compile_definitions(${exe} PRIVATE
    STEPTP_SHARED_DIR="${STEPTP_SHARED_DIR}"
    STEPTP_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    STEPTP_BINARY_DIR="${CMAKE_BINARY_DIR}"
    STEPTP_EXE="$<TARGET_FILE:steptp>")
  add_dependencies(${exe} steptp)
  # Tests that time kernels serialize on a lock of their own build (search/tune/timing_lock.h), not on
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
