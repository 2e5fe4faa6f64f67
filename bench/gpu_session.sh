#!/usr/bin/env bash
# One GPU-machine session: the GPU test suite, the main job, and ours-vs-cuBLAS, from executables
# built on a machine without a GPU (see README, "Running on a GPU machine"). Run from the repo root
# with the executables in .gpu/; results go to $OUT (or ./gpu-out).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
echo "== GPU test suite"; .gpu/gpu --test-threads 8 2>&1 | tee "$out/gpu_tests.txt"
echo "== main job"; .gpu/gemm 2>&1 | tee "$out/main_job.txt"
echo "== ours vs torch.matmul"
PYTHONUNBUFFERED=1 python3 bench/compare.py --gemm .gpu/gemm --out "$out/results.jsonl" 2>&1 | tee "$out/compare.txt"
