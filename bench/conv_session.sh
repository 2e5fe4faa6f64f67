#!/usr/bin/env bash
# One GPU-machine session of the conv work (issue 13), from the repository root, executables in
# .gpu/ (see bench/README.md): the conv GPU suite, compute-sanitizer on a sample of each conv
# design, conv_bench (every kernel, then dispatch) beside cuDNN through torch, and the ratios.
#   CONV_SESSION_PARTS="tests memcheck bench" bash bench/conv_session.sh   (default: all three)
# Results go to $OUT (default ./gpu-out), named <device>_<date>_conv*.
set -u
out="${OUT:-gpu-out}"
mkdir -p "$out"
parts="${CONV_SESSION_PARTS:-tests memcheck bench}"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z_' | sed 's/_80gb_hbm3//;s/[^a-z0-9_]//g')
stamp="${device}_$(date -u +%Y-%m-%d)"
has() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }

if has tests; then
  ./.gpu/gpu_conv --test-threads 1 > "$out/${stamp}_conv_gpu_tests.txt" 2>&1
  tail -3 "$out/${stamp}_conv_gpu_tests.txt"
fi
if has memcheck; then
  sanitizer=/usr/local/cuda/bin/compute-sanitizer
  for filter in ${CONV_MEMCHECK_FILTERS:-conv_fprop_f16_256x128x64_2x1x1_coop_sm90::3x3_pad1 conv_dgrad_bf16_256x64x64_coop_sm90::beta_with_c conv_wgrad_f16_128x256x64_coop_sm90::resnet_like_14x14 conv_wgrad_bf16_256x128x64_2x1x1_coop_sm90::3x3_pad1_stride2 dispatch::wgrad_f16_1x1 dispatch::fprop_bf16_3x3_stride2 conv_wgrad_f16_128x64x64_streamk_sm90::stream_k_long_k_split_1 conv_fprop_bf16_128x128x64_streamk_sm90::stream_k_long_k_split_7 conv_fprop_bf16_fixed_channels_4_sm80::7x7_stride2_pad3 conv_fprop_f16_128x32x32_streamk_sm90::3x3_pad1_stride2 conv_wgrad_bf16_64x64x64_streamk_sm90::stream_k_long_k_split_7 conv_dgrad_f16_128x64x32_streamk_sm90::stream_k_long_k_split_1 conv_dgrad_f16_256x128x64_1x1x1_coop_sm90::3x3_pad1_stride2 conv_dgrad_bf16_128x64x32_streamk_sm90::1x1_stride2_beta_with_c conv_dgrad_f16_128x128x64_streamk_sm90::5x5_stride3_pad2 conv_fprop_f16_gelu_sm90::beta_with_c conv_dgrad_bf16_relu_sm90::3x3_pad1 conv_fprop_f16_relu_sm80::split_k_3 conv_fprop_f16_first_layer_4_sm80::stem_7x7_stride2_two_channel_tiles conv_fprop_bf16_first_layer_8_sm80::beta_with_c conv_fprop_f16_first_layer_2_sm80::3x3_dilation2 conv_fprop_s8_nc32hw32_optimized_sm80::3x3_pad1_stride2 conv_fprop_s8_nc32hw32_analytic_sm80::beta_with_c typed::fprop_s8_interleaved}; do
    $sanitizer --report-api-errors no --tool memcheck ./.gpu/gpu_conv --test-threads 1 "$filter" 2>&1 | tail -4
  done > "$out/${stamp}_conv_memcheck.txt"
  grep -E "ERROR SUMMARY|test result" "$out/${stamp}_conv_memcheck.txt"
fi
if has bench; then
  ./.gpu/conv_bench --list > "$out/problems.jsonl"
  # cuDNN in CONV_CUDNN_PASSES separate processes (default 3) appending to one file: its
  # autotuner picks per process, and compare_conv.py takes each layer's fastest pass.
  : > "$out/${stamp}_conv_cudnn.jsonl"
  for pass in $(seq 1 "${CONV_CUDNN_PASSES:-3}"); do
    python3 bench/conv_cudnn.py < "$out/problems.jsonl" >> "$out/${stamp}_conv_cudnn.jsonl" 2>> "$out/cudnn.log"
  done
  ./.gpu/conv_bench --out "$out/${stamp}_conv.jsonl" --dispatch-out "$out/conv_${device}.tsv" 2> "$out/conv_bench.log"
  python3 bench/compare_conv.py "$out/${stamp}_conv.jsonl" "$out/${stamp}_conv_cudnn.jsonl" \
    "$out/${stamp}_conv_compare.jsonl" > "$out/${stamp}_conv_compare.txt"
  cat "$out/${stamp}_conv_compare.txt" | grep geomean
  rm -f "$out/problems.jsonl" "$out/cudnn.log"  # (the device returns about 8 files)
fi
