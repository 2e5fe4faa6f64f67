#!/usr/bin/env python3
"""Ours vs cuBLAS (torch.matmul), side by side, on the same GPU in the same session.

GEMM mode: reads the profiler's JSON Lines (`profiler --json`), runs torch's reference once per
distinct (dtype, layout, m, n, k, batch, beta; for s8 also the output type) on inputs with the same
storage layouts, and writes every record of ours with the reference fields added (DESIGN.md §6):
"ref" (what torch ran), "ref_us", "ref_tflops", "ratio" (= ours_tflops / ref_tflops). Prints, per
shape, the best verified kernel of ours (over kernels and split-K slice counts) against torch, the
geometric mean of the ratio and the shapes below --low (0.8x).

References by our `dtype`:
  f16, bf16, f64                  torch.matmul in that type ("torch.matmul")
  tf32                            torch.matmul fp32, TF32 allowed ("torch.matmul fp32 (tf32 on)")
  f32_3xtf32, f32                 torch.matmul fp32, TF32 off, precision "highest" (cuBLAS SGEMM:
                                  "torch.matmul fp32 (tf32 off)")
  f32_fastf16, f32_fastbf16       torch.matmul fp32, TF32 allowed: torch has no f16/bf16-internal
                                  fp32 GEMM on CUDA, TF32 is its fast fp32 path
  s8                              torch._int_mm (s8 x s8 -> s32; A row-major, B column-major, M > 16,
                                  K and N multiples of 8): "torch._int_mm", reported in TOPS
For every fp32 reference torch's own error is measured too: "ref_rel_error" = ||D - D64|| / ||D64||
over all elements (the norm-wise error our "rel_error" measures on sampled elements) and
"ref_max_abs_error" = max |D - D64|, where D64 is torch.matmul in float64 of the same inputs on the
GPU.

    python3 bench/compare.py --ours profile.jsonl --out results.jsonl

Host-overhead mode: times a tiny torch.matmul's host cost per call the way `host_overhead` times
ours (batches of --calls calls, synchronised between batches, median per-call time) and writes a
record for it; with --ours (the JSON Lines of `host_overhead --json`) it also adds "ref" and
"ref_us" (torch's per-call host time on the same m, n, k and dtype) to each of our records.

    python3 bench/compare.py --host-overhead --ours host_overhead.jsonl --out host_results.jsonl

Timing matches the profiler: warm-up launches, then launches enqueued back to back behind a spin
kernel (torch.cuda._sleep) with a CUDA event between consecutive ones; the median per-launch time (warm-up and iteration counts are taken from
the records unless --warmup / --iters are given). Inputs are uniform in [-1, 1] (s8: integers in
[-4, 4], as the profiler's). Types without a reference (e4m3, e5m2: torch._scaled_mm is a scaled
fp8 op, not the same operation) are reported and left without reference fields.
"""
import argparse
import datetime
import json
import math
import statistics
import sys
import time

TORCH_DTYPES = {
    "f16": "float16", "bf16": "bfloat16", "tf32": "float32", "f32": "float32", "f64": "float64",
    "f32_3xtf32": "float32", "f32_fastf16": "float32", "f32_fastbf16": "float32",
}
# fp32 references: whether TF32 is allowed, and the name recorded in "ref".
FP32_REFS = {
    "tf32": (True, "torch.matmul fp32 (tf32 on)"),
    "f32_fastf16": (True, "torch.matmul fp32 (tf32 on)"),
    "f32_fastbf16": (True, "torch.matmul fp32 (tf32 on)"),
    "f32_3xtf32": (False, "torch.matmul fp32 (tf32 off)"),
    "f32": (False, "torch.matmul fp32 (tf32 off)"),
}
INT_MM = "torch._int_mm"
NO_TORCH_MATMUL = {
    "e4m3": "torch.matmul has no fp8 GEMM (torch._scaled_mm is a scaled fp8 op, not the same operation)",
    "e5m2": "torch.matmul has no fp8 GEMM (torch._scaled_mm is a scaled fp8 op, not the same operation)",
    "s32": "torch.matmul has no int32 GEMM on CUDA",
}


def read_jsonl(path):
    records = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or not line.startswith("{"):
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                print(f"{path}:{number}: not JSON, skipped ({e})", file=sys.stderr)
    return records


