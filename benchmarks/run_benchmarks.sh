#!/usr/bin/env bash
# Runs the daydream pipeline benchmark on every shared Kineto trace and on 1x/10x/100x repetitions
# of the largest one, and prints a Markdown table on stdout (progress goes to stderr).
#
#   benchmarks/run_benchmarks.sh [TRACES_DIR]        (default: <repo>/../shared/traces)
#
# Environment:
#   DAYDREAM_BUILD_DIR   build folder holding bin/ (default <repo>/build; configure it Release)
#   DAYDREAM_BENCH_OUT   where the raw JSON lines are kept (default <repo>/benchmarks/out, git-ignored)
#   DAYDREAM_REPEATS     repetition factors of the large trace (default "1 10 100")
#   TMPDIR               where the repeated traces are written (100x is ~3.5 GB) and then deleted
#
# Every measurement runs in its own process, so each peak RSS belongs to one trace size.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
traces=${1:-$repo/../shared/traces}
build=${DAYDREAM_BUILD_DIR:-$repo/build}
out=${DAYDREAM_BENCH_OUT:-$repo/benchmarks/out}
repeats=${DAYDREAM_REPEATS:-1 10 100}
bench=$build/bin/daydream_bench_pipeline
repeat_tool=$build/bin/daydream_make_repeated_trace
cli=$build/bin/daydream
large_glob='resnet50-v100-dataloader/workers0/*.json.gz'

log() { echo "run_benchmarks: $*" >&2; }

if [[ ! -d $traces ]]; then
  log "SKIPPED: traces folder '$traces' not found (pass it as the first argument)"
  echo "_Benchmarks skipped: traces folder \`$traces\` not found._"
  exit 0
fi
# shellcheck source=benchmarks/common/preflight.sh
source "$repo/benchmarks/common/preflight.sh"
require_build "$build" "$bench" "$repeat_tool" "$cli"

mkdir -p "$out"
results=$out/results.jsonl
replay_check=$out/replay_10x.json
: >"$results"
rm -f "$replay_check"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/daydream-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# One measurement, one process. Large inputs get fewer runs (each ingest of 3.5 GB takes seconds).
measure() {  # label path
  local label=$1 path=$2 runs=3 sim_runs=5
  local size
  size=$(stat -c %s "$path")
  if ((size > 1000000000)); then runs=1 sim_runs=3; elif ((size > 200000000)); then runs=2 sim_runs=3; fi
  log "measuring $label ($size bytes on disk)"
  "$bench" --runs "$runs" --sim-runs "$sim_runs" --label "$label" "$path" >>"$results"
}

# 1. Every shared Kineto trace (execution traces, ET, are another format: left out).
mapfile -t files < <(find "$traces" -name '*.json.gz' -not -path '*/et/*' -not -name '*_et.json.gz' | sort)
if ((${#files[@]} == 0)); then
  log "SKIPPED: no Kineto *.json.gz traces under '$traces'"
  echo "_Benchmarks skipped: no Kineto traces under \`$traces\`._"
  exit 0
fi
for f in "${files[@]}"; do measure "${f#"$traces"/}" "$f"; done

# 2. The largest trace repeated K times (plain JSON, so 1x differs from the .gz row by the inflate).
large=$(compgen -G "$traces/$large_glob" | head -n 1 || true)
if [[ -z $large ]]; then
  log "SKIPPED repetitions: no $large_glob under '$traces'"
else
  for k in $repeats; do
    synthetic=$tmp/repeated_${k}x.json
    log "writing ${k}x repetition of ${large#"$traces"/}"
    "$repeat_tool" "$large" "$k" "$synthetic" 2>>"$out/make_repeated_trace.log"
    measure "${large#"$traces"/} x${k} (plain JSON)" "$synthetic"
    if [[ $k == 10 ]]; then
      log "replaying the 10x repetition"
      "$cli" replay --json "$synthetic" >"$replay_check"
    fi
    rm -f "$synthetic"
  done
fi

# 3. The table.
python3 - "$results" "$replay_check" <<'PY'
import json, os, sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
print("| trace | decoded MB | events | tasks | edges | ingest MB/s best (first run) | graph build tasks/s | simulation tasks/s | peak RSS MiB | graph alone MiB (B/task) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    per_task = r["rss_graph_mib"] * 2**20 / r["tasks"] if r["tasks"] else float("nan")
    print(f"| {r['trace']} | {r['bytes'] / 1e6:.1f} | {r['events']} | {r['tasks']} | {r['edges']} | "
          f"{r['ingest_mb_s']:.0f} ({r['ingest_mb_s_first']:.0f}) | {r['build_tasks_s'] / 1e6:.2f}M | "
          f"{r['sim_tasks_s'] / 1e6:.2f}M | {r['peak_rss_mib']:.0f} | {r['rss_graph_mib']:.0f} ({per_task:.0f}) |")
print()
print("Seconds per run (best of N; CPU user/system per run beside wall time; system time is mostly page faults):")
print()
print("| trace | N | read+inflate s | ingest s (user/sys) | graph build s (user/sys) | simulation s (user/sys) |")
print("|---|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['trace']} | {r['runs']}/{r['sim_runs']} | {r['read_s']:.3f} | "
          f"{r['ingest_s']:.3f} ({r['ingest_user_s']:.2f}/{r['ingest_sys_s']:.2f}) | "
          f"{r['build_s']:.3f} ({r['build_user_s']:.2f}/{r['build_sys_s']:.2f}) | "
          f"{r['sim_s']:.4f} ({r['sim_user_s']:.3f}/{r['sim_sys_s']:.3f}) |")

path = sys.argv[2]
if os.path.exists(path) and os.path.getsize(path) > 0:
    report = json.load(open(path))
    errors = [it["error"] for it in report["iterations"]]
    if errors:
        worst = max(errors, key=abs)
        print()
        print(f"Replay of the 10x repetition: {len(errors)} iterations, per-step error "
              f"min {100 * min(errors):+.4f}%, max {100 * max(errors):+.4f}%, worst |error| {100 * abs(worst):.4f}%; "
              f"GPU span error {100 * report['span']['error']:+.4f}%.")
PY
log "raw results: $results"
