# tally_target_defaults(<target>): warnings and sanitizers as target properties, never as
# strings in CMAKE_<LANG>_FLAGS. CUDA sources get the host warnings through -Xcompiler.
function(tally_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
    # GCC 12 reports -Wrestrict on std::string concatenation inside libstdc++ (GCC bug 105329).
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>
    $<$<COMPILE_LANGUAGE:CUDA>:--Werror=cross-execution-space-call -Xcompiler=-Wall,-Wextra>)
  if(TALLY_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
    # PUBLIC: whatever links a sanitized static library needs the runtime too
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
endfunction()
