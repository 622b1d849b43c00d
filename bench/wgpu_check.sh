#!/bin/bash
# The checks to run on a machine with a GPU, in one go (a lent GPU's time is short):
#   1. the wgpu unit tests (wgpu against the CPU, on the real adapter),
#   2. wgpu epochs on Cora and PubMed, the base binary against this one (paired),
#   3. `bench train --backend wgpu` against PyG-CUDA on the same GPU (the table of
#      docs/performance.md),
#   4. `bench layout --backend wgpu`: dense against sparse first-layer input, the
#      measurement behind `InputLayout::for_strategy`'s GPU rule,
#   5. every shipped scenario on wgpu: exit code, wall seconds, final metrics (compare
#      with the same scenario on the CPU).
# Usage, from the repository root: bench/wgpu_check.sh [OUT_DIR]
#   FGL_SIM        the binary to check (default $CARGO_TARGET_DIR or target, release/fgl-sim)
#   FGL_SIM_BASE   a binary to compare it with in step 2 (step 2 skipped without one)
#   FGL_SIM_TESTS  the library's test binary (`cargo test --release --no-run --lib` names
#                  it; step 1 skipped without one)
#   PYTHON         a Python with torch (CUDA) and torch_geometric (default python3)
#   FGL_DATA_DIR   the datasets (default ../shared/datasets)
# Step 2 needs no Python; step 3 prints "PyG comparison skipped" when torch cannot run.
set -u
B=${FGL_SIM:-${CARGO_TARGET_DIR:-target}/release/fgl-sim}
PY=${PYTHON:-python3}
export FGL_DATA_DIR=${FGL_DATA_DIR:-../shared/datasets}
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
step() { echo "== $(date -u +%T) $*"; }

step "machine"
nvidia-smi -L 2>/dev/null || echo "(no nvidia-smi)"
lscpu | grep -E "Model name|^CPU\(s\)"
$PY -c 'import torch, torch_geometric; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "pyg", torch_geometric.__version__)' 2>&1 | tail -1

if [ -n "${FGL_SIM_TESTS:-}" ]; then
  step "wgpu tests"
  CI=true timeout 300 "$FGL_SIM_TESTS" wgpu --test-threads 1 2>&1 | grep -E "^test |test result|panicked"
fi

if [ -n "${FGL_SIM_BASE:-}" ]; then
  step "wgpu epochs, base against this binary (Cora, PubMed)"
  for b in "$FGL_SIM_BASE" "$B" "$FGL_SIM_BASE" "$B"; do
    echo "-- $b"
    timeout 300 "$b" bench train --backend wgpu --epochs 10 --rounds 2 --workload cora --workload pubmed | grep -v "^bench\|peak"
  done
fi

step "wgpu against PyG-CUDA"
timeout 600 "$B" bench train --backend wgpu --epochs 10 --rounds 2 --compare-pyg "$PY" --pyg-device cuda

step "input layouts on wgpu (the GPU rule of InputLayout::for_strategy)"
timeout 300 "$B" bench layout --backend wgpu

step "shipped scenarios on wgpu (EC-LDA's: 20 rounds)"
for f in scenarios/*.yaml; do
  s=$(basename "$f" .yaml)
  extra=()
  case $s in ec-lda-*) extra=(--set federation.rounds=20) ;; esac
  t0=$(date +%s.%N)
  timeout 300 "$B" run "$f" --backend wgpu --out "$OUT/$s" --force --quiet "${extra[@]}" > "$OUT/$s.log" 2>&1
  rc=$?
  wall=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
  final=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['final'])" "$OUT/$s/metrics.json" 2>/dev/null)
  echo "$s: exit $rc, ${wall} s, final ${final:-none}"
  [ $rc -eq 0 ] || tail -3 "$OUT/$s.log"
done
step "done ($OUT)"
