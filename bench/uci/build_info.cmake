# Writes OUT (a header) with the commit of the source tree at SOURCE_DIR, only when it changed, so
# that the results files of the UCI benchmark name the commit of the build that made them.
# Run at every build (bench/uci/CMakeLists.txt), not only at configure time.
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse HEAD OUTPUT_VARIABLE commit
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
if(failed OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT changes STREQUAL "")
    set(commit "${commit}+changes")
  endif()
endif()
set(text "// Written by bench/uci/build_info.cmake at build time.\n#pragma once\nnamespace occam::uci {\ninline constexpr const char* kSourceCommit = \"${commit}\";\n}\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
