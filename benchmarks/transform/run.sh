#!/usr/bin/env bash
# Benchmarks the transformation primitives on a ~1M-task graph (K copies of the
# resnet50-v100-dataloader/workers0 trace, default K = 13 -> 1,013,649 tasks) through the C++ API
# and, when `import daydream` works, through the Python API; prints Markdown tables on stdout
# (progress goes to stderr).
#
#   benchmarks/transform/run.sh [TRACES_DIR]        (default: <repo>/../shared/traces)
#
# Environment:
#   DAYDREAM_BUILD_DIR   build folder holding bin/ and python/ (default <repo>/build; Release)
#   DAYDREAM_BENCH_OUT   where the raw JSON lines are kept (default <repo>/benchmarks/out, git-ignored)
#   DAYDREAM_COPIES      copies of the trace (default 13)
#   DAYDREAM_RUNS        best of N for each measurement (default 5)
#   DAYDREAM_PYTHON      "0" skips the Python benchmark (default: run it when daydream imports)
#   TMPDIR               where the repeated trace (~0.45 GB at K = 13) is written, then deleted
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
traces=${1:-$repo/../shared/traces}
build=${DAYDREAM_BUILD_DIR:-$repo/build}
out=${DAYDREAM_BENCH_OUT:-$repo/benchmarks/out}
copies=${DAYDREAM_COPIES:-13}
runs=${DAYDREAM_RUNS:-5}
bench=$build/bin/daydream_bench_transform
repeat_tool=$build/bin/daydream_make_repeated_trace
large_glob='resnet50-v100-dataloader/workers0/*.json.gz'

log() { echo "transform/run.sh: $*" >&2; }

if [[ ! -d $traces ]]; then
  log "SKIPPED: traces folder '$traces' not found (pass it as the first argument)"
  echo "_Transformation benchmark skipped: traces folder \`$traces\` not found._"
  exit 0
fi
large=$(compgen -G "$traces/$large_glob" | head -n 1 || true)
if [[ -z $large ]]; then
  log "SKIPPED: no $large_glob under '$traces'"
  echo "_Transformation benchmark skipped: no \`$large_glob\` under \`$traces\`._"
  exit 0
fi
# shellcheck source=benchmarks/common/preflight.sh
source "$repo/benchmarks/common/preflight.sh"
require_build "$build" "$bench" "$repeat_tool"

mkdir -p "$out"
results=$out/transform.jsonl
py_results=$out/transform_python.jsonl
: >"$results"
rm -f "$py_results"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/daydream-tbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

synthetic=$tmp/repeated_${copies}x.json
label="${large#"$traces"/} x${copies}"
log "writing ${copies}x repetition of ${large#"$traces"/}"
"$repeat_tool" "$large" "$copies" "$synthetic" 2>>"$out/make_repeated_trace.log"

log "C++ benchmark (best of $runs)"
"$bench" --runs "$runs" --label "$label" "$synthetic" >"$results"

python_note=""
if [[ ${DAYDREAM_PYTHON:-1} == 0 ]]; then
  python_note="Python benchmark skipped (DAYDREAM_PYTHON=0)."
elif ! PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" python3 -c 'import daydream' 2>"$tmp/import.err"; then
  python_note="Python benchmark skipped: \`import daydream\` fails with PYTHONPATH=$build/python ($(tail -n 1 "$tmp/import.err"))."
  log "SKIPPED Python: $(tail -n 1 "$tmp/import.err")"
else
  log "Python benchmark (best of $runs)"
  PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" python3 "$here/bench_python.py" --runs "$runs" --label "$label" \
    "$synthetic" >"$py_results"
fi
rm -f "$synthetic"

python3 - "$results" "$py_results" "$python_note" <<'PY'
import json, os, sys

def read(path):
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]

cpp, py, note = read(sys.argv[1]), read(sys.argv[2]), sys.argv[3]
one = lambda rows, bench: next((r for r in rows if r["bench"] == bench), None)
allof = lambda rows, bench: [r for r in rows if r["bench"] == bench]
ms = lambda s: f"{1e3 * s:.2f}"
code = lambda text: "`" + text.replace("|", "\\|") + "`"  # a | inside a table cell must be escaped
mrate = lambda x: f"{x / 1e6:.1f}M"

