#!/usr/bin/env bash
# One GPU-machine session, from executables built on a machine without a GPU (README, "Running on
# a GPU machine without Rust"). Run from the repository root with the executables in .gpu/:
#   .gpu/gpu (the GPU test suite), .gpu/gemm, .gpu/profiler, .gpu/host_overhead, .gpu/epilogue_bench,
#   .gpu/grouped_bench (built with `--features grouped`; parts issue11 and issue11_memcheck)
#
#   bash bench/gpu_session.sh [--quick]
#
# Steps (each one's output is tee'd into $OUT, default ./gpu-out; a failing step does not stop the
# later ones; each is cut off at its time limit, and all of them together stay within
# $GPU_SESSION_BUDGET seconds, default 540, 480 for GPU_SESSION_PARTS=issue4):
#   device info; GPU test suite; main job; profiler over --sweep issue3 for bf16 and f16 (tn) with
#   --json and --dispatch-out; compare.py (ours vs torch.matmul); host_overhead --json; torch's
#   host overhead; compute-sanitizer memcheck on one 3.x kernel of each schedule / tile scheduler;
#   profiler smoke over every kernel (all types and layouts). --quick: the smoke shapes instead of
#   issue3 and fewer iterations.
# Issue 4 steps (after those): profiler --sweep issue4_squares for f32_3xtf32, tf32 (2.x and 3.x),
#   f32_fastf16/bf16 and s8 (every output type), all layouts; profiler --sweep issue4_splitk for f16
#   (tn and tnn: the split-K kernels, the default f16 kernels, 3.x stream-K) with --split-k
#   1,2,4,8,16; compare.py --rerun-best for each; memcheck of the split-K and 3xTF32 kernels. Files
#   are named <device>_<date>_issue4_* (e.g. h200_2026-11-23_issue4_splitk.jsonl).
# Issue 5 steps (part issue5, not in the default): epilogue_bench (bf16 GEMM + bias + GELU, exact and
#   tanh, and the plain 128x256x64 bf16 kernels, on 4096^3, 8192^3, 4096x14336x4096) with --json;
#   compare_epilogue.py --rerun-ours (torch matmul+add+gelu, torch._addmm_activation(gelu),
#   torch.matmul); memcheck of the two fused kernels on a ragged shape. Files are named
#   <device>_<date>_issue5_epilogue* (e.g. h200_2026-11-23_issue5_epilogue.jsonl).
# Issue 11 steps (part issue11, not in the default): grouped_bench (grouped GEMM: MoE layers of
#   Mixtral and DeepSeek, uniform and zipf rows per expert, and equal-size group lists; every bf16
#   grouped kernel in the list and the device-resident (MoE) form; host overhead) with --json;
#   compare_grouped.py --rerun-ours (torch._grouped_mm, a torch.matmul loop, torch.bmm); memcheck of
#   grouped_bench on a small ragged workload for a 2.x kernel of each schedule and a 3.x kernel (also
#   alone as part issue11_memcheck). Files are named <device>_<date>_issue11_grouped*.
# GPU_SESSION_PARTS (comma-separated, default base,issue4) picks the parts: base = every step above
#   the issue 4 ones; tests = only the GPU test suite and the main job of base; issue4; issue5;
#   issue11; issue11_memcheck. The device
#   tool allows 10 minutes per command: run `GPU_SESSION_PARTS=base` and `GPU_SESSION_PARTS=issue4`
#   (or tests,issue4) as separate commands.
# The last lines printed are a summary (the device tool returns only the end of the output).
set -uo pipefail

quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    *) echo "usage: bash bench/gpu_session.sh [--quick]" >&2; exit 2 ;;
  esac
done

parts=${GPU_SESSION_PARTS:-base,issue4}
for part in ${parts//,/ }; do
  case "$part" in
    base | tests | issue4 | issue5 | issue11 | issue11_memcheck) ;;
    *) echo "GPU_SESSION_PARTS: unknown part '$part' (known: base, tests, issue4, issue5, issue11, issue11_memcheck)" >&2; exit 2 ;;
  esac
