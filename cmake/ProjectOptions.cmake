# Warnings, sanitizers and the one include root shared by every target of the project (each links it).
add_library(ropescope_options INTERFACE)
# Every project header is included by its path from the repository root: "core/model/engine/vlm.h",
# "views/charts/charts.h", "app/cli/output.h", "tests/support/csv_table.h".
target_include_directories(ropescope_options INTERFACE ${PROJECT_SOURCE_DIR})
target_compile_options(ropescope_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
# CI builds with warnings as errors (.ci/run sets ROPESCOPE_WERROR=ON through scripts/setup.sh), so a warning in
# the project's own code fails the run. GCC's -Wmaybe-uninitialized stays a warning: GCC 12 reports it for
# std::optional<enum> values that are always set (views/widgets/parameter_panel.cpp, a known false positive).
option(ROPESCOPE_WERROR "Treat warnings in the project's own code as errors" OFF)
if(ROPESCOPE_WERROR)
  target_compile_options(ropescope_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror -Wno-error=maybe-uninitialized>)
endif()

if(ROPESCOPE_SANITIZE)
  target_compile_options(ropescope_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(ropescope_options INTERFACE -fsanitize=address,undefined)
endif()

# Instruction set. On CPUs with AVX-512, glibc's EVEX memcpy leaves the upper vector state dirty and
# every legacy-SSE instruction afterwards pays a transition penalty (measured: docs/SPEED.md, "The live view").
# VEX-encoded code (x86-64-v3: AVX2 + FMA) is immune, and faster anyway; it is used whenever the build
# machine can run it. ROPESCOPE_ARCH=none builds baseline x86-64 for older CPUs.
set(ROPESCOPE_ARCH "auto" CACHE STRING "auto, none, native, or a -march value such as x86-64-v3")
if(ROPESCOPE_ARCH STREQUAL "auto")
  include(CheckCXXSourceRuns)
  set(CMAKE_REQUIRED_FLAGS "-march=x86-64-v3")
  check_cxx_source_runs("
    int main() { __builtin_cpu_init(); return __builtin_cpu_supports(\"avx2\") && __builtin_cpu_supports(\"fma\") ? 0 : 1; }"
    ROPESCOPE_HOST_HAS_X86_64_V3)
  unset(CMAKE_REQUIRED_FLAGS)
  set(ROPESCOPE_MARCH "")
  if(ROPESCOPE_HOST_HAS_X86_64_V3)
    set(ROPESCOPE_MARCH "x86-64-v3")
  endif()
elseif(ROPESCOPE_ARCH STREQUAL "none")
  set(ROPESCOPE_MARCH "")
else()
  set(ROPESCOPE_MARCH "${ROPESCOPE_ARCH}")
endif()
if(ROPESCOPE_MARCH)
  message(STATUS "RopeScope: compiling for -march=${ROPESCOPE_MARCH}")
  target_compile_options(ropescope_options INTERFACE -march=${ROPESCOPE_MARCH})
endif()

# vtk_module_autoinit for `targets`, with its generated header included by name through an include directory: VTK
# writes the header's absolute path into a -D value (<module>_AUTOINIT_INCLUDE), which ccache never rewrites, so
# every VTK translation unit missed the cache in every fresh clone. The header's name is a hash of the module list,
# the same in every clone.
function(ropescope_vtk_autoinit)
  vtk_module_autoinit(TARGETS ${ARGN} MODULES ${VTK_LIBRARIES})
  foreach(target ${ARGN})
    get_target_property(definitions ${target} COMPILE_DEFINITIONS)
    set(kept)
    foreach(definition IN LISTS definitions)
      if(definition MATCHES "^([A-Za-z0-9_]+_AUTOINIT_INCLUDE)=\"(.+)\"$")
        get_filename_component(header "${CMAKE_MATCH_2}" NAME)
        get_filename_component(folder "${CMAKE_MATCH_2}" DIRECTORY)
        list(APPEND kept "${CMAKE_MATCH_1}=\"${header}\"")
        target_include_directories(${target} PRIVATE ${folder})
      elseif(definition)
        list(APPEND kept "${definition}")
      endif()
    endforeach()
    set_target_properties(${target} PROPERTIES COMPILE_DEFINITIONS "${kept}")
  endforeach()
endfunction()
