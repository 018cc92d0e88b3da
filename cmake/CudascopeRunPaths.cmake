# Run paths of the installed programs and libraries: they run from any prefix (/usr, /opt/...,
# a scratch directory) with no LD_LIBRARY_PATH. Include before the targets are created.
#
# - Programs in bin/ find the project's shared libraries through $ORIGIN/<bin to lib>.
# - Shared libraries find each other through $ORIGIN; the runtime also looks beside itself for
#   the tools it loads on demand (libcudascope_inject.so, libcudascope_metrics.so), so every
#   one of them is installed into the same lib dir.
# - The CUDA toolkit (/usr/local/cuda) is not a Debian package, so nothing installed may rely
#   on the loader finding it: the runtime links the static CUDA runtime (CUDA::cudart_static,
#   see runtime/CMakeLists.txt). CUPTI stays shared: CUDA 13 ships no libcupti_static.a, and
#   static copies in both the profiler and the injection library would hold two CUPTI states
#   in one process. Targets that link CUPTI therefore also carry the toolkit's directory that
#   holds libcupti as an absolute run path.

# Relative path from the program dir to the library dir; GNUInstallDirs may give a multiarch
# lib dir (lib/x86_64-linux-gnu) when configured for /usr.
file(RELATIVE_PATH CUDASCOPE_BIN_TO_LIB /prefix/${CMAKE_INSTALL_BINDIR} /prefix/${CMAKE_INSTALL_LIBDIR})
set(CMAKE_INSTALL_RPATH "$ORIGIN/${CUDASCOPE_BIN_TO_LIB}")
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH OFF)

# Every target defined under `dir`, recursively.
function(_cudascope_targets_under dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _cudascope_targets_under(${sub} sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# Call once all targets exist: shared libraries get $ORIGIN (programs keep the default above),
# and whatever links CUPTI gets the toolkit directory that holds it.
function(cudascope_set_install_rpaths)
  set(cupti_dir "")
  if(TARGET CUDA::cupti)
    get_target_property(cupti_location CUDA::cupti IMPORTED_LOCATION)
    if(cupti_location)
      get_filename_component(cupti_dir "${cupti_location}" DIRECTORY)
    endif()
  endif()
  _cudascope_targets_under(${PROJECT_SOURCE_DIR} targets)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "SHARED_LIBRARY" OR type STREQUAL "MODULE_LIBRARY")
      set_property(TARGET ${target} PROPERTY INSTALL_RPATH "$ORIGIN")
    elseif(NOT type STREQUAL "EXECUTABLE")
      continue()
    endif()
    get_target_property(links ${target} LINK_LIBRARIES)
    if(cupti_dir AND "CUDA::cupti" IN_LIST links)
      set_property(TARGET ${target} APPEND PROPERTY INSTALL_RPATH "${cupti_dir}")
    endif()
  endforeach()
endfunction()