done
has_part() { [[ ",$parts," == *",$1,"* ]]; }
run_base=0 run_tests=0 run_issue4=0 run_issue5=0 run_issue11=0 run_issue11_memcheck=0
has_part base && run_base=1 && run_tests=1
has_part tests && run_tests=1
has_part issue4 && run_issue4=1
has_part issue5 && run_issue5=1
has_part issue11 && run_issue11=1 && run_issue11_memcheck=1
has_part issue11_memcheck && run_issue11_memcheck=1

out=${OUT:-gpu-out}
bin=${GPU_BIN:-.gpu}
# 9 minutes by default, 8 for the issue 4 and 5 parts without base or tests.
budget=${GPU_SESSION_BUDGET:-$((run_tests || run_base ? 540 : 480))}
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

"$bin/profiler" --list > "$out/kernels.tsv" 2>&1 || true
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
sanitized=()
if ((run_tests)); then
  step "GPU test suite" gpu_tests.txt 200 "$bin/gpu" --test-threads 8
  step "main job (gemm example)" main_job.txt 60 "$bin/gemm"
fi

if ((run_base)); then
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
fi # base

# ---------------------------------------------------------------------------------------------
# Issue 4: 3xTF32 / fast-f32 / int8 on large squares, split-K on deep-K problems with few tiles.
# ---------------------------------------------------------------------------------------------
device_slug=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  tr '[:upper:]' '[:lower:]' | sed -E 's/^nvidia //; s/ .*//; s/[^a-z0-9]+/_/g')
i4="${device_slug:-gpu}_$(date -u +%F)_issue4"
i4_memchecked=()
if ((run_issue4)); then
  if ((quick)); then
    i4_iters=(--iters 5 --warmup 2 --max-seconds-per-kernel 0.2)
  else
    i4_iters=(--iters 20 --warmup 5 --max-seconds-per-kernel 0.5)
  fi
  # No --dispatch-out: the dispatch table keys by operand types, in which TF32, 3xTF32 and the
  # fast f16/bf16 kernels are all f32.
  json_step "issue4 profiler squares f32,tf32,s8" "${i4}_squares.jsonl" "${i4}_squares.log" 150 \
    "$bin/profiler" --dtype f32_3xtf32,tf32,f32_fastf16,f32_fastbf16,s8 --layout all --sweep issue4_squares \
    "${i4_iters[@]}" --json
  json_step "issue4 profiler split-K f16" "${i4}_splitk.jsonl" "${i4}_splitk.log" 200 \
    "$bin/profiler" --dtype f16 --layout tn,tnn --sweep issue4_splitk --split-k 1,2,4,8,16 \
    --iters 10 --warmup 3 --max-seconds-per-kernel 0.2 --json
  for what in squares splitk; do
    step "issue4 compare.py $what" "${i4}_${what}_compare.txt" 150 \
      env PYTHONUNBUFFERED=1 python3 bench/compare.py --ours "$out/${i4}_${what}.jsonl" \
      --out "$out/${i4}_${what}_results.jsonl" --rerun-best "$bin/profiler"
  done
  if [[ -n "$sanitizer" ]]; then
    # New launch paths: serial split-K (semaphores), parallel split-K (partials + reduction),
    # stream-K with slices, 3xTF32, int8 with an f32 epilogue; ragged shapes.
    i4_memcheck() { # KERNEL SHAPE SPLIT_K
      i4_memchecked+=("$1")
      step "memcheck $1 (split-K $3)" "${i4}_memcheck_$1.txt" 90 \
        "$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 99 \
        "$bin/profiler" --kernels "$1" --shapes "$2" --split-k "$3" --iters 1 --warmup 0
    }
    i4_memcheck gemm_f16_tn_128x128_splitk_serial 1003x1000x1000 1,3,16
    i4_memcheck gemm_f16_tn_128x128_splitk_parallel 1003x1000x1000 1,3,16
    i4_memcheck f16_sm90_128x128x64_streamk 1003x1000x1000 4
    i4_memcheck gemm_f32_3xtf32_tn 1003x1000x1000 1,2
    i4_memcheck gemm_s8_tn_f32 1003x1008x1008 1,2
  else
    summary+=("$(printf '%-40s %-8s %5s  %s' "issue4 memcheck" "SKIPPED" "-" "compute-sanitizer not found")")
  fi
