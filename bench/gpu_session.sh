#!/usr/bin/env bash
# One GPU-machine session, from executables built on a machine without a GPU (README, "Running on
# a GPU machine without Rust"). Run from the repository root with the executables in .gpu/:
#   .gpu/gpu (the GPU test suite), .gpu/gemm, .gpu/profiler, .gpu/host_overhead
#
#   bash bench/gpu_session.sh [--quick]
#
# Steps (each one's output is tee'd into $OUT, default ./gpu-out; a failing step does not stop the
# later ones; each is cut off at its time limit, and all of them together stay within
# $GPU_SESSION_BUDGET seconds, default 540):
#   device info; GPU test suite; main job; profiler over --sweep issue3 for bf16 and f16 (tn) with
#   --json and --dispatch-out; compare.py (ours vs torch.matmul); host_overhead --json; torch's
#   host overhead; compute-sanitizer memcheck on one 3.x kernel of each schedule / tile scheduler;
#   profiler smoke over every kernel (all types and layouts). --quick: the smoke shapes instead of
#   issue3 and fewer iterations.
# The last lines printed are a summary (the device tool returns only the end of the output).
set -uo pipefail

quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    *) echo "usage: bash bench/gpu_session.sh [--quick]" >&2; exit 2 ;;
  esac
done

out=${OUT:-gpu-out}
bin=${GPU_BIN:-.gpu}
budget=${GPU_SESSION_BUDGET:-540}
mkdir -p "$out"
start=$SECONDS
summary=()

# step NAME LOG LIMIT_SECONDS COMMAND...: runs COMMAND (stdout and stderr) into $out/LOG and the
# terminal, within LIMIT_SECONDS and what is left of the budget; records the exit status.
step() {
  local name=$1 log=$2 limit=$3
  shift 3
  local left=$((budget - (SECONDS - start)))
  if ((left < 15)); then
    summary+=("$(printf '%-40s %-8s %5s  %s' "$name" "SKIPPED" "-" "time budget spent")")
    return
  fi
  ((limit > left)) && limit=$left
  echo
  echo "== $name (limit ${limit}s) -> $out/$log"
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$out/$log"
  local rc=${PIPESTATUS[0]}
  local status="rc=$rc"
  ((rc == 124 || rc == 137)) && status="TIMEOUT"
  summary+=("$(printf '%-40s %-8s %4ss  %s' "$name" "$status" "$((SECONDS - t0))" "$log")")
}

# json_step NAME JSONL LOG LIMIT COMMAND...: as step, but stdout (JSON Lines) goes to $out/JSONL
# only and stderr to $out/LOG and the terminal.
json_step() {
  local name=$1 jsonl=$2 log=$3 limit=$4
  shift 4
  local left=$((budget - (SECONDS - start)))
  if ((left < 15)); then
    summary+=("$(printf '%-40s %-8s %5s  %s' "$name" "SKIPPED" "-" "time budget spent")")
    return
  fi
  ((limit > left)) && limit=$left
  echo
  echo "== $name (limit ${limit}s) -> $out/$jsonl, $out/$log"
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" > "$out/$jsonl" 2> >(tee "$out/$log" >&2)
  local rc=$?
  sleep 0.2 # let tee finish
  local status="rc=$rc"
  ((rc == 124 || rc == 137)) && status="TIMEOUT"
  summary+=("$(printf '%-40s %-8s %4ss  %s' "$name" "$status" "$((SECONDS - t0))" "$jsonl ($(wc -l < "$out/$jsonl") records)")")
}

if ((quick)); then
  sweep=(--sweep smoke)
  iters=(--iters 5 --warmup 2 --max-seconds-per-kernel 0.2)
else
  sweep=(--sweep issue3)
  iters=(--iters 20 --warmup 5 --max-seconds-per-kernel 1)
fi

echo "== device"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  date -u +"%Y-%m-%dT%H:%M:%SZ"
} 2>&1 | tee "$out/device.txt"

step "GPU test suite" gpu_tests.txt 200 "$bin/gpu" --test-threads 8
step "main job (gemm example)" main_job.txt 60 "$bin/gemm"
"$bin/profiler" --list > "$out/kernels.tsv" 2>&1 || true

json_step "profiler bf16,f16 tn ${sweep[*]}" profile.jsonl profile.log 300 \
  "$bin/profiler" --dtype bf16,f16 --layout tn "${sweep[@]}" "${iters[@]}" --json --dispatch-out "$out/dispatch.tsv"
