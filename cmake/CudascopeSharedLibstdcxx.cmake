# cudascope's shared libraries are loaded into other programs (PyTorch, JAX): they must use
# the process's libstdc++, never carry a copy of their own. A copy's locale and codecvt state
# is never set up, and once its symbols serve another library (prometheus-cpp's stream output
# in a PyTorch process did), that library crashes.
#
# A toolchain can put one there without asking: a relocated GCC whose lib directory holds
# libstdc++.a beside a libstdc++.so that is a dangling relative link (one GPU image copied
# Ubuntu's GCC 13 into /opt/gcc so), so `-lstdc++` silently falls back to the archive. Then
# the shared libstdc++.so.6 is linked by its full path, ahead of the driver's -lstdc++, and
# every target gets it as NEEDED; nothing from the archive is pulled in.
#
# Sets CUDASCOPE_LIBSTDCXX (the file linked, or empty when the compiler links it as it should).
function(cudascope_check_shared_libstdcxx)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    return()
  endif()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
    OUTPUT_VARIABLE linked OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  # EXISTS follows links: false for a dangling one, and for the bare name the driver prints
  # when it has no such file.
  if(rc EQUAL 0 AND IS_ABSOLUTE "${linked}" AND EXISTS "${linked}")
    set(CUDASCOPE_LIBSTDCXX "" CACHE FILEPATH "libstdc++.so.6 linked by full path (set when the compiler would link libstdc++.a)")
    return()
  endif()
  if(NOT CUDASCOPE_LIBSTDCXX)
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
      OUTPUT_VARIABLE beside OUTPUT_STRIP_TRAILING_WHITESPACE)
    get_filename_component(beside_dir "${beside}" DIRECTORY)
    find_library(found_libstdcxx NAMES libstdc++.so.6 NO_CACHE
      HINTS ${beside_dir} ${CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES} /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}
            /lib/${CMAKE_LIBRARY_ARCHITECTURE} /usr/lib64 /usr/lib)
    if(NOT found_libstdcxx)
      message(FATAL_ERROR "cudascope: the C++ compiler ${CMAKE_CXX_COMPILER} would link libstdc++ statically "
        "into shared libraries (its libstdc++.so, '${linked}', is missing or a dangling link), and no "
        "libstdc++.so.6 was found to link instead. cudascope's libraries run inside other programs and must "
        "share their libstdc++: pass -DCUDASCOPE_LIBSTDCXX=/path/to/libstdc++.so.6 or use a compiler whose "
        "libstdc++.so exists.")
    endif()
    set(CUDASCOPE_LIBSTDCXX "${found_libstdcxx}" CACHE FILEPATH
      "libstdc++.so.6 linked by full path (set when the compiler would link libstdc++.a)" FORCE)
  endif()
  message(STATUS "cudascope: ${CMAKE_CXX_COMPILER}'s libstdc++.so ('${linked}') is missing or a dangling link; "
                 "linking ${CUDASCOPE_LIBSTDCXX} instead of its libstdc++.a")
endfunction()

cudascope_check_shared_libstdcxx()
if(CUDASCOPE_LIBSTDCXX)
  # Every target defined after this point: the libraries, the programs and the tests.
  link_libraries(${CUDASCOPE_LIBSTDCXX})
endif()
