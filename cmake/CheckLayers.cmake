# Fails when a file includes a header of a later stage of the pipeline (docs/architecture.md):
#
#   0 ingest     lib/common, lib/ingest, lib/cupti; daydream/{error,import_stats,trace,ingest,collector}.hpp
#   1 graph      lib/graph, lib/transform; daydream/{graph,layers,transform}.hpp (the graph and its edits)
#   2 simulate   lib/simulate; daydream/simulate.hpp
#   3 analyze    lib/model, lib/analyze; daydream/{model,analyze,device,roofline,cost}.hpp (cost models, GPUs and their prices, facts read off a graph)
#   4 predict    lib/scenario, lib/report, lib/predict; daydream/{scenario,predict,bottleneck,validate}.hpp, daydream/report/*.hpp
#   5 job        lib/job; daydream/job.hpp
#   6 scenarios  scenarios/; daydream/daydream.hpp (everything)
#   7 tools      lib/cli
#
# A file may include headers of its own stage and of earlier ones. Run at build time:
#   cmake -DROOT=<source dir> -P cmake/CheckLayers.cmake
cmake_minimum_required(VERSION 3.20)  # policies of a script run with -P
if(NOT ROOT)
  message(FATAL_ERROR "CheckLayers.cmake: pass -DROOT=<source dir>")
endif()

set(_stage_names ingest graph simulate analyze predict job scenarios tools)
set(_dirs_0 common ingest cupti)
set(_dirs_1 graph transform)
set(_dirs_2 simulate)
set(_dirs_3 model analyze)
set(_dirs_4 scenario report predict)
set(_dirs_5 job)
set(_dirs_6 scenarios)  # the top-level scenarios/ folder
set(_dirs_7 cli)
set(_headers_0 error import_stats trace ingest collector)
set(_headers_1 graph layers transform)
set(_headers_2 simulate)
set(_headers_3 model analyze device roofline cost)
set(_headers_4 scenario predict bottleneck validate report/replay report/stats report/layers report/chrome_trace)
set(_headers_5 job)
set(_headers_6 daydream)

# _stage_of(<out> <kind: dirs|headers> <name>): the stage index, or -1 when the name is unknown.
function(_stage_of out kind name)
  foreach(i RANGE 0 7)
    if(DEFINED _${kind}_${i} AND name IN_LIST _${kind}_${i})
      set(${out} ${i} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} -1 PARENT_SCOPE)
endfunction()

set(_violations "")
set(_unknown "")
# _check(<file> <kind: dirs|headers> <name> <label>): every quoted include of `file`, which belongs
# to the stage of `name` (a folder of lib/ or a public header; `label` names it in messages),
# against that stage.
function(_check file kind name label)
  file(RELATIVE_PATH rel ${ROOT} ${file})
  _stage_of(stage ${kind} ${name})
  if(stage EQUAL -1)
    string(APPEND _unknown "\n  ${rel}: ${label} belongs to no stage (add it to cmake/CheckLayers.cmake)")
    set(_unknown "${_unknown}" PARENT_SCOPE)
    return()
  endif()
  list(GET _stage_names ${stage} from)
  file(STRINGS ${file} _includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
  foreach(line IN LISTS _includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" included "${line}")
    if(included MATCHES "^daydream/([a-z_/]+)\\.hpp$")
      _stage_of(target headers ${CMAKE_MATCH_1})
    elseif(included MATCHES "^([a-z_]+)/")
      _stage_of(target dirs ${CMAKE_MATCH_1})
    else()
      continue()  # a header beside the file ("builtin.hpp")
    endif()
    if(target EQUAL -1)
      string(APPEND _unknown "\n  ${rel} includes \"${included}\", which belongs to no stage")
    elseif(target GREATER stage)
      list(GET _stage_names ${target} to)
      string(APPEND _violations "\n  ${rel} (stage ${from}) includes \"${included}\" (stage ${to})")
    endif()
  endforeach()
  set(_unknown "${_unknown}" PARENT_SCOPE)  # the caller's lists, extended
  set(_violations "${_violations}" PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE _lib_files ${ROOT}/lib/*.cpp ${ROOT}/lib/*.hpp ${ROOT}/lib/*.h)
foreach(file IN LISTS _lib_files)
  file(RELATIVE_PATH rel ${ROOT}/lib ${file})
  string(REGEX REPLACE "/.*" "" dir "${rel}")
  _check(${file} dirs ${dir} lib/${dir})
endforeach()
file(GLOB _public ${ROOT}/include/daydream/*.hpp ${ROOT}/include/daydream/report/*.hpp)
foreach(file IN LISTS _public)
  file(RELATIVE_PATH name ${ROOT}/include/daydream ${file})
  string(REGEX REPLACE "\\.hpp$" "" name "${name}")  # "graph", "report/replay"
  _check(${file} headers ${name} daydream/${name}.hpp)
endforeach()
file(GLOB _scenario_files ${ROOT}/scenarios/*.cpp ${ROOT}/scenarios/*.hpp)
foreach(file IN LISTS _scenario_files)
  _check(${file} dirs scenarios scenarios/)
endforeach()

if(_violations OR _unknown)
  message(FATAL_ERROR "layer check failed: a stage may include only its own and earlier stages "
                      "(cmake/CheckLayers.cmake, docs/architecture.md):${_violations}${_unknown}")
endif()
