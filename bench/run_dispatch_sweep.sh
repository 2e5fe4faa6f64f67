#!/usr/bin/env bash
# Measures the dispatch table of the GPU it runs on (issue 12): per shape and operand types the
# fastest verified (kernel, split-K slices, raster order, swizzle), in the 13-column format the
# build embeds (bench/dispatch/*.tsv, merged per device; see codegen/src/table.rs).
#
# Runs on a GPU machine without Rust, from the repository root, with the profiler built here and
# copied into the git-ignored .gpu/ (as bench/gpu_session.sh; README "Building for a GPU machine"):
#
#   cargo build --release --example profiler && mkdir -p .gpu && cp target/release/examples/profiler .gpu/
#   bash bench/run_dispatch_sweep.sh            # on the GPU machine; results in $OUT (./gpu-out)
#   bash bench/run_dispatch_sweep.sh --estimate # print the plan and the time estimate, run nothing
#
# Then commit $OUT/dispatch_<device>.tsv as bench/dispatch/<device>.tsv (e.g. nvidia_h100.tsv) and
# the records as bench/results/<device>_<date>_issue12_dispatch.jsonl (gunzip first).
#
# Steps, in order of importance (each is one profiler run; what a step leaves of its share goes to
# the later ones):
#   1. bf16 and f16, layout tn (C row-major): --sweep issue12 (124 shapes)
#   2. bf16 and f16, layout tnn (C column-major, the transposed problems dispatch runs small M as):
#      --sweep issue12_small_m_transposed (62 shapes)
#   3. f32 with f32 accuracy: 3xTF32 (f32_3xtf32; 2.x tn, tt, nnn and the 3.x tn kernel) and SIMT
#      (f32, tt): --sweep issue12_quick (25 shapes). Not TF32 nor the fast f16/bf16 kernels: the
#      table keys by operand types, in which those are f32 too, and would win on speed alone.
#   4. f64 (the tt kernel) on a few shapes.
# Every kernel runs every shape at its first configuration (1 slice, raster auto, swizzle 0); then
# the --tuning-top fastest of each shape run the other split-K counts (2.x and stream-K kernels),
# rasters and swizzles (3.x kernels). The profiler's --max-seconds-total ends each step within its
# share: shapes not reached are missing from the table (the summary says so), never half-written.
#
# Budget: DISPATCH_SWEEP_BUDGET seconds in all (default 450, for an 8-minute device command).
# Outputs (at most 8 files, for the device tool): dispatch_<device>.tsv (all steps, one header),
# <device>_<date>_issue12_dispatch.jsonl.gz (every record of every step), sweep.log (progress and
# summaries), device.txt, kernels.tsv, summary.txt.
set -uo pipefail

estimate_only=0
for arg in "$@"; do
  case "$arg" in
    --estimate) estimate_only=1 ;;
    *) echo "usage: bash bench/run_dispatch_sweep.sh [--estimate]" >&2; exit 2 ;;
  esac
done

out=${OUT:-gpu-out}
bin=${GPU_BIN:-.gpu}
budget=${DISPATCH_SWEEP_BUDGET:-450}
# Seconds a step may run past its share: the shape in flight when the share is spent finishes.
grace=40

# Measurement settings. Each measurement verifies once against the f64 host reference (256
# samples read back one by one, plus a NaN count of D when D is at most 64 MiB), then times
# warm-up + 1 calibration + up to --iters launches behind a >= 1 ms spin: 4 to 10 ms per
# measurement besides the kernel's own launches (measured on an H100, see the estimate below). The
# median of 20 back-to-back launches ranks configurations that differ by a percent; the per-kernel
# cap holds the big shapes (8192^3 bf16 ~ 1.4 ms) to about 14 timed launches.
timing=(--iters 20 --warmup 3 --max-seconds-per-kernel 0.02)
# 3.x tuning space: every raster and swizzle band; split-K counts for stream-K and 2.x kernels.
tuning=(--raster auto,m,n --swizzle 0,1,2,4,8 --split-k 1,2,4,8 --tuning-top 2)

# name share-of-budget (per mille) profiler arguments
steps=(
  "tn|530|--dtype bf16,f16 --layout tn --sweep issue12"
  "tnn|250|--dtype bf16,f16 --layout tnn --sweep issue12_small_m_transposed"
  "f32|150|--dtype f32_3xtf32,f32 --layout tn,tt,nnn --sweep issue12_quick"
  "f64|70|--dtype f64 --layout tt --shapes 1024x1024x1024,4096x4096x4096,8192x8192x8192,16x4096x4096,128x8192x8192,2048x4096x4096,512x512x32768,1000x1000x1000,64x64x64x256"
)

# The time estimate is measured: on an H100 80GB HBM3 (2026-11-23, driver 580.159.04) with these
# settings the sweep took 304 s (tn 15037 measurements in 190 s, tnn 13800 in 82 s, f32 727 in
# 28 s, f64 33 in 3 s; every row verified; 453 table rows). Most of it is the fixed cost of a
# measurement (4 ms for tnn's tiny kernels to 10 ms for tn, where D is read back for the NaN
# count), not the launches; an H200 runs the same launches a little faster.
estimate() {
  cat <<'EOF'
estimate for an H100 (measured: 304 s; an H200 about the same. Phase 1 = every kernel at its first
configuration, phase 2 = the other configurations of the 2 fastest per shape and operand types):
  step  shapes  kernels (bf16+f16)  measurements (phase 1 + 2)  time    share of the 450 s budget
  tn    124     9 + 13              2716 + ~12300               ~190 s  238 s
  tnn   62      2 + 2               248 + 13552                 ~82 s   112 s + what tn leaves
  f32   25      5 (3xTF32, SIMT)    ~125 + ~600                 ~28 s   68 s + what is left
  f64   9       1                   9 + 24                      ~3 s    32 s + what is left
  total                                                         ~305 s  450 s (a step may run 40 s
                                                                        over its share to finish a shape)
A step that runs out of its share skips its last shapes (the summary says how many); the table is
still written for the shapes measured.
EOF
}

