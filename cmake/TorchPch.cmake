# One precompiled LibTorch header for every source that computes (docs/CI.md, "Seventh session").
# Parsing <torch/types.h> is most of such a source's compile: moe_block.cpp takes 16 s without it and 7 s with it
# on a 2-core machine, a model suite 27 s and 18 s. One PCH is built (ropescope_torch_pch) and every target with a
# computing source reuses it; its other sources skip it, so they neither parse nor see LibTorch.
option(ROPESCOPE_TORCH_PCH "Precompile LibTorch's headers once for the sources that compute" ON)

if(ROPESCOPE_TORCH_PCH)
  # Built with the flags of the targets that reuse it, and no more: GCC refuses a PCH built with other
  # code-generation flags or with a macro its user lacks (-Winvalid-pch, which CMake adds, says so; -Werror makes it
  # an error). Every user links Qt6::Core, as this target does, and so has Qt's flags: -fPIC from Debian 12's Qt,
  # none from Debian 13's (whose GCC then makes position-independent executables by default). ropescope_kernels,
  # which has no Qt, keeps parsing LibTorch (three sources).
  add_library(ropescope_torch_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/torch_pch.cpp)
  target_link_libraries(ropescope_torch_pch PRIVATE ropescope_options Qt6::Core ${TORCH_LIBRARIES})
  target_precompile_headers(ropescope_torch_pch PRIVATE <torch/types.h> <torch/nn/functional/linear.h>)
endif()

# Gives `target`'s computing sources the PCH: those that include <torch/types.h> or the parity harness (which
# includes it). `target` links Qt6::Core (above). Call it after the target's sources are all added.
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
  endif()
endfunction()
