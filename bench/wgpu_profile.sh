#!/bin/bash
# Where a wgpu run's GPU time goes, kernel by kernel: runs a scenario on wgpu with
# cubecl's profiling logger on (`cubecl.toml`, `[profiling.logger] level = "basic"`:
# every kernel timed on the device) and sums the log per kernel.
# Usage, from the repository root: bench/wgpu_profile.sh SCENARIO [fgl-sim run options…]
#   FGL_SIM   the binary (default $CARGO_TARGET_DIR or target, release/fgl-sim)
#   PYTHON    a Python 3 for the summary (default python3)
# Profiling times each kernel apart: the run's wall time is not the unprofiled one.
set -eu
B=${FGL_SIM:-${CARGO_TARGET_DIR:-target}/release/fgl-sim}
B=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")
PY=${PYTHON:-python3}
SCENARIO=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
# cubecl reads cubecl.toml from the working directory.
printf '[profiling.logger]\nlevel = "basic"\nfile = "%s/kernels.log"\nappend = false\n' "$work" > "$work/cubecl.toml"
(cd "$work" && "$B" run "$SCENARIO" --backend wgpu --out "$work/out" --quiet "$@" > "$work/run.log" 2>&1) || { tail -5 "$work/run.log"; exit 1; }
"$PY" "$here/cubecl_kernels.py" "$work/kernels.log"
