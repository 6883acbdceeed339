# kc — `cmake --install`: one prefix holding everything an installed kc needs
# at run time, found from the executable's own location (kc/install_layout.h),
# so the prefix can be moved after installing. docs/install.md lists it:
#
#   bin/kc, bin/kc-mpi-worker               the program and the mpi backend's MPI program
#   lib/kc/kc-{eigen,hwy,compilers}/        the variant backends' builds and manifests
#   lib/kc/libkc_torch.so, libkc_python.so  the torch backend's module, the Python-impl plugin
#   include/kc/kc_plugin.h                  the plugin C ABI, the one public header a plugin needs
#   share/kc/contracts/, share/kc/schemas/  the shipped suite (kc's default paths), the JSON schemas
#   lib/cmake/kc/kcConfig*.cmake            find_package(kc): kc::plugin, KC_EXECUTABLE, ...
#   lib/pkgconfig/kc.pc                     pkg-config --cflags kc
#
# The static libraries behind kc are not installed: a plugin is built against
# kc_plugin.h alone and links nothing from kc.
include(CMakePackageConfigHelpers)

set(KC_INSTALL_CMAKEDIR lib/cmake/kc)

# The plugin ABI as a target: kc::plugin here (examples, tests) and for consumers.
add_library(kc_plugin INTERFACE)
add_library(kc::plugin ALIAS kc_plugin)
set_target_properties(kc_plugin PROPERTIES EXPORT_NAME plugin)
target_include_directories(kc_plugin INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:include>)
install(TARGETS kc_plugin EXPORT kcTargets)
install(FILES ${PROJECT_SOURCE_DIR}/include/kc/kc_plugin.h DESTINATION include/kc)

# The programs. Libraries found outside the build tree (CUDA's, Open MPI's,
# libtorch's) stay on the installed files' run path; the build tree's do not.
install(TARGETS kc_cli RUNTIME DESTINATION bin)
set_target_properties(kc_cli PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
if(TARGET kc-mpi-worker)
  install(TARGETS kc-mpi-worker RUNTIME DESTINATION bin)
  set_target_properties(kc-mpi-worker PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
endif()
foreach(module kc_torch kc_python)
  if(TARGET ${module})
    install(TARGETS ${module} LIBRARY DESTINATION lib/kc)
    set_target_properties(${module} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  endif()
endforeach()
foreach(group eigen hwy compilers)
  if(TARGET kc_${group}_variants)
    install(DIRECTORY ${PROJECT_BINARY_DIR}/lib/kc-${group}/ DESTINATION lib/kc/kc-${group} USE_SOURCE_PERMISSIONS)
  endif()
endforeach()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/contracts/ DESTINATION share/kc/contracts)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/schemas/ DESTINATION share/kc/schemas)

# find_package(kc) and pkg-config, both relocatable (paths relative to the
# files' own location, not the configure-time prefix).
file(STRINGS ${PROJECT_SOURCE_DIR}/include/kc/kc_plugin.h _kc_abi_line REGEX "^#define KC_PLUGIN_ABI_VERSION ")
string(REGEX REPLACE ".*VERSION ([0-9]+)u?.*" "\\1" KC_PLUGIN_ABI_VERSION "${_kc_abi_line}")
install(EXPORT kcTargets NAMESPACE kc:: DESTINATION ${KC_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/generated/kcConfig.cmake INSTALL_DESTINATION ${KC_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/generated/kcConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${PROJECT_BINARY_DIR}/generated/kcConfig.cmake ${PROJECT_BINARY_DIR}/generated/kcConfigVersion.cmake
  DESTINATION ${KC_INSTALL_CMAKEDIR})
configure_file(${PROJECT_SOURCE_DIR}/cmake/kc.pc.in ${PROJECT_BINARY_DIR}/generated/kc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/generated/kc.pc DESTINATION lib/pkgconfig)