fi

# ---------------------------------------------------------------------------------------------
# Issue 5: fused epilogues, bf16 GEMM + bias + GELU against torch (unfused and cuBLASLt-fused).
# ---------------------------------------------------------------------------------------------
i5="${device_slug:-gpu}_$(date -u +%F)_issue5_epilogue"
i5_memchecked=()
if ((run_issue5)); then
  if ((quick)); then
    i5_iters=(--iters 10 --warmup 3)
  else
    i5_iters=(--iters 50 --warmup 10)
  fi
  step "issue5 epilogue_bench" "${i5}.txt" 150 \
    "$bin/epilogue_bench" "${i5_iters[@]}" --json "$out/${i5}.jsonl"
  step "issue5 compare_epilogue.py" "${i5}_compare.txt" 240 \
    env PYTHONUNBUFFERED=1 python3 bench/compare_epilogue.py --ours "$out/${i5}.jsonl" \
    --out "$out/${i5}_results.jsonl" --rerun-ours "$bin/epilogue_bench"
  if [[ -n "$sanitizer" ]]; then
    # The fused epilogue's bias load and GELU on a ragged M (N and K: the bias and TMA need
    # multiples of 8).
    for kernel in bf16_sm90_128x256x64_bias_gelu bf16_sm90_128x256x64_bias_gelu_taylor; do
      i5_memchecked+=("$kernel")
      step "memcheck $kernel" "${i5}_memcheck_$kernel.txt" 90 \
        "$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 99 \
        "$bin/epilogue_bench" --kernels "$kernel" --shapes 1003x1000x1000 --iters 1 --warmup 0
    done
  else
    summary+=("$(printf '%-40s %-8s %5s  %s' "issue5 memcheck" "SKIPPED" "-" "compute-sanitizer not found")")
  fi
fi

# ---------------------------------------------------------------------------------------------
# Issue 11: grouped GEMM (MoE layers, equal-size group lists) against torch._grouped_mm, a
# torch.matmul loop and torch.bmm.
# ---------------------------------------------------------------------------------------------
i11="${device_slug:-gpu}_$(date -u +%F)_issue11_grouped"
i11_memchecked=()
if ((run_issue11)); then
  if ((quick)); then
    i11_iters=(--iters 10 --warmup 2 --max-seconds 0.3 --host-batches 4)
  else
    i11_iters=(--iters 30 --warmup 5 --max-seconds 1 --host-batches 10)
  fi
  # Every workload (mixtral_up/down, deepseek_up/down x uniform/zipf, equal_64x512, equal_16x2048),
  # every bf16 grouped kernel, forms list and moe; the table on stdout, the records in the JSONL.
  step "issue11 grouped_bench" "${i11}.txt" 240 \
    "$bin/grouped_bench" "${i11_iters[@]}" --json "$out/${i11}.jsonl"
  step "issue11 compare_grouped.py" "${i11}_compare.txt" 300 \
    env PYTHONUNBUFFERED=1 python3 bench/compare_grouped.py --ours "$out/${i11}.jsonl" \
    --out "$out/${i11}_results.jsonl" --rerun-ours "$bin/grouped_bench"
fi
if ((run_issue11_memcheck)); then
  if [[ -n "$sanitizer" ]]; then
    # Both launch forms (the argument block uploaded, or written by the setup kernel from device
    # offsets) on ragged rows with empty experts first, inside and last, N and K not multiples of
    # the tile: one 2.x kernel of each schedule (the host schedule: list form only) and one 3.x
    # kernel (cluster 2x1x1).
    for kernel in grouped_bf16_tn_device grouped_bf16_tn_host grouped_bf16_sm90_128x256x64_2x1x1_cooperative; do
      i11_memchecked+=("$kernel")
      step "memcheck $kernel" "${i11}_memcheck_$kernel.txt" 90 \
        "$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 99 \
        "$bin/grouped_bench" --kernels "$kernel" --rows 0,1,77,130,3,0,259,1000,0 --n 264 --k 200 \
        --iters 1 --warmup 0 --max-seconds 0 --host-batches 0
    done
  else
    summary+=("$(printf '%-40s %-8s %5s  %s' "issue11 memcheck" "SKIPPED" "-" "compute-sanitizer not found")")
  fi
