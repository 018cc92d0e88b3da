# cudascope/cuda.h brings in every public header of the runtime (docs/api-map.md promises it):
# each cudascope/cuda/*.h, in the source tree and generated (version.h), is included by it.
# Usage: cmake -DINCLUDE_DIRS="src_include;build_include" -P umbrella_header_check.cmake
list(GET INCLUDE_DIRS 0 source_dir)
file(READ ${source_dir}/cudascope/cuda.h umbrella)
set(missing "")
foreach(dir IN LISTS INCLUDE_DIRS)
  file(GLOB headers RELATIVE ${dir} ${dir}/cudascope/cuda/*.h)
  foreach(header IN LISTS headers)
    string(FIND "${umbrella}" "#include <${header}>" at)
    if(at EQUAL -1)
      list(APPEND missing ${header})
    endif()
  endforeach()
endforeach()
if(missing)
  message(FATAL_ERROR "cudascope/cuda.h does not include: ${missing}")
endif()
message(STATUS "cudascope/cuda.h includes every public header")
