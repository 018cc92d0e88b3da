# add_subdirectory for a component only once it has a CMakeLists.txt, saying so either way.
function(cudascope_optional_subdirectory dir)
  file(RELATIVE_PATH where ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/${dir})
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt)
    add_subdirectory(${dir})
  else()
    message(STATUS "cudascope: ${where}/ skipped - no CMakeLists.txt there")
  endif()
endfunction()

# Warnings every cudascope target is built with.
function(cudascope_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>)
endfunction()

# A GoogleTest executable registered with ctest, one test per TEST(), with labels.
# Usage: cudascope_add_test(NAME runtime_test SOURCES a.cpp LIBS cudascope::runtime LABELS unit [MAIN lib])
# MAIN defaults to cudascope_test_main (tests/support), which runs on the sim backend unless
# CUDASCOPE_BACKEND is set.
function(cudascope_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT;MAIN" "SOURCES;LIBS;LABELS;ENV" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  if(NOT T_MAIN)
    set(T_MAIN cudascope_test_main)
  endif()
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} ${T_MAIN} GTest::gtest Threads::Threads)
  cudascope_warnings(${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  # gtest_discover_tests marks a test that calls GTEST_SKIP as skipped by itself.
  set(properties LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  if(T_ENV)
    list(APPEND properties ENVIRONMENT "${T_ENV}")
  endif()
  # GPU tests time kernels on the device: other tests' kernels sharing it would stretch them.
  if("gpu" IN_LIST T_LABELS)
    list(APPEND properties RUN_SERIAL TRUE)
  endif()
  include(GoogleTest)
  gtest_discover_tests(${T_NAME} PROPERTIES ${properties} DISCOVERY_TIMEOUT 60)
endfunction()