fi

echo
echo "================================ summary ($((SECONDS - start))s) ================================"
cat "$out/device.txt" | head -2
printf '%s\n' "${summary[@]}"
if ((run_tests)); then
echo "-- GPU tests:"
grep -E "^test result|passed|failed" "$out/gpu_tests.txt" 2>/dev/null | tail -3
echo "-- main job:"
grep -E "^(verified|time|rate):" "$out/main_job.txt" 2>/dev/null
fi
if ((run_base)); then
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
fi # base
if ((run_issue4)); then
  echo "-- issue 4 profiler:"
  for what in squares splitk; do
    grep -hE "^profiler:" "$out/${i4}_${what}.log" 2>/dev/null | sed "s/^/   $what: /"
    grep -hE '"verified": false' "$out/${i4}_${what}.jsonl" 2>/dev/null |
      sed -E 's/.*"rust_name": "([^"]*)".*"m": ([0-9]+), "n": ([0-9]+), "k": ([0-9]+), "batch": ([0-9]+), "split_k": ([0-9]+).*("(error|unsupported)": "[^"]{0,120}|"rel_error": [^,]*).*/   \1 \2x\3x\4 split \6: \7/' | head -12
  done
  # The tables, the accuracy and split-K sections; not the list of shapes below 0.8x (the table
  # has every ratio).
  for what in squares splitk; do
    echo "-- issue 4 ours vs torch, $what:"
    sed -n '/^shape/,$p' "$out/${i4}_${what}_compare.txt" 2>/dev/null | grep -vE '^wrote|^  .*: [0-9.]+$' | head -80
  done
  echo "-- issue 4 compute-sanitizer:"
  for kernel in "${i4_memchecked[@]}"; do
    printf '   %-44s %s\n' "$kernel" "$(grep -hE "ERROR SUMMARY" "$out/${i4}_memcheck_$kernel.txt" 2>/dev/null | tail -1)"
  done
fi
if ((run_issue5)); then
  echo "-- issue 5 epilogue_bench:"
  grep -hE "^epilogue_bench:|NO \(|ERROR" "$out/${i5}.txt" 2>/dev/null | head -12
  grep -hE "fused epilogue vs" "$out/${i5}.txt" 2>/dev/null
  echo "-- issue 5 ours vs torch:"
  sed -n '/^shape/,$p' "$out/${i5}_compare.txt" 2>/dev/null | grep -vE '^wrote' | head -60
  echo "-- issue 5 compute-sanitizer:"
  for kernel in "${i5_memchecked[@]}"; do
    printf '   %-44s %s\n' "$kernel" "$(grep -hE "ERROR SUMMARY" "$out/${i5}_memcheck_$kernel.txt" 2>/dev/null | tail -1)"
  done
fi
if ((run_issue11)); then
  echo "-- issue 11 grouped_bench:"
  grep -hE "^grouped_bench:|NO \(|ERROR|^  best " "$out/${i11}.txt" 2>/dev/null | head -40
  echo "-- issue 11 ours vs torch:"
  sed -n '/^summary:/,$p' "$out/${i11}_compare.txt" 2>/dev/null | grep -vE '^wrote' | head -30
fi
if ((run_issue11_memcheck)); then
  echo "-- issue 11 compute-sanitizer:"
  for kernel in "${i11_memchecked[@]}"; do
    printf '   %-50s %s\n' "$kernel" "$(grep -hE "ERROR SUMMARY" "$out/${i11}_memcheck_$kernel.txt" 2>/dev/null | tail -1)"
  done
fi
echo "results in $out/"

# The device tool brings back only a few files: pack everything into one archive.
if [[ -n "${OUT:-}" && "${PACK:-1}" == 1 ]]; then
  tar -czf /tmp/gpu_session.tgz -C "$out" . && find "$out" -mindepth 1 -delete && mv /tmp/gpu_session.tgz "$out/"
fi
