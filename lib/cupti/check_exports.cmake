# cmake -DLIBRARY=libdaydream_cupti.so -P check_exports.cmake
# The injection library must export InitializeInjection (CUDA_INJECTION64_PATH) and the collector's
# C API, and nothing of daydream's C++ code (its copy of the core stays private, so it cannot clash
# with the copy inside the program's own daydream module).
find_program(NM_TOOL NAMES nm llvm-nm REQUIRED)
execute_process(COMMAND ${NM_TOOL} -D --defined-only ${LIBRARY} OUTPUT_VARIABLE symbols RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "nm -D ${LIBRARY} failed (${status})")
endif()
foreach(name InitializeInjection daydream_collector_abi_version daydream_collector_start daydream_collector_stop
        daydream_collector_flush)
  if(NOT symbols MATCHES "[ \t]T ${name}\n")
    message(FATAL_ERROR "${LIBRARY} does not export ${name}:\n${symbols}")
  endif()
endforeach()
if(symbols MATCHES "_ZN8daydream")
  message(FATAL_ERROR "${LIBRARY} exports daydream C++ symbols (expected hidden visibility):\n${symbols}")
endif()
message(STATUS "${LIBRARY}: exports InitializeInjection and the daydream_collector_* C API, nothing else of daydream")