if ((!quick)); then
  # Small-M problems also run transposed (D^T = B^T A^T) on the column-major-C kernels: profile
  # those problems too, so that the dispatch table and the comparison see both orientations.
  json_step "profiler bf16,f16 tnn small-M transposed" profile_t.jsonl profile_t.log 200 \
    "$bin/profiler" --dtype bf16,f16 --layout tnn --sweep issue3_small_m_transposed "${iters[@]}" \
    --json --dispatch-out "$out/dispatch_t.tsv"
  cat "$out/profile_t.jsonl" >> "$out/profile.jsonl"
  grep -v '^#' "$out/dispatch_t.tsv" >> "$out/dispatch.tsv" 2>/dev/null || true
fi
step "compare.py (ours vs torch.matmul)" compare.txt 300 \
  env PYTHONUNBUFFERED=1 python3 bench/compare.py --ours "$out/profile.jsonl" --out "$out/results.jsonl" \
  --rerun-best "$bin/profiler"

json_step "host_overhead" host_overhead.jsonl host_overhead.log 60 "$bin/host_overhead" --json
step "host_overhead (table)" host_overhead.txt 60 "$bin/host_overhead" --batches 100
step "torch host overhead" host_compare.txt 60 \
  python3 bench/compare.py --host-overhead --ours "$out/host_overhead.jsonl" --out "$out/host_results.jsonl"

# compute-sanitizer memcheck: one CUTLASS 3.x kernel per (schedule, tile scheduler), ragged shape.
# Memory errors only: API calls that return an error on purpose (probes) are not reported.
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
sanitized=()
if [[ -z "$sanitizer" ]]; then
  summary+=("$(printf '%-40s %-8s %5s  %s' "compute-sanitizer" "SKIPPED" "-" "compute-sanitizer not found")")
else
  mapfile -t sanitized < <(awk -F'\t' '!/^#/ && $3 == "3x" && !seen[$4 "/" $6]++ { print $1 }' "$out/kernels.tsv")
  for kernel in "${sanitized[@]}"; do
    step "memcheck $kernel" "memcheck_$kernel.txt" 120 \
      "$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 99 \
      "$bin/profiler" --kernels "$kernel" --shapes 1003x1000x1000 --iters 1 --warmup 0
  done
  ((${#sanitized[@]} == 0)) && summary+=("$(printf '%-40s %-8s %5s  %s' "compute-sanitizer" "SKIPPED" "-" "no 3.x kernel in this binary")")
fi

if ((!quick)); then
  json_step "profiler smoke, every kernel" profile_smoke.jsonl profile_smoke.log 120 \
    "$bin/profiler" --dtype all --layout all --sweep smoke --iters 5 --warmup 2 --json
fi

echo
echo "================================ summary ($((SECONDS - start))s) ================================"
cat "$out/device.txt" | head -2
printf '%s\n' "${summary[@]}"
echo "-- GPU tests:"
grep -E "^test result|passed|failed" "$out/gpu_tests.txt" 2>/dev/null | tail -3
echo "-- main job:"
grep -E "^(verified|time|rate):" "$out/main_job.txt" 2>/dev/null
echo "-- profiler:"
grep -hE "^profiler:" "$out/profile.log" "$out/profile_smoke.log" 2>/dev/null
if [[ -f "$out/profile.jsonl" ]]; then
  echo "   not verified / errors in the sweep:"
  grep -hE '"verified": false' "$out/profile.jsonl" "$out/profile_smoke.jsonl" 2>/dev/null |
    sed -E 's/.*"rust_name": "([^"]*)".*"m": ([0-9]+), "n": ([0-9]+), "k": ([0-9]+), "batch": ([0-9]+).*("(error|unsupported)": "[^"]{0,140}|"rel_error": [^,]*).*/   \1 \2x\3x\4x\5 \6/' | head -20
fi
echo "-- ours vs torch.matmul:"
sed -n '/^geometric mean/,$p' "$out/compare.txt" 2>/dev/null | head -40
echo "-- host overhead:"
cat "$out/host_overhead.txt" 2>/dev/null | tail -n +2
grep -E "^torch " "$out/host_compare.txt" 2>/dev/null | head -5
echo "-- compute-sanitizer:"
for kernel in "${sanitized[@]}"; do
  printf '   %-44s %s\n' "$kernel" "$(grep -hE "ERROR SUMMARY" "$out/memcheck_$kernel.txt" 2>/dev/null | tail -1)"
done
echo "results in $out/"

# The device tool brings back only a few files: pack everything into one archive.
if [[ -n "${OUT:-}" && "${PACK:-1}" == 1 ]]; then
  tar -czf /tmp/gpu_session.tgz -C "$out" . && find "$out" -mindepth 1 -delete && mv /tmp/gpu_session.tgz "$out/"
fi
