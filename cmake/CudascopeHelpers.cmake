# add_subdirectory for a component only once it has a CMakeLists.txt, saying so either way.
function(cudascope_optional_subdirectory dir)
  file(RELATIVE_PATH where ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/${dir})
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt)
    add_subdirectory(${dir})
  else()
    message(STATUS "cudascope: ${where}/ skipped - no CMakeLists.txt there")
  endif()
endfunction()

# What a shared library of cudascope's exports: its own API only (cmake/cudascope_exports.map:
# C++ names in namespace cudascope, the C entry points named cudascope_* and the CUDA/NVTX
# injection entry points). Nothing of the static archives it links (libcudart_static) or of
# the standard library's template instantiations leaves it, so in someone else's process
# (PyTorch, JAX) it neither serves their symbols nor takes theirs.
# Usage: cudascope_export_own_api(target [MAP file]): MAP, a narrower script of the target's
# own (inject/inject_exports.map: the injection entry points only).
function(cudascope_export_own_api target)
  cmake_parse_arguments(E "" "MAP" "" ${ARGN})
  set(map ${PROJECT_SOURCE_DIR}/cmake/cudascope_exports.map)
  if(E_MAP)
    set(map ${E_MAP})
  endif()
  target_link_options(${target} PRIVATE LINKER:--version-script=${map} LINKER:--exclude-libs,ALL)
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${map})
endfunction()

# Warnings every cudascope target is built with.
function(cudascope_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>)
endfunction()

# A GoogleTest executable registered with ctest, one test per TEST(), with labels.
# Usage: cudascope_add_test(NAME runtime_test SOURCES a.cpp LIBS cudascope::runtime LABELS unit [MAIN lib]
#                           [ENV VAR=value...] [DEVICE_EXCLUSIVE])  (every ENV entry reaches every test of
#                           the executable; DEVICE_EXCLUSIVE: on a build with the cuda backend its tests
#                           run alone)
# MAIN defaults to cudascope_test_main (tests/support), which runs on the sim backend unless
# CUDASCOPE_BACKEND is set.
function(cudascope_add_test)
  cmake_parse_arguments(T "DEVICE_EXCLUSIVE" "NAME;TIMEOUT;MAIN" "SOURCES;LIBS;LABELS;ENV" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  if(NOT T_MAIN)
    set(T_MAIN cudascope_test_main)
  endif()
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} ${T_MAIN} GTest::gtest Threads::Threads)
  cudascope_warnings(${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  # Sanitizer builds run the same tests several times slower; their configure scales every
  # timeout (.ci/sanitizers.sh) rather than each test guessing.
  if(CUDASCOPE_TEST_TIMEOUT_SCALE)
    math(EXPR T_TIMEOUT "${T_TIMEOUT} * ${CUDASCOPE_TEST_TIMEOUT_SCALE}")
  endif()
  # gtest_discover_tests marks a test that calls GTEST_SKIP as skipped by itself.
  set(properties LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  # GPU tests time kernels on the device: other tests' kernels sharing it would stretch them.
  # Tests that compare with what PyTorch saw on a device of its own (where the driver places
  # segments, how much memory is free) need the GPU to themselves too; on the sim each process
  # has its own device, so they run in parallel there.
  if("gpu" IN_LIST T_LABELS OR (T_DEVICE_EXCLUSIVE AND CUDASCOPE_HAVE_CUDA))
    list(APPEND properties RUN_SERIAL TRUE)
  endif()
  include(GoogleTest)
  gtest_discover_tests(${T_NAME} PROPERTIES ${properties} DISCOVERY_TIMEOUT 60)
  # Per test folder, a target that builds only its executables labelled neither gpu nor
  # integration (tests/runtime: unit_tests_runtime): what the sanitizer builds run, without the
  # GPU tests and the command and injection library the integration tests need
  # (.ci/sanitizers.sh).
  if(NOT "gpu" IN_LIST T_LABELS AND NOT "integration" IN_LIST T_LABELS)
    get_filename_component(folder "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
    if(NOT TARGET unit_tests_${folder})
      add_custom_target(unit_tests_${folder})
    endif()
    add_dependencies(unit_tests_${folder} ${T_NAME})
  endif()
  if(T_ENV)
    # Not through gtest_discover_tests' PROPERTIES: it writes each list element as its own
    # argument, so every variable after the first would be read as a property name. A file
    # ctest includes after the discovered tests (TEST_INCLUDE_FILES keeps the order) sets the
    # whole list on every test of the executable; generator expressions in it are evaluated.
    set(env_file "${CMAKE_CURRENT_BINARY_DIR}/${T_NAME}_environment.cmake")
    file(GENERATE OUTPUT "${env_file}" CONTENT
      "if(DEFINED ${T_NAME}_TESTS)\n  set_tests_properties(\${${T_NAME}_TESTS} PROPERTIES ENVIRONMENT [==[${T_ENV}]==])\nendif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${env_file}")
  endif()
endfunction()
