# Installs the build into a temporary prefix, then builds and runs a small consumer against it
# twice: with find_package(daydream) and with pkg-config. Run by ctest (install_and_consume):
#   cmake -DBUILD_DIR=... -DWORK_DIR=... -DSOURCE_DIR=... -DCXX=... -DTRACE=... -P check_install.cmake
cmake_minimum_required(VERSION 3.20)
foreach(var BUILD_DIR WORK_DIR SOURCE_DIR CXX TRACE)
  if(NOT ${var})
    message(FATAL_ERROR "check_install.cmake: pass -D${var}=...")
  endif()
endforeach()

# run(<what> <command...>): fails the test with the command's output when it fails.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

# check_consumer(<program>): it runs on the trace and prints the prediction line.
function(check_consumer what program)
  run("${what}: running the consumer" ${program} ${TRACE})
  if(NOT run_output MATCHES "^consumer: [1-9][0-9]* iterations, [1-9][0-9]* scenarios, faster_gpu:factor=2 speedup [0-9.]+x")
    message(FATAL_ERROR "${what}: unexpected output: ${run_output}")
  endif()
  message(STATUS "${what}: ${run_output}")
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(file include/daydream/daydream.hpp lib/cmake/daydream/daydreamConfig.cmake
        lib/cmake/daydream/daydreamConfigVersion.cmake lib/pkgconfig/daydream.pc bin/daydream)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "the install has no ${file}")
  endif()
endforeach()

# docs/install.md names every library the install holds: its `lib/libdaydream_{a,b,...}.a` list
# is exactly the static libraries installed, and the collector is named where it was installed.
file(READ ${SOURCE_DIR}/../../docs/install.md install_doc)
if(NOT install_doc MATCHES "`lib/libdaydream_{([a-z_,]+)}\\.a`")
  message(FATAL_ERROR "docs/install.md: no `lib/libdaydream_{...}.a` list of the libraries")
endif()
string(REPLACE "," ";" documented "${CMAKE_MATCH_1}")
list(SORT documented)
file(GLOB archives RELATIVE ${prefix}/lib ${prefix}/lib/libdaydream_*.a)
string(REGEX REPLACE "libdaydream_([a-z_]+)\\.a" "\\1" installed "${archives}")
list(SORT installed)
if(NOT documented STREQUAL installed)
  message(FATAL_ERROR "docs/install.md lists the libraries ${documented}; the install has ${installed}")
endif()
if(EXISTS ${prefix}/lib/libdaydream_cupti.so AND NOT install_doc MATCHES "`lib/libdaydream_cupti\\.so`")
  message(FATAL_ERROR "docs/install.md does not name the installed collector lib/libdaydream_cupti.so")
endif()

# 1. find_package(daydream 0.1), target daydream::daydream.
run("configure the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${WORK_DIR}/cmake-build
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release)
run("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/cmake-build)
check_consumer("find_package" ${WORK_DIR}/cmake-build/consumer)
# A version the package does not provide is refused (SameMinorVersion).
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${WORK_DIR}/cmake-wrong
                -DCMAKE_PREFIX_PATH=${prefix} "-DCMAKE_PROJECT_INCLUDE_BEFORE=${SOURCE_DIR}/wrong_version.cmake"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "compatible with requested version \"99.0\"")
  message(FATAL_ERROR "find_package(daydream 99.0) should have been refused by the version file:\n${err}")
endif()

# 2. pkg-config --cflags --libs daydream, compiled by hand.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
run("pkg-config" ${PKG_CONFIG} --cflags --libs daydream)
string(STRIP "${run_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run("compile with pkg-config" ${CXX} -O1 ${SOURCE_DIR}/consumer/main.cpp -o ${WORK_DIR}/pkg-consumer ${flags})
check_consumer("pkg-config" ${WORK_DIR}/pkg-consumer)
