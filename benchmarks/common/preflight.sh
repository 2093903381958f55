# shellcheck shell=bash
# Checks shared by the benchmark drivers; sourced after they define `log`.

# require_build BUILD_DIR TOOL...: every tool is built, python3 is there to format the tables,
# and a warning when BUILD_DIR is not a Release build.
require_build() {
  local build=$1 tool build_type
  shift
  for tool in "$@"; do
    if [[ ! -x $tool ]]; then
      log "missing $tool: build first (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDAYDREAM_BUILD_BENCHMARKS=ON && cmake --build build -j2)"
      exit 1
    fi
  done
  command -v python3 >/dev/null || { log "python3 is needed to format the tables"; exit 1; }
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
  [[ $build_type == Release ]] || log "WARNING: $build is a '${build_type:-unknown}' build, not Release: numbers are not representative"
}
