# ctest helper (cmake -P): runs the daydream CLI and checks its exit code and output, which
# PASS_REGULAR_EXPRESSION alone cannot (it ignores the exit code).
#   cmake -DDAYDREAM=path [-DARG0=... -DARG1=... up to ARG19] [-DEXIT=0] [-DMATCH=regex]
#         [-DSTDOUT_LINES=n] [-DSTDOUT_JSON=1] -P run_cli.cmake
# MATCH is matched against stdout followed by stderr; STDOUT_LINES counts stdout's lines;
# STDOUT_JSON=1 requires stdout to parse as one JSON object (string(JSON), CMake >= 3.19).
# Arguments are separate variables so that specs keep their ',' and '|' as written.
cmake_minimum_required(VERSION 3.19)
if(NOT DEFINED DAYDREAM)
  message(FATAL_ERROR "run_cli.cmake: -DDAYDREAM=... is required")
endif()
if(NOT DEFINED EXIT)
  set(EXIT 0)
endif()
set(command "${DAYDREAM}")
foreach(i RANGE 19)
  if(DEFINED ARG${i})
    list(APPEND command "${ARG${i}}")
  endif()
endforeach()

execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "stdout:\n${out}\nstderr:\n${err}")
if(NOT status STREQUAL "${EXIT}")
  message(FATAL_ERROR "exit status '${status}', expected ${EXIT}")
endif()
if(DEFINED MATCH AND NOT "${out}${err}" MATCHES "${MATCH}")
  message(FATAL_ERROR "the output does not match: ${MATCH}")
endif()
if(DEFINED STDOUT_LINES)
  string(REGEX MATCHALL "\n" newlines "${out}")
  list(LENGTH newlines lines)
  if(NOT lines EQUAL STDOUT_LINES)
    message(FATAL_ERROR "stdout has ${lines} lines, expected ${STDOUT_LINES}")
  endif()
endif()
if(STDOUT_JSON)
  string(JSON type ERROR_VARIABLE error TYPE "${out}")
  if(error OR NOT type STREQUAL "OBJECT")
    message(FATAL_ERROR "stdout is not one JSON object: ${error}")
  endif()
endif()
