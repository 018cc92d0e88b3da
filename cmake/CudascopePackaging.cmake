# The installed package: cudascopeConfig.cmake for find_package(cudascope CONFIG), and the
# Debian packages CPack builds from the same install rules (`cpack -G DEB` in the build dir).
# Include after every component, once all targets exist.
#
# Install components, one Debian package each:
#   libs   -> libcudascope0      the shared libraries (runtime, profiler, exporters, metrics)
#   dev    -> libcudascope-dev   headers, CMake config, link-time names, the static analysis lib
#   cli    -> cudascope          the `cudascope` command, libcudascope_inject.so, the dashboard
#   viewer -> cudascope-viewer   the Qt 6 viewer

include(CMakePackageConfigHelpers)

# The targets in the cudascopeTargets export set; the consumer test (tests/package) links each.
set(CUDASCOPE_EXPORTED_TARGETS "")
foreach(name runtime profiler exporters metrics analysis)
  if(TARGET cudascope::${name})
    list(APPEND CUDASCOPE_EXPORTED_TARGETS ${name})
  endif()
endforeach()

# What each exported target's link interface names: all that a static library links (its
# private dependencies travel as $<LINK_ONLY:...>), only the public part of a shared one.
function(_cudascope_interface_links out)
  set(result "")
  foreach(name IN LISTS CUDASCOPE_EXPORTED_TARGETS)
    get_target_property(target cudascope::${name} ALIASED_TARGET)
    get_target_property(type ${target} TYPE)
    get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
    if(type STREQUAL "STATIC_LIBRARY")
      get_target_property(private_links ${target} LINK_LIBRARIES)
      list(APPEND links ${private_links})
    endif()
    foreach(link IN LISTS links)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" link "${link}")
      if(link MATCHES "::" AND NOT link MATCHES "^cudascope::")
        list(APPEND result ${link})
      endif()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES result)
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# One find_dependency() per package those links come from, and the Debian -dev package that
# provides it (the CUDA toolkit is not a Debian package: it is declared in the config only).
_cudascope_interface_links(cudascope_links)
set(CUDASCOPE_CONFIG_DEPENDENCIES "")
set(CUDASCOPE_DEV_DEBIAN_DEPENDS "")
set(cudascope_qt_components "")
foreach(link IN LISTS cudascope_links)
  string(REGEX MATCH "^[^:]+" package "${link}")
  if(package STREQUAL "Qt6")
    string(REGEX REPLACE "^Qt6::" "" component "${link}")
    list(APPEND cudascope_qt_components ${component})
    continue()
  endif()
  if(package STREQUAL "ZLIB")
    set(line "find_dependency(ZLIB)")
    set(deb zlib1g-dev)
  elseif(package STREQUAL "simdjson")
    set(line "find_dependency(simdjson CONFIG)")
    set(deb libsimdjson-dev)
  elseif(package STREQUAL "Threads")
    set(line "find_dependency(Threads)")
    set(deb libc6-dev)
  elseif(package STREQUAL "prometheus-cpp")
    set(line "find_dependency(prometheus-cpp CONFIG)")
    set(deb prometheus-cpp-dev)
  elseif(package STREQUAL "CUDA")
    set(line "find_dependency(CUDAToolkit)")
    set(deb "")
  else()
    message(FATAL_ERROR "cudascope: an exported target links ${link}; add its find_dependency() "
                        "and Debian package to cmake/CudascopePackaging.cmake")
  endif()
  string(APPEND CUDASCOPE_CONFIG_DEPENDENCIES "${line}\n")
  list(APPEND CUDASCOPE_DEV_DEBIAN_DEPENDS ${deb})
endforeach()
if(cudascope_qt_components)
  list(REMOVE_DUPLICATES cudascope_qt_components)
  string(APPEND CUDASCOPE_CONFIG_DEPENDENCIES "find_dependency(Qt6 COMPONENTS ${cudascope_qt_components})\n")
  list(APPEND CUDASCOPE_DEV_DEBIAN_DEPENDS qt6-base-dev)
endif()
list(REMOVE_DUPLICATES CUDASCOPE_DEV_DEBIAN_DEPENDS)

configure_package_config_file(cmake/cudascopeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/cudascopeConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cudascope)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/cudascopeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(EXPORT cudascopeTargets NAMESPACE cudascope:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cudascope
  COMPONENT dev)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/cudascopeConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/cudascopeConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cudascope COMPONENT dev)

# --- Debian packages -------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cudascope)
set(CPACK_PACKAGE_VENDOR cudascope)
set(CPACK_PACKAGE_CONTACT "cudascope developers")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
# Packages carry no debug info (the build tree keeps it): smaller .debs, built faster. Their
# symbol tables stay (strip --strip-debug, not CPack's own strip, which removes them too): a
# snapshot taken by an installed program names its static functions from .symtab, where
# dladdr sees only exported ones.
set(CPACK_STRIP_FILES OFF)
set(CPACK_CUDASCOPE_STRIP "${CMAKE_STRIP}")
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/CudascopeStripDebug.cmake)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL libs dev cli)
if(TARGET cudascope_viewer)
  list(APPEND CPACK_COMPONENTS_ALL viewer)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Run-time dependencies come from the ELF files (dpkg-shlibdeps maps each NEEDED library to
# the Debian package that holds it). The project's own libraries are looked up in the build
# tree's lib dir; between packages they are declared as exact-version component dependencies.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_LIBRARY_OUTPUT_DIRECTORY})
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

# Each package's Description: the first line of its component's description is the summary.
# CPack puts a summary of its own before every description unless it is its default text.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_DEBIAN_LIBS_PACKAGE_NAME libcudascope${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_LIBS_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_LIBS_DESCRIPTION "cudascope shared libraries
The torch.cuda-equivalent runtime with its caching allocator, the profiler, the trace
exporters, the Prometheus metrics library and the caching allocator as PyTorch's
pluggable allocator. The profiler loads CUPTI from the CUDA toolkit at /usr/local/cuda.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libcudascope-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS libs)
# The headers package needs what cudascopeConfig.cmake's find_dependency() lines find.
string(REPLACE ";" ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${CUDASCOPE_DEV_DEBIAN_DEPENDS}")
set(CPACK_COMPONENT_DEV_DESCRIPTION "cudascope headers and CMake package
Headers, the static analysis library and cudascopeConfig.cmake, so projects can
find_package(cudascope CONFIG) and link cudascope::runtime and the other targets.")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME cudascope)
set(CPACK_COMPONENT_CLI_DEPENDS libs)
set(CPACK_DEBIAN_CLI_PACKAGE_SUGGESTS cudascope-viewer)
set(CPACK_COMPONENT_CLI_DESCRIPTION "cudascope command-line tools
The cudascope command (devices, demo, run, stats, replay, snapshot-stats, metrics,
serve), the injection library that records unmodified CUDA programs, and a Grafana
dashboard for the exported metrics.")

set(CPACK_DEBIAN_VIEWER_PACKAGE_NAME cudascope-viewer)
set(CPACK_COMPONENT_VIEWER_DEPENDS libs)
set(CPACK_COMPONENT_VIEWER_DESCRIPTION "cudascope allocator snapshot and trace viewer
A Qt 6 desktop viewer for allocator snapshots (cudascope's and PyTorch's pickles)
and traces.")

include(CPack)
