# Included after project() by the ASan+coverage build of .ci/sanitizers.sh (CMAKE_PROJECT_INCLUDE):
# the targets named in CUDASCOPE_COVERAGE_SINGLE_THREADED count coverage with plain increments
# (-fprofile-update=single) instead of the build's atomic ones. An atomic increment (a locked
# add on every arc) made the analysis library's readers 7 to 10 times slower under ASan: the
# pickle-bomb test took 114 s instead of 16 s, the garbled-snapshot fuzz test 107 s instead of
# 11 s. The analysis library starts no threads and its tests call it from one thread at a time;
# the runtime and the profiler run threads of their own and keep atomic counts (racing plain
# counts make gcov report negative branch counts).
set(CUDASCOPE_COVERAGE_SINGLE_THREADED "cudascope_analysis" CACHE STRING
  "Targets whose coverage counters are plain increments (single-threaded code)")
function(cudascope_ci_single_threaded_counters)
  foreach(target IN LISTS CUDASCOPE_COVERAGE_SINGLE_THREADED)
    if(TARGET ${target})
      # After CMAKE_CXX_FLAGS on the command line, so it overrides -fprofile-update=atomic there.
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:-fprofile-update=single>)
    else()
      message(FATAL_ERROR "CUDASCOPE_COVERAGE_SINGLE_THREADED: no target ${target}")
    endif()
  endforeach()
endfunction()
# At the end of the top-level CMakeLists.txt, once every target exists.
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL cudascope_ci_single_threaded_counters)
