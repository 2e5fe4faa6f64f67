#!/usr/bin/env python3
"""Ours vs cuBLAS (torch.matmul), side by side, on the same GPU in the same session.

GEMM mode: reads the profiler's JSON Lines (`profiler --json`), runs torch.matmul once per distinct
(dtype, layout, m, n, k, batch, beta) on inputs with the same storage layouts, and writes every
record of ours with the reference fields added (DESIGN.md §6): "ref": "torch.matmul", "ref_us",
"ref_tflops", "ratio" (= ours_tflops / ref_tflops). Prints, per shape, the best verified kernel of
ours against torch, the geometric mean of the ratio and the shapes below --low (0.8x).

    python3 bench/compare.py --ours profile.jsonl --out results.jsonl

Host-overhead mode: times a tiny torch.matmul's host cost per call the way `host_overhead` times
ours (batches of --calls calls, synchronised between batches, median per-call time) and writes a
record for it; with --ours (the JSON Lines of `host_overhead --json`) it also adds "ref" and
"ref_us" (torch's per-call host time on the same m, n, k and dtype) to each of our records.

    python3 bench/compare.py --host-overhead --ours host_overhead.jsonl --out host_results.jsonl

Timing matches the profiler: warm-up launches, then launches enqueued back to back behind a spin
kernel (torch.cuda._sleep) with a CUDA event between consecutive ones; the median per-launch time (warm-up and iteration counts are taken from
the records unless --warmup / --iters are given). Inputs are uniform in [-1, 1]. tf32 runs float32
with torch.backends.cuda.matmul.allow_tf32 = True (False for every other type). Types torch.matmul
cannot multiply (e4m3, e5m2, s8) are reported and left without reference fields: torch._scaled_mm
and torch._int_mm are different operations (scaling, output types), not a like-for-like reference.
"""
import argparse
import datetime
import json
import math
import statistics
import sys
import time

TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32", "f32": "float32", "f64": "float64"}
NO_TORCH_MATMUL = {
    "e4m3": "torch.matmul has no fp8 GEMM (torch._scaled_mm is a scaled fp8 op, not the same operation)",
    "e5m2": "torch.matmul has no fp8 GEMM (torch._scaled_mm is a scaled fp8 op, not the same operation)",
    "s8": "torch.matmul has no int8 GEMM on CUDA (torch._int_mm is a different op with s32 output only)",
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
    layouts flipped and exchanged (the same buffers; cutlass_aot::dispatch runs it that way)."""
    layout = r.get("layout", "tn")[:2]
    layout_c = r.get("layout_c", (r.get("layout", "tnt") + "t")[2])
    m, n = r["m"], r["n"]
    if layout_c == "n":
        layout = FLIP[layout[1]] + FLIP[layout[0]]
        m, n = n, m
    return (r.get("dtype"), layout, m, n, r["k"], r.get("batch", 1), float(r.get("beta", 0.0)))


def shape_text(key):
    dtype, layout, m, n, k, batch, beta = key
    s = f"{m}x{n}x{k}" + (f"x{batch}" if batch != 1 else "")
    return f"{dtype:<5} {layout} {s}" + (f" beta={beta:g}" if beta else "")


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


def torch_gemm_us(torch, key, warmup, iters):
    dtype, layout, m, n, k, batch, beta = key
    t = getattr(torch, TORCH_DTYPES[dtype])
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    a = operand(torch, m, k, layout[0] == "n", batch, t)
    b = operand(torch, k, n, layout[1] == "n", batch, t)
    lead = (batch,) if batch > 1 else ()
    d = torch.empty(*lead, m, n, device="cuda", dtype=t)
    if beta:
        c = torch.rand(*lead, m, n, device="cuda", dtype=t) * 2 - 1
        if batch > 1:
            fn = lambda: torch.baddbmm(c, a, b, beta=beta, out=d)  # noqa: E731
        else:
            fn = lambda: torch.addmm(c, a, b, beta=beta, out=d)  # noqa: E731
    else:
        fn = lambda: torch.matmul(a, b, out=d)  # noqa: E731
    try:
        return event_times_us(torch, fn, warmup, iters)
    finally:
        del a, b, d
        torch.cuda.empty_cache()


def geomean(values):
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def compare_gemm(torch, args):
    ours = [r for r in read_jsonl(args.ours) if r.get("op", "gemm") == "gemm"]
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
    ref_us, skipped, reruns = {}, {}, {}
    for index, key in enumerate(keys, 1):
        dtype = key[0]
        if dtype not in TORCH_DTYPES:
            skipped[key] = NO_TORCH_MATMUL.get(dtype, f"torch.matmul does not take {dtype}")
            continue
        same = [r for r in ours if gemm_key(r) == key]
        iters = args.iters or max(int(r.get("iters", 20)) for r in same)
        warmup = args.warmup if args.warmup is not None else max(int(r.get("warmup", 5)) for r in same)
        if args.rerun_best:
            # Side by side: our best kernel of the sweep again, then torch, back to back, so both
            # run in the same thermal and clock state (a long sweep heats the GPU and lowers its
            # clocks; timing torch minutes later would flatter it).
            verified = [r for r in same if r.get("verified") is True and "ours_tflops" in r]
            best = max(verified, key=lambda r: r["ours_tflops"], default=None)
            if best is not None:
                rerun = rerun_ours(args.rerun_best, best, warmup, iters)
                if rerun is not None:
                    reruns[key] = rerun
        try:
            ref_us[key] = torch_gemm_us(torch, key, warmup, iters)
        except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
            skipped[key] = f"torch failed: {str(e).splitlines()[0]}"
            torch.cuda.empty_cache()
        if index % 10 == 0 or index == len(keys):
            print(f"[{index}/{len(keys)}] torch.matmul timed", file=sys.stderr, flush=True)

    with open(args.out, "w") as out:
        for r in ours:
            rec = dict(r)
            key = gemm_key(r)
            if key in ref_us and "ours_tflops" in r:
                us = ref_us[key]
                flops = 2.0 * r["m"] * r["n"] * r["k"] * r.get("batch", 1)
                rec.update(ref="torch.matmul", ref_us=round(us, 2), ref_tflops=round(flops / (us * 1e-6) / 1e12, 1))
                rec["ratio"] = round(r["ours_tflops"] / rec["ref_tflops"], 3) if rec["ref_tflops"] else None
            elif key in skipped:
                rec["ref_skipped"] = skipped[key]
            out.write(json.dumps(rec) + "\n")
        for key, r in reruns.items():
            rec = dict(r, measurement="side_by_side")
            if key in ref_us:
                us = ref_us[key]
                flops = 2.0 * r["m"] * r["n"] * r["k"] * r.get("batch", 1)
                rec.update(ref="torch.matmul", ref_us=round(us, 2), ref_tflops=round(flops / (us * 1e-6) / 1e12, 1))
                rec["ratio"] = round(r["ours_tflops"] / rec["ref_tflops"], 3) if rec["ref_tflops"] else None
            out.write(json.dumps(rec) + "\n")

    # Summary: per shape, the best verified kernel of ours (its side-by-side re-run when made).
    rows = []
    for key in keys:
        verified = [r for r in ours if gemm_key(r) == key and r.get("verified") is True and "ours_tflops" in r]
        best = max(verified, key=lambda r: r["ours_tflops"], default=None)
        if key in reruns:
            best = reruns[key]
        ref = ref_us.get(key)
        flops = 2.0 * key[2] * key[3] * key[4] * key[5]
        ref_tflops = flops / (ref * 1e-6) / 1e12 if ref else None
        ratio = best["ours_tflops"] / ref_tflops if best and ref_tflops else None
        rows.append((key, best, ref_tflops, ratio))
    width = max([len(r[1].get("rust_name", r[1]["kernel"])) for r in rows if r[1]] + [11])
    print(f"device: {device}; ours = best verified kernel per shape; ratio = ours / torch.matmul TFLOP/s")
    print(f"{'shape':<32} {'best kernel':<{width}} {'ours TF/s':>10} {'torch TF/s':>11} {'ratio':>6}")
    for key, best, ref_tflops, ratio in rows:
        name = best.get("rust_name", best["kernel"]) if best else "(none verified)"
        ours_tf = f"{best['ours_tflops']:.1f}" if best else "-"
        torch_tf = f"{ref_tflops:.1f}" if ref_tflops else "-"
        ratio_text = f"{ratio:.3f}" if ratio else ("skip" if key in skipped else "-")
        print(f"{shape_text(key):<32} {name:<{width}} {ours_tf:>10} {torch_tf:>11} {ratio_text:>6}")
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
    print(f"wrote {args.out}")
    return 0


def rerun_ours(profiler, best, warmup, iters):
    """Runs `best`'s kernel on its shape again with the profiler; its JSON record, or None."""
    import subprocess

    shape = f"{best['m']}x{best['n']}x{best['k']}x{best.get('batch', 1)}"
    command = [profiler, "--kernels", best.get("rust_name", best["kernel"]), "--shapes", shape,
               "--iters", str(iters), "--warmup", str(warmup), "--samples", "64", "--json"]
    if float(best.get("beta", 0.0)) != 0.0:
        command += ["--beta", str(best["beta"])]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"re-run of {best.get('rust_name')} on {shape} failed: {e}", file=sys.stderr)
        return None
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("verified") is True and "ours_tflops" in record:
                return record
    print(f"re-run of {best.get('rust_name')} on {shape} gave no verified record", file=sys.stderr)
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
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
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