g = one(cpp, "graph")
print(f"Graph: {g['label']}: {g['tasks']:,} tasks ({g['kernels']:,} kernels), {g['edges']:,} edges, "
      f"{g['iterations']} iterations; load {g['load_s']:.2f} s, build {g['build_s']:.2f} s; graph heap "
      f"{g['heap_graph_mib']:.0f} MiB (RSS {g['rss_graph_mib']:.0f} MiB); peak RSS {g['peak_rss_mib']:.0f} MiB (ingest).")
print()
print("Select (+ scale), C++ API, every task scanned (best of N; ms):")
print()
print("| call | selected | select ms | scale ms | scanned tasks/s (select) | tasks/s incl. scale |")
print("|---|---:|---:|---:|---:|---:|")
rates = []
for r in allof(cpp, "select"):
    rates.append(r["total_tasks_s"])
    scale = ms(r["scale_s"]) if r["scaled"] else "-"
    print(f"| {code(r['call'])} | {r['selected']:,} | {ms(r['select_s'])} | {scale} | {mrate(r['select_tasks_s'])} | "
          f"{mrate(r['total_tasks_s'])} |")
amp = one(cpp, "amp")
print(f"| AMP (both calls above, on a fresh copy) | - | - | - | - | {mrate(amp['amp_tasks_s'])} ({ms(amp['amp_s'])} ms) |")
print()
print(f"Target >= 10M tasks/s: slowest case {mrate(min(rates))} tasks/s: **{'met' if min(rates) >= 1e7 else 'NOT met'}**.")
print()

c, fe = one(cpp, "copy"), one(cpp, "first_edit")
print("| copy | seconds (best / first) | heap MiB | MB/s | tasks/s |")
print("|---|---:|---:|---:|---:|")
print(f"| `Graph copy(graph)` | {c['copy_s']:.4f} / {c['copy_s_first']:.4f} | {c['copy_mib']:.0f} | {c['copy_mb_s']:.0f} | {mrate(c['copy_tasks_s'])} |")
print(f"| first change of a copy (one `remove`) | {fe['first_edit_s']:.4f} | {fe['first_edit_mib']:.0f} | - | - |")
print()

print("| simulate | live tasks | best s | first s | tasks/s | makespan ms |")
print("|---|---:|---:|---:|---:|---:|")
for r in allof(cpp, "simulate"):
    print(f"| {r['graph']} | {r['tasks']:,} | {r['sim_s']:.4f} | {r['sim_s_first']:.4f} | {mrate(r['sim_tasks_s'])} | {r['makespan_ms']:.1f} |")
sp = one(cpp, "amp_speedup")
print()
print(f"AMP predicted speedup: {sp['speedup']:.3f}x ({sp['original_ms']:.1f} -> {sp['amp_ms']:.1f} ms).")
print()

rm, ins = one(cpp, "remove"), one(cpp, "insert")
print("| edit | ops | total s | us per op |")
print("|---|---:|---:|---:|")
print(f"| remove (kernels spread evenly) | {rm['ops']:,} | {rm['remove_s']:.4f} | {rm['per_op_us']:.2f} |")
print(f"| insert (comm task after a kernel, before its stream successor) | {ins['ops']:,} | {ins['insert_s']:.4f} | "
      f"{ins['per_op_us']:.2f} (first op {ins['first_op_ms']:.1f} ms, then {ins['rest_per_op_us']:.2f}) |")
print()

if py:
    print("Python API (same graph):")
    print()
    print("| call | selected | seconds | tasks/s |")
    print("|---|---:|---:|---:|")
    for r in allof(py, "select") + allof(py, "select_py"):
        print(f"| {code(r['call'])} | {r['selected']:,} | {r.get('total_s', r['select_s']):.4f} | "
              f"{mrate(r.get('total_tasks_s', r['select_tasks_s']))} |")
    pc = one(py, "copy")
    print(f"| `g.copy()` | - | {pc['copy_s']:.4f} | {mrate(pc['copy_tasks_s'])} |")
    for r in allof(py, "simulate"):
        print(f"| `g.simulate()` ({r['graph']}) | - | {r['sim_s']:.4f} | {mrate(r['sim_tasks_s'])} |")
    print()
    print(f"Python load: {one(py, 'graph')['load_s']:.2f} s; peak RSS {one(py, 'peak')['peak_rss_mib']:.0f} MiB.")
else:
    print(f"_{note or 'Python benchmark: no results.'}_")
PY
log "raw results: $results (Python: $py_results when it ran)"
