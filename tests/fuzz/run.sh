#!/usr/bin/env bash
# Runs every libFuzzer target of a DAYDREAM_FUZZ=ON build for SECONDS each (default 20), from a
# copy of its seed corpus, and prints one line per target: executions, and the outcome. Any crash,
# sanitizer report, timeout (10 s per input) or runaway memory (2 GiB) fails the script and leaves
# the input under $OUT/<target>/ (default a temporary folder): add it to
# tests/fuzz/regressions/<target>/ with the fix (docs/reliability.md).
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS]
set -euo pipefail
build=$(cd "${1:?usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]}" && pwd)  # absolute: each target runs in its own folder
seconds=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}
status=0
for binary in "$build"/bin/daydream_fuzz_*; do
  [[ "$binary" == *_replay_* ]] && continue
  target=${binary##*/daydream_fuzz_}
  work="$out/$target"
  mkdir -p "$work/corpus"
  cp "$here/corpus/$target"/* "$work/corpus/"
  log="$work/fuzz.log"
  if (cd "$work" && "$binary" corpus -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 >"$log" 2>&1); then
    outcome="clean"
  else
    outcome="FAILED (see $log and the crash-/timeout-/oom- file beside it)"
    status=1
  fi
  runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  printf '%-14s %10s executions in %ss: %s\n' "$target" "$runs" "$seconds" "$outcome"
done
exit $status