FLIP = {"t": "n", "n": "t"}


def gemm_key(r):
    """The problem a record serves, as torch sees it (row-major D). A record with a column-major C
    is a kernel run on D^T = B^T A^T: it serves the problem with M and N swapped and the A/B
    layouts flipped and exchanged (the same buffers; cutlass_aot::dispatch runs it that way).
    Integer (s8) records are also keyed by their output type (s8, s32, f32 are different
    operations); the split-K slice count is not part of the key: every count competes."""
    layout = r.get("layout", "tn")[:2]
    layout_c = r.get("layout_c", (r.get("layout", "tnt") + "t")[2])
    m, n = r["m"], r["n"]
    if r.get("layout", "").startswith("n32"):
        # CUTLASS's interleaved-32 int8 layouts (A n32, B t32, C n32): the same GEMM, in a
        # storage order of its own; torch runs it in its own (row x column).
        layout = "n32t32"
    elif layout_c == "n":
        layout = FLIP[layout[1]] + FLIP[layout[0]]
        m, n = n, m
    dtype = r.get("dtype")
    if dtype == "s8":
        dtype = f"s8>{r.get('dtype_c', 's32')}"
    return (dtype, layout, m, n, r["k"], r.get("batch", 1), float(r.get("beta", 0.0)))


def is_gemm(r):
    return r.get("op", "gemm") in ("gemm", "gemm_split_k")


def shape_text(key):
    dtype, layout, m, n, k, batch, beta = key
    s = f"{m}x{n}x{k}" + (f"x{batch}" if batch != 1 else "")
    return f"{dtype:<12} {layout} {s}" + (f" beta={beta:g}" if beta else "")


def kernel_text(r):
    """rust_name, with the split-K slice count when K was split (`name/s4`)."""
    name = r.get("rust_name", r["kernel"])
    return name + (f"/s{r['split_k']}" if r.get("split_k", 1) > 1 else "")


def operand(torch, rows, cols, stored_transposed, batch, dtype):
    """A rows x cols operand (batched when batch > 1), uniform in [-1, 1]. 't' (row-major) is a
    contiguous (rows, cols) tensor; 'n' (column-major) a transposed view of a contiguous (cols, rows)."""
    lead = (batch,) if batch > 1 else ()
    if stored_transposed:
        return (torch.rand(*lead, cols, rows, device="cuda", dtype=dtype) * 2 - 1).transpose(-1, -2)
    return torch.rand(*lead, rows, cols, device="cuda", dtype=dtype) * 2 - 1


