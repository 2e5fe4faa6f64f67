#!/usr/bin/env bash
# Issue 12 on the GPU machine (executables in .gpu/, see README "Running on a GPU machine without
# Rust"): the dispatch GPU suite and the GEMM GPU suite; the main job (through dispatch); the f32
# step of the dispatch sweep again (3xTF32); dispatch_bench over the issue-12 sweep (bf16, f16 tn),
# the unaligned shapes (every float type) and f32/f64 subsets, then compare.py beside torch.matmul;
# 3xTF32 at 4096^3 and 8192^3 beside cuBLAS fp32 (TF32 off) with both errors against float64.
# Outputs in $OUT (default gpu-out), files named <device>_<date>_issue12_*.
set -uo pipefail
out=${OUT:-gpu-out}
bin=${GPU_BIN:-.gpu}
mkdir -p "$out"
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr '[:upper:]' '[:lower:]' | sed -E 's/^nvidia //; s/ .*//')
p="$out/${dev}_$(date -u +%F)_issue12"
start=$SECONDS
summary=()
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout --kill-after=5 "$limit" "$@"
  local rc=$?
  summary+=("$(printf '%-28s rc=%-3s %4ss' "$name" "$rc" "$((SECONDS - t0))")")
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "${p}_device.txt"
{
  step "gpu_dispatch suite" 200 "$bin/gpu_dispatch"
  step "gpu suite" 200 "$bin/gpu"
} > "${p}_gpu_tests.txt" 2>&1
step "main job" 60 "$bin/gemm" > "${p}_main_job.txt" 2>&1
profile=${ISSUE12_PROFILE:-1}  # 0: skip the profiler steps (tests, main job, dispatch vs torch only)
if ((profile)); then
# The f32 step of bench/run_dispatch_sweep.sh again (the 3.x 3xTF32 kernel with its fixed split).
step "profiler f32 sweep" 90 "$bin/profiler" --dtype f32_3xtf32,f32 --layout tn,tt,nnn --sweep issue12_quick \
  --iters 20 --warmup 3 --max-seconds-per-kernel 0.02 --raster auto,m,n --swizzle 0,1,2,4,8 --split-k 1,2,4,8 \
  --tuning-top 2 --json --dispatch-out "${p}_dispatch_f32.tsv" > /dev/null 2> "${p}_f32_sweep.log"
# More split-K slices (16, 32) for the shapes with few output tiles: K-heavy squares (tn) and the
# small-M problems run transposed (tnn); rows merged into the table where faster
# (the build merges tables of one device; the fastest row of a way serves it).
kheavy=256x256x8192,256x256x12288,256x256x16384,256x256x32768,512x512x8192,512x512x12288,512x512x16384,512x512x32768,1024x1024x8192,1536x1536x12288
step "profiler kheavy splits" 120 "$bin/profiler" --dtype bf16,f16 --layout tn --shapes "$kheavy" \
  --iters 20 --warmup 3 --max-seconds-per-kernel 0.02 --split-k 1,2,4,8,16,32 --tuning-top 3 \
  --dispatch-out "${p}_dispatch_kheavy.tsv" > /dev/null 2> "${p}_kheavy.log"
step "profiler small-m splits" 150 "$bin/profiler" --dtype bf16,f16 --layout tnn --sweep issue12_small_m_transposed \
  --iters 20 --warmup 3 --max-seconds-per-kernel 0.02 --split-k 1,2,4,8,16 --tuning-top 2 \
  --dispatch-out "${p}_dispatch_small_m.tsv" > /dev/null 2> "${p}_small_m.log"
fi
# Dispatch as a user calls it, then torch beside it.
{
  step "dispatch_bench issue12" 200 "$bin/dispatch_bench" --dtype bf16,f16 --sweep issue12 --iters 20 --warmup 3 --max-seconds 0.2 --json
  step "dispatch_bench unaligned" 90 "$bin/dispatch_bench" --dtype bf16,f16,f32,f64 --sweep issue12_unaligned --iters 10 --warmup 2 --max-seconds 0.2 --json
  step "dispatch_bench layouts" 60 "$bin/dispatch_bench" --dtype bf16,f32,f64 --layout nn,nt,tt,tnn --shapes 4096x4096x4096,16x8192x8192,1000x1000x1000 --iters 10 --warmup 2 --max-seconds 0.2 --json
  step "dispatch_bench f32/f64" 90 "$bin/dispatch_bench" --dtype f32,f64 --sweep issue12_quick --iters 10 --warmup 2 --max-seconds 0.2 --json
} > "${p}_dispatch.jsonl" 2> "${p}_dispatch.log"
step "compare.py dispatch" 300 python3 bench/compare.py --ours "${p}_dispatch.jsonl" --out "${p}_dispatch_results.jsonl" > "${p}_dispatch_compare.txt" 2>&1
# 3xTF32 on Hopper beside cuBLAS fp32 (TF32 off); compare.py measures torch's error too.
((profile)) && step "profiler 3xtf32" 120 "$bin/profiler" --kernels f32_3xtf32_sm90_tn,gemm_f32_3xtf32_tn,gemm_f32_simt_tt --shapes 4096x4096x4096,8192x8192x8192 --iters 20 --warmup 3 --json > "${p}_3xtf32.jsonl" 2> "${p}_3xtf32.log"
((profile)) && step "compare.py 3xtf32" 120 python3 bench/compare.py --ours "${p}_3xtf32.jsonl" --out "${p}_3xtf32_results.jsonl" > "${p}_3xtf32_compare.txt" 2>&1
echo "=== summary ($((SECONDS - start))s)"
printf '%s\n' "${summary[@]}"
grep -hE "^test result" "${p}_gpu_tests.txt"
grep -hE "FAILED|failed" "${p}_gpu_tests.txt" | head -15
grep -hE "^(path|kernel|verified|time|rate):" "${p}_main_job.txt"
grep -c . "${p}_dispatch.jsonl"; grep -c '"verified": false' "${p}_dispatch.jsonl"
grep -h '"verified": false' "${p}_dispatch.jsonl" | cut -c1-300 | head -5
grep -hE "geometric mean|shape\(s\) below|without a verified" "${p}_dispatch_compare.txt"
tail -25 "${p}_3xtf32_compare.txt"
# The device tool brings back a few files: everything in one archive.
tar -czf /tmp/issue12.tgz -C "$out" . && find "$out" -mindepth 1 -delete && mv /tmp/issue12.tgz "$out/"
