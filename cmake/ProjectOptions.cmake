# Warnings and sanitizers shared by every target of the project.
add_library(ropescope_options INTERFACE)
target_compile_options(ropescope_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)

if(ROPESCOPE_SANITIZE)
  target_compile_options(ropescope_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(ropescope_options INTERFACE -fsanitize=address,undefined)
endif()