def spin(torch, launches):
    """Holds the GPU while `launches` calls are enqueued, as the profiler's spin kernel does, so they
    run back to back on the GPU however long each call takes on the host (torch.cuda._sleep spins
    for a number of GPU clock cycles; 50 us per launch at 2 GHz, at least 1 ms, at most 100 ms)."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        sleep(int(min(max(launches * 50e-6, 1e-3), 0.1) * 2e9))


def event_times_us(torch, fn, warmup, iters):
    """Median per-call GPU time: launches back to back with an event between consecutive ones."""
    for _ in range(warmup):
        fn()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    spin(torch, iters)
    events[0].record()
    for e in events[1:]:
        fn()
        e.record()
    events[-1].synchronize()
    times = [events[i].elapsed_time(events[i + 1]) * 1e3 for i in range(iters)]
    return statistics.median_high(times) if times else float("nan")


def reference_plan(key):
    """What torch runs for `key`: (ref name, None), or (None, why there is none)."""
    dtype, layout, m, n, k, batch, beta = key
    if dtype.startswith("s8>"):
        if layout not in ("tn", "n32t32"):
            return None, f"{INT_MM} takes A row-major and B column-major (layout tn), not {layout}"
        if batch != 1 or beta:
            return None, f"{INT_MM} has no batch and no beta"
        if m <= 16 or k % 8 or n % 8:
            return None, f"{INT_MM} needs M > 16 and K, N multiples of 8"
        return INT_MM, None
    if dtype in FP32_REFS:
        return FP32_REFS[dtype][1], None
    if dtype in TORCH_DTYPES:
        return "torch.matmul", None
    return None, NO_TORCH_MATMUL.get(dtype, f"torch.matmul does not take {dtype}")


def set_fp32_mode(torch, dtype):
    """TF32 on for the dtypes whose reference allows it, off (precision "highest") otherwise."""
    allow = FP32_REFS.get(dtype, (False, ""))[0]
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")


def torch_gemm(torch, key, warmup, iters, measure_error):
    """torch's time for `key` (median us) and, when `measure_error`, its error against float64:
    (us, {"ref_rel_error": ..., "ref_max_abs_error": ...} or {})."""
    dtype, layout, m, n, k, batch, beta = key
    lead = (batch,) if batch > 1 else ()
    if dtype.startswith("s8>"):
        a = torch.randint(-4, 5, (m, k), device="cuda", dtype=torch.int8)
        b = torch.randint(-4, 5, (n, k), device="cuda", dtype=torch.int8).t()
        d = torch.empty(m, n, device="cuda", dtype=torch.int32)
        try:
            torch._int_mm(a, b, out=d)
            fn = lambda: torch._int_mm(a, b, out=d)  # noqa: E731
        except (RuntimeError, TypeError):
            fn = lambda: torch._int_mm(a, b)  # noqa: E731
        try:
            return event_times_us(torch, fn, warmup, iters), {}
        finally:
            del a, b, d
            torch.cuda.empty_cache()
    t = getattr(torch, TORCH_DTYPES[dtype])
    set_fp32_mode(torch, dtype)
    a = operand(torch, m, k, layout[0] == "n", batch, t)
    b = operand(torch, k, n, layout[1] == "n", batch, t)
    d = torch.empty(*lead, m, n, device="cuda", dtype=t)
    c = None
    if beta:
        c = torch.rand(*lead, m, n, device="cuda", dtype=t) * 2 - 1
        if batch > 1:
            fn = lambda: torch.baddbmm(c, a, b, beta=beta, out=d)  # noqa: E731
        else:
            fn = lambda: torch.addmm(c, a, b, beta=beta, out=d)  # noqa: E731
    else:
        fn = lambda: torch.matmul(a, b, out=d)  # noqa: E731
    try:
        us = event_times_us(torch, fn, warmup, iters)
        error = {}
        if measure_error:
            fn()
            d64 = torch.matmul(a.double(), b.double())
            if c is not None:
                d64 += beta * c.double()
            diff = d.double() - d64
            norm = torch.linalg.vector_norm(d64).item()
            error = {
                "ref_rel_error": float(f"{torch.linalg.vector_norm(diff).item() / norm:.4g}") if norm else None,
                "ref_max_abs_error": float(f"{diff.abs().max().item():.4g}"),
            }
            del d64, diff
        return us, error
    finally:
        del a, b, d, c
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        torch.cuda.empty_cache()


def geomean(values):
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def add_ref(rec, ref_name, us, error):
    """The reference fields of one record of ours (in place): ref, ref_us, ref_tflops, ratio and,
    for integer references, ref_tops / ours_tops (the same numbers, named as integer rates)."""
    flops = 2.0 * rec["m"] * rec["n"] * rec["k"] * rec.get("batch", 1)
    ref_tflops = round(flops / (us * 1e-6) / 1e12, 1)
    rec.update(ref=ref_name, ref_us=round(us, 2), ref_tflops=ref_tflops)
    rec["ratio"] = round(rec["ours_tflops"] / ref_tflops, 3) if ref_tflops else None
    if ref_name == INT_MM:
        rec.update(ref_tops=ref_tflops, ours_tops=rec["ours_tflops"])
    rec.update(error)


def best_verified(records):
    verified = [r for r in records if r.get("verified") is True and "ours_tflops" in r]
    return max(verified, key=lambda r: r["ours_tflops"], default=None)


def compare_gemm(torch, args):
    ours = [r for r in read_jsonl(args.ours) if is_gemm(r)]
    if not ours:
        print(f"no gemm records in {args.ours}", file=sys.stderr)
        return 2
    device = torch.cuda.get_device_name()
    ours_devices = sorted({r.get("device", "?") for r in ours})
    if ours_devices != [device]:
        print(f"warning: our records are from {ours_devices}, torch runs on {device!r}", file=sys.stderr)

    keys = []
    for r in ours:
        if "ours_tflops" in r and gemm_key(r) not in keys:
            keys.append(gemm_key(r))
    ref_us, ref_name, ref_error, skipped, reruns = {}, {}, {}, {}, {}
    for index, key in enumerate(keys, 1):
        name, why = reference_plan(key)
        if name is None:
            skipped[key] = why
            continue
        same = [r for r in ours if gemm_key(r) == key]
        iters = args.iters or max(int(r.get("iters", 20)) for r in same)
        warmup = args.warmup if args.warmup is not None else max(int(r.get("warmup", 5)) for r in same)
        if args.rerun_best:
            # Side by side: our best kernel (and split-K slice count) of the sweep again, then
            # torch, back to back, so both run in the same thermal and clock state (a long sweep
            # heats the GPU and lowers its clocks; timing torch minutes later would flatter it).
            best = best_verified(same)
            if best is not None:
                rerun = rerun_ours(args.rerun_best, best, warmup, iters)
                if rerun is not None:
                    reruns[key] = rerun
        try:
            ref_us[key], ref_error[key] = torch_gemm(torch, key, warmup, iters, key[0] in FP32_REFS)
            ref_name[key] = name
        except (RuntimeError, AttributeError, TypeError, torch.cuda.OutOfMemoryError) as e:
            # AttributeError: a torch without torch._int_mm.
            skipped[key] = f"torch failed: {(str(e).splitlines() or [type(e).__name__])[0]}"
            torch.cuda.empty_cache()
        if index % 10 == 0 or index == len(keys):
            print(f"[{index}/{len(keys)}] torch timed", file=sys.stderr, flush=True)

    with open(args.out, "w") as out:
        for r in ours:
            rec = dict(r)
            key = gemm_key(r)
            if key in ref_us and "ours_tflops" in r:
                add_ref(rec, ref_name[key], ref_us[key], ref_error[key])
            elif key in skipped:
                rec["ref_skipped"] = skipped[key]
            out.write(json.dumps(rec) + "\n")
        for key, r in reruns.items():
            rec = dict(r, measurement="side_by_side")
            if key in ref_us:
                add_ref(rec, ref_name[key], ref_us[key], ref_error[key])
            out.write(json.dumps(rec) + "\n")

    # Summary: per shape, the best verified kernel of ours (its side-by-side re-run when made).
    rows = []
    for key in keys:
        best = best_verified([r for r in ours if gemm_key(r) == key])
        if key in reruns:
            best = reruns[key]
        ref = ref_us.get(key)
        flops = 2.0 * key[2] * key[3] * key[4] * key[5]
        ref_tflops = flops / (ref * 1e-6) / 1e12 if ref else None
        ratio = best["ours_tflops"] / ref_tflops if best and ref_tflops else None
        rows.append((key, best, ref_tflops, ratio))
    width = max([len(kernel_text(r[1])) for r in rows if r[1]] + [11])
    print(f"device: {device}; ours = best verified kernel per shape (name/sN: K split into N slices); "
          "ratio = ours / torch TFLOP/s (TOPS for s8)")
    print(f"{'shape':<40} {'best kernel':<{width}} {'ours TF/s':>10} {'torch TF/s':>11} {'ratio':>6}  torch")
    for key, best, ref_tflops, ratio in rows:
        name = kernel_text(best) if best else "(none verified)"
        ours_tf = f"{best['ours_tflops']:.1f}" if best else "-"
        torch_tf = f"{ref_tflops:.1f}" if ref_tflops else "-"
        ratio_text = f"{ratio:.3f}" if ratio else ("skip" if key in skipped else "-")
        print(f"{shape_text(key):<40} {name:<{width}} {ours_tf:>10} {torch_tf:>11} {ratio_text:>6}  "
              f"{ref_name.get(key, '-')}")
    ratios = [r[3] for r in rows if r[3]]
    print(f"geometric mean of the ratio over {len(ratios)} shape(s): {geomean(ratios):.3f}")
    low = [(k, r) for k, _, _, r in rows if r and r < args.low]
    if low:
        print(f"{len(low)} shape(s) below {args.low}x:")
        for key, ratio in low:
            print(f"  {shape_text(key)}: {ratio:.3f}")
    else:
        print(f"no shape below {args.low}x")
    unverified = [k for k, best, _, _ in rows if best is None]
    if unverified:
        print(f"{len(unverified)} shape(s) without a verified kernel: " + ", ".join(shape_text(k) for k in unverified))
    for reason in sorted(set(skipped.values())):
        n = sum(1 for v in skipped.values() if v == reason)
        print(f"skipped {n} shape(s): {reason}")
    accuracy_table(ours, keys, ref_name, ref_error)
    split_k_table(ours, keys, ref_us)
    print(f"wrote {args.out}")
    return 0


def split_k_table(ours, keys, ref_us):
    """When some records split K: per shape and slice count, the best verified kernel of the sweep
    and its ratio to torch (the sweep's times, not the side-by-side re-runs)."""
    if not any(r.get("split_k", 1) > 1 for r in ours):
        return
    print("split-K: per shape and slice count, the best verified kernel of the sweep (ratio to torch)")
    for key in keys:
        same = [r for r in ours if gemm_key(r) == key]
        counts = sorted({r.get("split_k", 1) for r in same})
        if counts == [1]:
            continue
        flops = 2.0 * key[2] * key[3] * key[4] * key[5]
        ref = ref_us.get(key)
        ref_tflops = flops / (ref * 1e-6) / 1e12 if ref else None
        cells = []
        for count in counts:
            best = best_verified([r for r in same if r.get("split_k", 1) == count])
            if best is None:
                cells.append(f"s{count}: -")
                continue
            ratio = f" ({best['ours_tflops'] / ref_tflops:.2f})" if ref_tflops else ""
            cells.append(f"s{count}: {best.get('rust_name', best['kernel'])} {best['ours_tflops']:.1f}{ratio}")
        print(f"  {shape_text(key)}")
        for cell in cells:
            print(f"      {cell}")


def accuracy_table(ours, keys, ref_name, ref_error):
    """Shapes with an fp32 reference: our norm-wise relative error (the sweep's best kernel, and the
    range over its verified kernels) next to torch's, both against float64."""
    shown = [k for k in keys if ref_error.get(k)]
    if not shown:
        return
    print("accuracy, ||D - D64|| / ||D64||: ours on sampled elements against an f64 host reference; torch "
          "(fp32 as in the table above) on all elements against torch float64")
    for key in shown:
        same = [r for r in ours if gemm_key(r) == key and r.get("verified") is True and r.get("rel_error") is not None]
        best = best_verified(same)
        errors = [r["rel_error"] for r in same]
        ours_text = "-"
        if best is not None and best.get("rel_error") is not None:
            ours_text = f"{best['rel_error']:.1e} ({kernel_text(best)}"
            if len(errors) > 1:
                ours_text += f"; all {min(errors):.1e}..{max(errors):.1e}"
            ours_text += ")"
        e = ref_error[key]
        rel = e.get("ref_rel_error")
        rel_text = f"{rel:.1e}" if rel is not None else "-"
        print(f"  {shape_text(key)}: ours {ours_text}; torch {rel_text} (max |err| {e['ref_max_abs_error']:.1e})")


def rerun_ours(profiler, best, warmup, iters):
    """Runs `best`'s kernel on its shape (with its split-K slice count) again with the profiler;
    its JSON record, or None."""
    import subprocess

    shape = f"{best['m']}x{best['n']}x{best['k']}x{best.get('batch', 1)}"
    command = [profiler, "--kernels", best.get("rust_name", best["kernel"]), "--shapes", shape,
               "--iters", str(iters), "--warmup", str(warmup), "--samples", "64", "--json"]
    if float(best.get("beta", 0.0)) != 0.0:
        command += ["--beta", str(best["beta"])]
    if best.get("split_k", 1) > 1:
        command += ["--split-k", str(best["split_k"])]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"re-run of {kernel_text(best)} on {shape} failed: {e}", file=sys.stderr)
        return None
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("verified") is True and "ours_tflops" in record:
                return record
    print(f"re-run of {kernel_text(best)} on {shape} gave no verified record", file=sys.stderr)
    return None


