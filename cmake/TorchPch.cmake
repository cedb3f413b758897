# One precompiled LibTorch header for every source that computes (docs/CI.md, "Precompiled LibTorch header").
# Parsing <torch/types.h> is most of such a source's compile: moe_block.cpp takes 16 s without it and 7 s with it
# on a 2-core machine, a model suite 27 s and 18 s. One PCH is built (ropescope_torch_pch) and every target with a
# computing source reuses it; its other sources skip it, so they neither parse nor see LibTorch.
option(ROPESCOPE_TORCH_PCH "Precompile LibTorch's headers once for the sources that compute" ON)

if(ROPESCOPE_TORCH_PCH)
  # Built with the flags every computing target has and no more: GCC refuses a PCH built with other
  # code-generation flags or with a macro the user lacks (-Winvalid-pch, which CMake adds, says so, and -Werror
  # makes it an error). So LibTorch and the project's options, position-independent (Qt6::Core gives the
  # targets that link it -fPIC), and no Qt (whose QT_NO_DEBUG ropescope_kernels lacks).
  add_library(ropescope_torch_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/torch_pch.cpp)
  target_link_libraries(ropescope_torch_pch PRIVATE ropescope_options ${TORCH_LIBRARIES})
  set_target_properties(ropescope_torch_pch PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_precompile_headers(ropescope_torch_pch PRIVATE <torch/types.h> <torch/nn/functional/linear.h>)
endif()

# Gives `target`'s computing sources the PCH: those that include <torch/types.h> or the parity harness (which
# includes it). Call it after the target's sources are all added.
function(ropescope_use_torch_pch target)
  if(NOT ROPESCOPE_TORCH_PCH)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(folder ${target} SOURCE_DIR)
  set(computing FALSE)
  foreach(source IN LISTS sources)
    if(NOT source MATCHES "\\.cpp$")
      continue()
    endif()
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${folder}")
    file(STRINGS "${path}" includes REGEX "^#include (<torch/types\\.h>|\"tests/support/parity\\.h\")" LIMIT_COUNT 1)
    if(includes)
      set(computing TRUE)
    else()
      set_source_files_properties("${path}" TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
  if(computing)
    target_precompile_headers(${target} REUSE_FROM ropescope_torch_pch)
    # AUTOMOC's own source (empty for the suites, which include their .moc) would load the PCH for nothing: 3 s.
    get_target_property(automoc ${target} AUTOMOC)
    if(automoc)
      get_target_property(binary ${target} BINARY_DIR)
      set_source_files_properties("${binary}/${target}_autogen/mocs_compilation.cpp" TARGET_DIRECTORY ${target}
                                  PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
    # The PCH is built with -fPIC and GCC refuses it under other settings: a library that does not link Qt
    # (ropescope_kernels) is made position-independent too.
    get_target_property(type ${target} TYPE)
    if(type MATCHES "LIBRARY")
      set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    endif()
  endif()
endfunction()
