#!/usr/bin/env bash
# One GPU-machine session of issue 26 (selection engine, plans, CUDA graphs), from the repository
# root, executables in .gpu/ (xz-compressed or plain, see bench/README.md). Parts (default all):
#   tests     gpu_graphs (capture + replay of every path), gpu_dispatch, gpu_grouped
#   sweep     select_sweep: every promising way timed on random problems -> a selection table
#   heldout   dispatch_bench --random (problems no table has) beside torch.matmul (compare.py)
#   overhead  host_overhead (dispatch and dispatch_plan paths against a bare launch)
#   memcheck  compute-sanitizer memcheck on the captured paths, the narrow-alignment kernels
#             (128x128 and 64x64 tiles) and two f64 kernels of Hopper's DMMA
#             (driver API errors not reported: the launch path probes cuFuncGetParamInfo past the
#             last parameter, which the sanitizer counts as an error)
#   ISSUE26_PARTS="tests heldout" bash bench/issue26_session.sh
# Sizes: SWEEP_COUNT (f16/bf16 problems, default 250), SWEEP_COUNT_WIDE (f32/f64, default 60),
# HELDOUT_COUNT (default 200), HELDOUT_COUNT_WIDE (default 40); SWEEP_SEED (default 11; the
# f32/f64 sweep takes the next seed; held-out problems use seeds 21 and 22). Results in $OUT (default
# ./gpu-out), named <device>_<date>_issue26_*.
set -u
out="${OUT:-gpu-out}"
mkdir -p "$out"
parts="${ISSUE26_PARTS:-tests sweep heldout overhead}"
has() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z_' | sed 's/_80gb_hbm3//;s/[^a-z0-9_]//g')
p="$out/${device}_$(date -u +%Y-%m-%d)_issue26"
bin=/tmp/issue26-bin
mkdir -p "$bin"
for f in .gpu/*; do
  name=$(basename "$f" .xz)
  [ -x "$bin/$name" ] && continue
  case "$f" in
    *.xz) xz -dc "$f" > "$bin/$name" 2>/dev/null || python3 -c "import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())" "$f" > "$bin/$name" ;;
    *) cp "$f" "$bin/$name" ;;
  esac
  chmod +x "$bin/$name"
done

if has tests; then
  {
    for t in ${GPU_TESTS:-gpu_graphs gpu_dispatch gpu_grouped gpu}; do
      [ -x "$bin/$t" ] || continue
      echo "== $t"
      # gpu_graphs one test at a time (a global-mode capture makes other threads' allocations
      # fail); the others on 8 threads (their time is mostly the host reference).
      threads=8; [ "$t" = gpu_graphs ] && threads=1
      timeout 300 "$bin/$t" --test-threads $threads ${GPU_TEST_FILTER:-} 2>&1 | grep -vE "^test .* ok$"
    done
  } > "${p}_gpu_tests.txt" 2>&1
  grep -E "^== |test result|FAILED|panicked" "${p}_gpu_tests.txt" | head -40
fi
if has sweep; then
  timeout 420 "$bin/select_sweep" --count "${SWEEP_COUNT:-250}" --seed "${SWEEP_SEED:-11}" --dtype f16,bf16 --out "$out/sweep_16.tsv" 2> "$out/sweep.log"
  echo "sweep 16-bit rc=$? $(grep -c . "$out/sweep_16.tsv" 2>/dev/null) lines"
  timeout 240 "$bin/select_sweep" --count "${SWEEP_COUNT_WIDE:-60}" --seed "$((${SWEEP_SEED:-11} + 1))" --dtype f32,f64 --out "$out/sweep_wide.tsv" 2>> "$out/sweep.log"
  echo "sweep f32/f64 rc=$? $(grep -c . "$out/sweep_wide.tsv" 2>/dev/null) lines"
  { cat "$out/sweep_16.tsv"; grep -v '^#' "$out/sweep_wide.tsv" 2>/dev/null; } > "${p}_table.tsv"
  rm -f "$out/sweep_16.tsv" "$out/sweep_wide.tsv"
  tail -2 "$out/sweep.log"; gzip -f "$out/sweep.log"
fi
if has heldout; then
  timeout 300 "$bin/dispatch_bench" --random "${HELDOUT_COUNT:-200}" --seed 21 --dtype f16,bf16 --json --iters 20 --max-seconds 0.2 > "$out/ours.jsonl" 2> "$out/ours.log"
  timeout 200 "$bin/dispatch_bench" --random "${HELDOUT_COUNT_WIDE:-40}" --seed 22 --dtype f32,f64 --json --iters 10 --max-seconds 0.2 >> "$out/ours.jsonl" 2>> "$out/ours.log"
  echo "ours: $(grep -c . "$out/ours.jsonl") records, $(grep -c '"verified": false' "$out/ours.jsonl") not verified"
  python3 bench/compare.py --ours "$out/ours.jsonl" --out "${p}_heldout.jsonl" > "${p}_heldout.txt" 2>&1
  grep -iE "geomean|below|shapes" "${p}_heldout.txt" | head -20
  rm -f "$out/ours.jsonl"
fi
if has memcheck; then
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  {
    for t in gemm_plan_staged_k0 gemm_plan_odd_k gemm_plan_serial_split_k gemm_plan_skinny_dot_split \
        gemm_plan_skinny_axpy_split gemm_plan_skinny_tensor_split conv_plan_strided_dgrad_stride_phases grouped_prepared_moe; do
      "$sanitizer" --tool memcheck --report-api-errors no "$bin/gpu_graphs" --test-threads 1 --exact "$t" 2>&1 | grep -E "ERROR SUMMARY|test result"
    done
    for k in gemm_bf16_nt_align1 gemm_f16_tn_64x64_align1 gemm_bf16_nn_64x64_align2 \
        gemm_f64_nt_sm90_64x128x16 gemm_f64_tn_sm90_32x32x16_parallel; do
      "$sanitizer" --tool memcheck --report-api-errors no "$bin/gpu" --test-threads 1 "$k::" 2>&1 | grep -E "ERROR SUMMARY|test result"
    done
    # The skinny kernels forced onto every split, a ragged split included.
    for f in f16_tnt_skinny bf16_ntt_narrow f64_ntn_skinny; do
      "$sanitizer" --tool memcheck --report-api-errors no "$bin/gpu_dispatch" --test-threads 1 "$f" 2>&1 | grep -E "ERROR SUMMARY|test result"
    done
  } > "${p}_memcheck.txt" 2>&1
  cat "${p}_memcheck.txt"
fi
if has overhead; then
  timeout 120 "$bin/host_overhead" --json --batches 100 > "${p}_host_overhead.jsonl" 2> "$out/overhead.log"
  python3 - "${p}_host_overhead.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "ours_us" in r:
        print(f"{r['path']:<14} {r.get('rust_name',''):<44} {r['ours_us']:7.3f} us  over bare {r.get('overhead_us', 0):6.3f}")
PY
fi
