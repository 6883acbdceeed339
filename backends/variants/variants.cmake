# kc — kernel variants: one kernel source built several ways, each build a
# plugin-ABI shared library of its own (backends/variants/variant_backend.h).
#
# The builds are custom commands, not add_library targets, on purpose: a
# variant *is* its exact compiler and flags, so neither the build type
# (-O0 -g of Debug), nor directory-wide options (the sanitizers of KC_SANITIZE),
# nor CMake's choice of compiler may leak into it; and the flags go to the link
# step too, where GCC decides whether crtfastmath.o (FTZ/DAZ at load) is linked.
#
#   kc_kernel_variant(GROUP eigen LABEL avx2 COMPILER /usr/bin/g++ SOURCE file.cc
#                     FLAGS -O2 -mavx2 -mfma FEATURES avx2 fma NOTE "text"
#                     [SYSTEM_INCLUDES dirs...] [WARNINGS -Wno-...] [DEFINES NAME...])
#   kc_kernel_variants_done(eigen)   # manifest + target kc_eigen_variants
#
# The library lands in ${CMAKE_BINARY_DIR}/lib/kc-<group>/libkc_<group>_<label>.so
# and its line in variants.tsv there (label, library, cpu features, compiler,
# flags, note), which is what the backend loads.

function(kc_kernel_variant)
  cmake_parse_arguments(V "" "GROUP;LABEL;COMPILER;SOURCE;NOTE" "FLAGS;FEATURES;SYSTEM_INCLUDES;WARNINGS;DEFINES" ${ARGN})
  set(dir ${CMAKE_BINARY_DIR}/lib/kc-${V_GROUP})
  set(lib libkc_${V_GROUP}_${V_LABEL}.so)
  set(obj ${CMAKE_CURRENT_BINARY_DIR}/variants/${V_LABEL}.o)
  set(incs -I${PROJECT_SOURCE_DIR}/include -I${PROJECT_SOURCE_DIR}/backends)
  foreach(d ${V_SYSTEM_INCLUDES})
    list(APPEND incs -isystem ${d})
  endforeach()
  set(warn -Wall -Wextra)
  if(KC_WERROR)
    list(APPEND warn -Werror)
  endif()
  list(APPEND warn ${V_WARNINGS})  # compile step only; not part of the variant's identity
  set(defs)
  foreach(d ${V_DEFINES})  # source switches (which impls a variant exposes), not flags under test
    list(APPEND defs -D${d})
  endforeach()
  # Hidden visibility: only kc_plugin_init (and kc_variant_simd) are exported,
  # so no template instance of one build can bind to another's.
  set(common -std=c++17 -fPIC -fvisibility=hidden -fvisibility-inlines-hidden)
  add_custom_command(OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/variants
    COMMAND ${CMAKE_CXX_COMPILER_LAUNCHER} ${V_COMPILER} ${V_FLAGS} ${common} ${warn}
            -DKC_VARIANT_LABEL="${V_LABEL}" ${defs} ${incs} -MD -MT ${obj} -MF ${obj}.d -c ${V_SOURCE} -o ${obj}
    DEPENDS ${V_SOURCE}
    DEPFILE ${obj}.d
    COMMENT "kc ${V_GROUP} variant ${V_LABEL}: compiling with ${V_COMPILER} ${V_FLAGS}"
    VERBATIM)
  add_custom_command(OUTPUT ${dir}/${lib}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${V_COMPILER} ${V_FLAGS} ${common} -shared -Wl,-z,defs ${obj} -o ${dir}/${lib}
    DEPENDS ${obj}
    COMMENT "kc ${V_GROUP} variant ${V_LABEL}: linking ${lib}"
    VERBATIM)
  set_property(GLOBAL APPEND PROPERTY KC_${V_GROUP}_OUTPUTS ${dir}/${lib})
  string(JOIN " " flags_text ${V_FLAGS})
  string(JOIN "," features ${V_FEATURES})
  if(features STREQUAL "")
    set(features "-")
  endif()
  get_filename_component(compiler_name ${V_COMPILER} NAME)
  set_property(GLOBAL APPEND_STRING PROPERTY KC_${V_GROUP}_MANIFEST
    "${V_LABEL}\t${lib}\t${features}\t${compiler_name}\t${flags_text}\t${V_NOTE}\n")
endfunction()

function(kc_kernel_variants_done group)
  set(dir ${CMAKE_BINARY_DIR}/lib/kc-${group})
  get_property(outs GLOBAL PROPERTY KC_${group}_OUTPUTS)
  get_property(manifest GLOBAL PROPERTY KC_${group}_MANIFEST)
  file(MAKE_DIRECTORY ${dir})
  file(CONFIGURE OUTPUT ${dir}/variants.tsv CONTENT
    "# kc ${group} variants (written by CMake: backends/variants/variants.cmake)\n# label\tlibrary\tcpu features\tcompiler\tflags\tnote\n${manifest}"
    @ONLY)
  add_custom_target(kc_${group}_variants ALL DEPENDS ${outs})
  add_dependencies(kc_backend_${group} kc_${group}_variants)
  string(TOUPPER ${group} upper)
  target_compile_definitions(kc_backend_${group} PRIVATE KC_${upper}_VARIANT_DIR="${dir}")
endfunction()
