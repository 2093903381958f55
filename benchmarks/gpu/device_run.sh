#!/usr/bin/env bash
# The one command a session lent a GPU runs through the device tool (benchmarks/gpu/README.md):
# records every workload (benchmarks/gpu/record.py); then, where the session carried the CUPTI
# collector in .collector/ (libdaydream_cupti.so), its first GPU runs (collector_run.py); and packs
# everything into $OUT: one tar per GPU and workload, collector.tar, the manifest and the log,
# within the tool's limit of 8 files back.
#
#   benchmarks/gpu/device_run.sh [BUDGET_SECONDS=330] [record.py options...]
set -uo pipefail
cd "$(dirname "$0")/../.."
budget=${1:-330}
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
if [[ -f .collector/libdaydream_cupti.so ]]; then
  timeout 150 python3 benchmarks/gpu/collector_run.py --out "$work/collector" --library .collector/libdaydream_cupti.so \
    2>&1 | tee -a "$out/record.log"
  tar -C "$work" -cf "$out/collector.tar" collector
fi
ls -la "$out"
exit "$status"