if ((estimate_only)); then
  estimate
  exit 0
fi
if [[ ! -x "$bin/profiler" ]]; then
  echo "no profiler at $bin/profiler: build it where Rust is (cargo build --release --example profiler) and copy it into .gpu/" >&2
  exit 2
fi

mkdir -p "$out"
work=$(mktemp -d /tmp/dispatch_sweep.XXXXXX)
log="$out/sweep.log"
: > "$log"
start=$SECONDS
summary=()

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
  date -u +"%Y-%m-%dT%H:%M:%SZ"
} > "$out/device.txt" 2>&1
cat "$out/device.txt" | tee -a "$log"
"$bin/profiler" --list > "$out/kernels.tsv" 2>&1 || true
device_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
# "NVIDIA H100 80GB HBM3" -> nvidia_h100, "NVIDIA H200" -> nvidia_h200 (bench/dispatch/ names).
model=$(echo "$device_name" | tr '[:upper:]' '[:lower:]' | sed -E 's/^nvidia //; s/ .*//; s/[^a-z0-9]+/_/g')
slug="nvidia_${model:-gpu}"
records="${slug#nvidia_}_$(date -u +%F)_issue12_dispatch.jsonl"

estimate | tee -a "$log"
echo "settings: ${timing[*]} ${tuning[*]}" | tee -a "$log"

# The share of each step still to come (per mille), to leave them their part of the budget.
later_share() {
  local from=$1 sum=0 i
  for ((i = from; i < ${#steps[@]}; i++)); do
    sum=$((sum + $(cut -d'|' -f2 <<< "${steps[$i]}")))
  done
  echo "$sum"
}

for ((i = 0; i < ${#steps[@]}; i++)); do
  IFS='|' read -r name share args <<< "${steps[$i]}"
  elapsed=$((SECONDS - start))
  left=$((budget - elapsed))
  # Everything not reserved for the later steps: this step's share plus what earlier ones left.
  limit=$((left - budget * $(later_share $((i + 1))) / 1000))
  if ((limit < 15)); then
    summary+=("$(printf '%-5s %-8s %5s  %s' "$name" "SKIPPED" "-" "budget spent")")
    continue
  fi
  echo | tee -a "$log"
  echo "== step $name (up to ${limit}s + ${grace}s grace): profiler $args" | tee -a "$log"
  t0=$SECONDS
  # shellcheck disable=SC2086 # $args is a list of words
  timeout --kill-after=10 $((limit + grace)) "$bin/profiler" $args "${timing[@]}" "${tuning[@]}" \
    --json --max-seconds-total "$limit" --dispatch-out "$work/$name.tsv" \
    > "$work/$name.jsonl" 2> "$work/$name.log"
  rc=$?
  cat "$work/$name.log" >> "$log"
  grep -E '^profiler' "$work/$name.log"
  status="rc=$rc"
  ((rc == 124 || rc == 137)) && status="TIMEOUT"
  rows=$(grep -vc '^#' "$work/$name.tsv" 2>/dev/null)
  not_run=$(grep -oE '[0-9]+ shape\(s\) not run' "$work/$name.log" | tail -1)
  [[ -f "$work/$name.tsv" ]] || not_run="no table written"
  summary+=("$(printf '%-5s %-8s %4ss  %5s table rows, %6s records  %s' "$name" "$status" "$((SECONDS - t0))" \
    "${rows:-0}" "$(wc -l < "$work/$name.jsonl")" "${not_run:-all shapes run}")")
done

# One table: the first step's header (device, date, columns), then every step's rows.
table="$out/dispatch_${slug}.tsv"
first=$(ls "$work"/*.tsv 2>/dev/null | head -1)
if [[ -n "$first" ]]; then
  grep '^#' "$first" > "$table"
  for f in "$work"/*.tsv; do grep -v '^#' "$f"; done |
    sort >> "$table"
fi
cat "$work"/*.jsonl 2>/dev/null | gzip -9 > "$out/$records.gz"

{
  echo
  echo "================ dispatch sweep summary ($((SECONDS - start))s of ${budget}s) ================"
  head -2 "$out/device.txt"
  printf '%s\n' "${summary[@]}"
  if [[ -f "$table" ]]; then
    echo "table: $table ($(grep -vc '^#' "$table") rows); records: $out/$records.gz ($(zcat "$out/$records.gz" | wc -l))"
    echo "rows by layout and winner's configuration (split_k raster swizzle):"
    grep -v '^#' "$table" | awk -F'\t' '{print "  " $1 " " $4 "  s" $10 " " $11 "/" $12}' | sort | uniq -c | sort -rn | head -20
    echo "not verified / errors:"
    zcat "$out/$records.gz" | grep -E '"verified": false' |
      sed -E 's/.*"rust_name": "([^"]*)".*"m": ([0-9]+), "n": ([0-9]+), "k": ([0-9]+), "batch": ([0-9]+), "split_k": ([0-9]+).*"raster": "([a-z]+)", "swizzle": ([0-9]+).*("(error|unsupported)": "[^"]{0,100}|"rel_error": [^,]*).*/  \1 \2x\3x\4x\5 s\6 \7\/\8 \9/' |
      head -10
  else
    echo "no table: no step wrote one"
  fi
  echo "commit as bench/dispatch/${slug}.tsv and bench/results/$records"
} | tee -a "$log" > "$out/summary.txt"
cat "$out/summary.txt"
rm -rf "$work"