def host_per_call_us(torch, fn, calls, batches):
    for _ in range(calls):  # warm-up batch (cuBLAS handle, workspace, heuristics cache)
        fn()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(batches):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        per_call.append((time.perf_counter() - start) * 1e6 / calls)
    torch.cuda.synchronize()
    return statistics.median_high(per_call)


def compare_host_overhead(torch, args):
    device = torch.cuda.get_device_name()
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    ours = [r for r in read_jsonl(args.ours) if r.get("op") == "host_overhead"] if args.ours else []
    shapes = [("f16", 16, 16, 16)]
    for r in ours:
        if "m" in r and r.get("path") != "bare":
            dtype = r.get("dtype", "f16")
            dtype = dtype if dtype in TORCH_DTYPES else "f16"
            if (dtype, r["m"], r["n"], r["k"]) not in shapes:
                shapes.append((dtype, r["m"], r["n"], r["k"]))
    ref = {}
    for dtype, m, n, k in shapes:
        t = getattr(torch, TORCH_DTYPES[dtype])
        set_fp32_mode(torch, dtype)
        a = operand(torch, m, k, False, 1, t)
        b = operand(torch, k, n, True, 1, t)
        d = torch.empty(m, n, device="cuda", dtype=t)
        ref[(dtype, m, n, k)] = host_per_call_us(torch, lambda: torch.matmul(a, b, out=d), args.calls, args.batches)
    records = []
    for (dtype, m, n, k), us in ref.items():
        records.append({
            "device": device, "date": date, "op": "host_overhead", "kernel": "torch.matmul", "path": "torch",
            "dtype": dtype, "layout": "tn", "m": m, "n": n, "k": k, "calls_per_batch": args.calls,
            "batches": args.batches, "ref": "torch.matmul", "ref_us": round(us, 3),
        })
    for r in ours:
        rec = dict(r)
        dtype = r.get("dtype", "f16")
        key = (dtype if dtype in TORCH_DTYPES else "f16", r.get("m"), r.get("n"), r.get("k"))
        if key in ref:
            rec.update(ref="torch.matmul", ref_us=round(ref[key], 3))
        records.append(rec)
    with open(args.out, "w") as out:
        for rec in records:
            out.write(json.dumps(rec) + "\n")
    print(f"device: {device}; host time per call, median of {args.batches} batches of {args.calls} calls")
    print(f"{'path':<13} {'kernel':<40} {'dtype':<5} {'m x n x k':>14} {'host us':>9} {'torch us':>9} {'ours-bare':>10}")
    for rec in records:
        shape = f"{rec['m']}x{rec['n']}x{rec['k']}" if "m" in rec else "-"
        ours_us = rec.get("ours_us")
        host = f"{ours_us:.2f}" if isinstance(ours_us, (int, float)) else (f"{rec['ref_us']:.2f}" if rec.get("path") == "torch" else "-")
        torch_us = f"{rec['ref_us']:.2f}" if "ref_us" in rec else "-"
        over = rec.get("overhead_us")
        over_text = f"{over:.2f}" if isinstance(over, (int, float)) else ("ERROR" if "error" in rec else "-")
        name = rec.get("rust_name", rec.get("kernel", "?"))[:40]
        print(f"{rec.get('path', '?'):<13} {name:<40} {rec.get('dtype', '-'):<5} {shape:>14} {host:>9} {torch_us:>9} {over_text:>10}")
    print(f"wrote {args.out}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ours", help="profiler --json output (or host_overhead --json output with --host-overhead)")
    p.add_argument("--out", required=True, help="JSON Lines to write")
    p.add_argument("--iters", type=int, help="timed launches per shape (default: as in our records)")
    p.add_argument("--warmup", type=int, help="warm-up launches per shape (default: as in our records)")
    p.add_argument("--low", type=float, default=0.8, help="list shapes whose ratio is below this (default 0.8)")
    p.add_argument("--rerun-best", metavar="PROFILER",
                   help="re-time our best kernel per shape with this profiler executable right before torch "
                        "(side by side in the same clock state); the summary uses these times")
    p.add_argument("--host-overhead", action="store_true", help="time torch.matmul's host cost per call instead")
    p.add_argument("--calls", type=int, default=100, help="host overhead: calls per timed batch (default 100)")
    p.add_argument("--batches", type=int, default=200, help="host overhead: timed batches (default 200)")
    args = p.parse_args()
    if not args.host_overhead and not args.ours:
        p.error("--ours is required (the profiler's --json output)")
    try:
        import torch
    except ImportError:
        print("compare.py: PyTorch is not installed; nothing to compare with", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("compare.py: torch sees no CUDA device; nothing was run", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    return compare_host_overhead(torch, args) if args.host_overhead else compare_gemm(torch, args)


if __name__ == "__main__":
    sys.exit(main())
