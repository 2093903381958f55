#!/usr/bin/env bash
# The one command a session lent a GPU runs through the device tool (benchmarks/gpu/README.md):
# records every workload (benchmarks/gpu/record.py) and packs the recordings into $OUT as one tar
# per GPU and workload plus the manifest and the log, within the tool's limit of 8 files back.
#
#   benchmarks/gpu/device_run.sh [BUDGET_SECONDS=420] [record.py options...]
set -uo pipefail
cd "$(dirname "$0")/../.."
budget=${1:-420}
shift || true
out=${OUT:?the device tool sets OUT}
work=$(mktemp -d)
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$out/nvidia-smi.csv"
python3 benchmarks/gpu/record.py --out "$work" --budget "$budget" "$@" 2>&1 | tee "$out/record.log"
status=${PIPESTATUS[0]}
for gpu in "$work"/*/; do
  name=$(basename "$gpu")
  cp "$gpu/manifest.json" "$out/$name.manifest.json"
  for workload in "$gpu"*/; do
    tar -C "$work" -cf "$out/$name.$(basename "$workload").tar" "$name/$(basename "$workload")"
  done
done
ls -la "$out"
exit "$status"
