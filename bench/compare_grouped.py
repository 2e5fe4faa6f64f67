#!/usr/bin/env python3
"""Grouped GEMM (issue 11): our grouped kernels against torch._grouped_mm, a torch.matmul loop and
torch.bmm, side by side on the same GPU in the same session.

Reads the JSON Lines of `grouped_bench --json PATH` and, for each workload in them (its experts'
rows exactly as our records list them in "rows", N, K, dtype), times torch on the same layouts
(inputs uniform in [-1, 1]):

  A  [total_m, K] row-major (contiguous)
  B  [E, K, N], column-major per expert: a contiguous [E, N, K] tensor viewed .transpose(-2, -1)
     (the memory of E row-major N x K weights, as nn.Linear stores them; ours: B column-major)
  offs = cumsum(rows) as int32 on the GPU (the cumulative end row of each expert)

  "torch._grouped_mm"   torch._grouped_mm(A, B, offs=offs) -> [total_m, N] (allocates its output)
  "torch.matmul loop"   for each expert with rows: torch.matmul(A[s:e], B[g], out=D[s:e])
  "torch.bmm"           only when every expert has the same rows m: torch.bmm(A.view(E, m, K), B,
                        out=D.view(E, m, N))

torch._grouped_mm's requirements on `offs` (2-D A x 3-D B, torch 2.8 to 2.11): int32, 1-D, one
entry per expert (offs.size(0) == B.size(0)), cumulative (non-decreasing) ends; rows beyond the
last offset are not computed; empty experts (equal consecutive offsets) are allowed. There is NO
alignment requirement on the offsets with a row-major A: the 16-byte checks of its setup kernel
apply to the ragged dimension only for a column-major A (3-D x 2-D ragged N) or the 2-D x 2-D
(ragged K) forms. A and B need 16-byte aligned data pointers and strides that are multiples of 16
bytes (K and N multiples of 8 for bf16); fewer than 1024 groups. Its fast path (a CUTLASS 3.x
pointer-array kernel: 64x128x128 ping-pong when total_m / E <= 128 or N <= 128, else 128x256x64
cooperative, cluster 2x1x1; no host synchronisation) is taken for bf16 on sm_90 / sm_100; other
types fall back to a per-expert loop that copies offs to the host (noted in "ref_note"). So our
zipf rows need no rounding for either side.

Output: one record per (our record, reference): ours plus "ref", "ref_us", "ref_tflops" and
"ratio" = ours_tflops / ref_tflops (> 1: ours faster); a reference that could not run has
"ref_us": null and "ref_error"; torch.bmm only for equal-size workloads. With --rerun-ours
GROUPED_BENCH, every (kernel, form) of ours on a workload is re-timed by running that executable
on the same rows (--rows ... --n N --k K) right before torch (GPU clocks drift over a session):
the record then carries the re-run's time ("measurement": "side_by_side", the sweep's time in
"ours_us_sweep"). Our host-overhead records get "ref": "torch._grouped_mm" and "ref_us", torch's
host time per call measured the same way (batches of the same size, synchronised between them).

    python3 bench/compare_grouped.py --ours grouped.jsonl --out grouped_results.jsonl \\
        [--rerun-ours .gpu/grouped_bench] [--iters N] [--warmup N] [--no-host-overhead]

Timing is compare.py's (and ours): warm-up calls, then calls enqueued back to back behind a spin
kernel (torch.cuda._sleep) with a CUDA event between consecutive ones; the median. Warm-up and
iteration counts are taken from our records unless given. TFLOP/s = 2 * sum(rows) * N * K / time.
Prints a table per workload and the geometric means of ours / torch._grouped_mm and ours / loop
over the MoE workloads (best verified kernel and form of ours per workload, and per form).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in bench/ from importing compare.py
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import event_times_us, geomean, read_jsonl  # noqa: E402  (compare.py's timing and reader)

GROUPED_MM = "torch._grouped_mm"
LOOP = "torch.matmul loop"
BMM = "torch.bmm"
REFS = (GROUPED_MM, LOOP, BMM)
# The fields of a re-run's record that replace the sweep's.
RERUN_FIELDS = ("iters", "ours_us", "ours_us_mean", "ours_tflops", "ours_gbps", "verified", "rel_error",
                "max_abs_error", "tolerance", "samples", "unwritten", "error")
RATIO_LABEL = {GROUPED_MM: "/ grouped_mm", LOOP: "/ loop", BMM: "/ bmm"}
MOE_WORKLOADS = ("mixtral_up", "mixtral_down", "deepseek_up", "deepseek_down")
TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16"}
FALLBACK_NOTE = ("torch._grouped_mm has no fused kernel for this type or device (bf16 on sm_90/sm_100 only): "
                 "it ran its per-expert fallback, which copies the offsets to the host")


def workload_key(r):
    """The workload a record of ours measured: (workload, skew, rows, n, k, dtype)."""
    return (r["workload"], r["skew"], tuple(r["rows"]), r["n"], r["k"], r.get("dtype", "bf16"))


def workload_text(key):
    name, skew, rows, n, k, dtype = key
    return f"{name} {skew}"


def flops(key):
    _, _, rows, n, k, _ = key
    return 2.0 * sum(rows) * n * k


def tflops(key, us):
    return flops(key) / (us * 1e-6) / 1e12 if us else None


def is_equal(key):
    rows = key[2]
    return len(set(rows)) == 1 and rows[0] > 0


def is_moe(key):
    return key[0] in MOE_WORKLOADS


class Inputs:
    """A, B (column-major per expert), offs and a preallocated D for one workload."""

    def __init__(self, torch, key):
        _, _, rows, n, k, dtype = key
        t = getattr(torch, TORCH_DTYPES[dtype])
        experts, total = len(rows), sum(rows)
        self.rows = rows
        self.a = torch.empty(total, k, device="cuda", dtype=t).uniform_(-1, 1)
        # In place: a 15 GB B (deepseek_up) must not need temporaries.
        self.b = torch.empty(experts, n, k, device="cuda", dtype=t).uniform_(-1, 1).transpose(-2, -1)
        ends, at = [], 0
        for m in rows:
            at += m
            ends.append(at)
        self.offs = torch.tensor(ends, device="cuda", dtype=torch.int32)
        self.d = torch.empty(total, n, device="cuda", dtype=t)
        self.segments = []  # (expert, start, end) of the experts with rows
        start = 0
        for g, m in enumerate(rows):
            if m:
                self.segments.append((g, start, start + m))
            start += m


def reference_fn(torch, inputs, ref):
    """The callable torch runs for a reference (AttributeError: not in this torch)."""
    a, b, d = inputs.a, inputs.b, inputs.d
    if ref == GROUPED_MM:
        grouped_mm = torch._grouped_mm  # AttributeError in a torch without it
        offs = inputs.offs
        return lambda: grouped_mm(a, b, offs=offs)
    if ref == LOOP:
        segments = inputs.segments

        def loop():
            for g, s, e in segments:
                torch.matmul(a[s:e], b[g], out=d[s:e])
        return loop
    if ref == BMM:
        experts, m = len(inputs.rows), inputs.rows[0]
        a3, d3 = a.view(experts, m, a.shape[1]), d.view(experts, m, d.shape[1])
        return lambda: torch.bmm(a3, b, out=d3)
    raise ValueError(ref)


def oom_types(torch):
    return (RuntimeError, AttributeError, TypeError, torch.cuda.OutOfMemoryError)


def first_line(e):
    return (str(e).splitlines() or [type(e).__name__])[0][:300]


def time_reference(torch, inputs, ref, warmup, iters):
    """(us, None) or (None, why it did not run)."""
    try:
        fn = reference_fn(torch, inputs, ref)
        fn()
        torch.cuda.synchronize()
        return event_times_us(torch, fn, warmup, iters), None
    except oom_types(torch) as e:
        try:
            torch.cuda.synchronize()
        except RuntimeError:
            pass
        torch.cuda.empty_cache()
        return None, first_line(e)


def agreement(torch, inputs):
    """||grouped_mm - loop|| / ||loop|| over all of D: torch's two paths should agree (a sanity
    check of the inputs and offsets as torch reads them); None if either failed."""
    try:
        out = torch._grouped_mm(inputs.a, inputs.b, offs=inputs.offs)
        reference_fn(torch, inputs, LOOP)()
        diff = (out.float() - inputs.d.float()).norm().item()
        norm = inputs.d.float().norm().item()
        del out
        return float(f"{diff / norm:.3g}") if norm else None
    except oom_types(torch):
        torch.cuda.empty_cache()
        return None


def host_per_call_us(torch, fn, calls, batches):
    """torch's host time per call, as grouped_bench measures ours: batches of `calls` calls, each
    timed alone, synchronised between batches; the median over all calls."""
    for _ in range(calls):
        fn()
    times = []
    for _ in range(batches):
        torch.cuda.synchronize()
        for _ in range(calls):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e6)
    torch.cuda.synchronize()
    times.sort()
    return times[len(times) // 2] if times else None


def rerun_ours(binary, key, records, warmup, iters):
    """Re-runs every (kernel, form) of ours in `records` on the workload's rows; their verified
    records by (rust_name, form)."""
    _, _, rows, n, k, dtype = key
    kernels, forms = [], []
    for r in records:
        if r.get("rust_name") not in kernels:
            kernels.append(r.get("rust_name", r.get("kernel")))
        if r.get("form") not in forms:
            forms.append(r.get("form"))
    handle, path = tempfile.mkstemp(suffix=".jsonl", prefix="grouped_rerun_")
    os.close(handle)
    command = [binary, "--rows", ",".join(str(m) for m in rows), "--n", str(n), "--k", str(k),
               "--dtype", dtype, "--kernels", ",".join(kernels), "--forms", ",".join(forms),
               "--iters", str(iters), "--warmup", str(warmup), "--samples", "64", "--host-batches", "0",
               "--json", path]
    found = {}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        for record in read_jsonl(path):
            if record.get("op") == "gemm_grouped" and record.get("verified") is True and "ours_us" in record:
                found[(record.get("rust_name"), record.get("form"))] = record
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"re-run of ours on {workload_text(key)} failed: {e}", file=sys.stderr)
        return {}
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    if len(found) < len([r for r in records if r.get("verified") is True]):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"re-run of ours on {workload_text(key)}: {len(found)} verified record(s) "
              f"(rc {done.returncode}: {tail})", file=sys.stderr)
    return found


def best(records, form=None):
    """The fastest verified record of ours (of `form`, if given)."""
    ok = [r for r in records if r.get("verified") is True and r.get("ours_us")
          and (form is None or r.get("form") == form)]
    return min(ok, key=lambda r: r["ours_us"], default=None)


def ratio_text(ours_us, ref_us):
    return f"{ref_us / ours_us:.3f}" if ours_us and ref_us else "-"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ours", required=True, help="grouped_bench --json output (JSON Lines)")
    p.add_argument("--out", required=True, help="JSON Lines to write")
    p.add_argument("--iters", type=int, help="timed calls per reference (default: as in our records)")
    p.add_argument("--warmup", type=int, help="warm-up calls per reference (default: as in our records)")
    p.add_argument("--rerun-ours", metavar="GROUPED_BENCH",
                   help="re-time our kernels on each workload with this grouped_bench executable right before torch")
    p.add_argument("--no-host-overhead", action="store_true",
                   help="do not time torch._grouped_mm's host cost per call")
    args = p.parse_args()

    try:
        records = read_jsonl(args.ours)
    except OSError as e:
        print(f"compare_grouped.py: cannot read our records: {e}", file=sys.stderr)
        return 2
    ours = [r for r in records if r.get("op") == "gemm_grouped" and "rows" in r]
    host = [r for r in records if r.get("op") == "host_overhead" and "rows" in r]
    if not ours:
        print(f"compare_grouped.py: no gemm_grouped records in {args.ours}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("compare_grouped.py: PyTorch is not installed; nothing to compare with", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("compare_grouped.py: torch sees no CUDA device; nothing was run", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    device = torch.cuda.get_device_name()
    capability = torch.cuda.get_device_capability()
    ours_devices = sorted({r.get("device", "?") for r in ours})
    if ours_devices != [device]:
        print(f"warning: our records are from {ours_devices}, torch runs on {device!r}", file=sys.stderr)
    print(f"device: {device} (sm_{capability[0]}{capability[1]}); torch {torch.__version__} "
          f"(cuda {torch.version.cuda}); ratio = ours TFLOP/s / torch TFLOP/s (> 1: ours faster)"
          + ("; ours re-run side by side" if args.rerun_ours else ""))

    keys = []
    for r in ours:
        if workload_key(r) not in keys:
            keys.append(workload_key(r))
    results = []  # (key, [our records, possibly re-run], {ref: (us, error)}, agreement)
    host_ref = {}  # key -> torch._grouped_mm host us per call
    for index, key in enumerate(keys):
        same = [r for r in ours if workload_key(r) == key]
        timed_records = [r for r in same if "ours_us" in r or "error" in r]
        iters = args.iters or max((int(r["iters"]) for r in same if "iters" in r), default=30)
        warmup = args.warmup if args.warmup is not None else max((int(r["warmup"]) for r in same if "warmup" in r),
                                                                 default=5)
        torch.cuda.empty_cache()
        merged = []
        rerun = rerun_ours(args.rerun_ours, key, timed_records, warmup, iters) if args.rerun_ours and timed_records else {}
        for r in same:
            again = rerun.get((r.get("rust_name"), r.get("form")))
            if again is not None:
                # Our record with the re-run's measurement (the workload and kernel are the same).
                update = {f: again[f] for f in RERUN_FIELDS if f in again}
                merged.append(dict(r, **update, measurement="side_by_side", ours_us_sweep=r.get("ours_us")))
            else:
                merged.append(dict(r))
        refs = [GROUPED_MM, LOOP] + ([BMM] if is_equal(key) else [])
        timed = {}
        check = None
        try:
            inputs = Inputs(torch, key)
        except oom_types(torch) as e:
            inputs, why = None, first_line(e)
            torch.cuda.empty_cache()
        for ref in refs:
            timed[ref] = time_reference(torch, inputs, ref, warmup, iters) if inputs else (None, why)
        if inputs is not None:
            check = agreement(torch, inputs)
            calls_batches = [(int(r.get("calls_per_batch", 5)), int(r.get("batches", 10)))
                             for r in host if workload_key(r) == key]
            if calls_batches and not args.no_host_overhead:
                calls, batches = max(calls_batches)
                try:
                    fn = reference_fn(torch, inputs, GROUPED_MM)
                    host_ref[key] = host_per_call_us(torch, fn, calls, batches)
                except oom_types(torch) as e:
                    print(f"{workload_text(key)}: torch host overhead failed: {first_line(e)}", file=sys.stderr)
        del inputs
        torch.cuda.empty_cache()
        results.append((key, merged, timed, check))
        print(f"[{index + 1}/{len(keys)}] {workload_text(key)} timed", file=sys.stderr, flush=True)

    with open(args.out, "w") as out:
        for key, merged, timed, check in results:
            note = None if (key[5] == "bf16" and capability[0] in (9, 10)) else FALLBACK_NOTE
            for rec in merged:
                if "ours_us" not in rec and "error" not in rec:
                    out.write(json.dumps(dict(rec, ref=None, ref_skipped="not run by ours")) + "\n")
                    continue
                for ref, (us, error) in timed.items():
                    row = dict(rec, ref=ref, ref_us=round(us, 2) if us else None)
                    ref_tf = tflops(key, us)
                    row["ref_tflops"] = round(ref_tf, 1) if ref_tf else None
                    ours_us = rec.get("ours_us")
                    # ours_tflops / ref_tflops, from the unrounded times.
                    row["ratio"] = round(us / ours_us, 3) if us and ours_us else None
                    if error:
                        row["ref_error"] = error
                    if ref == GROUPED_MM and note:
                        row["ref_note"] = note
                    if check is not None:
                        row["ref_grouped_mm_vs_loop_rel_diff"] = check
                    out.write(json.dumps(row) + "\n")
        for r in host:
            rec = dict(r)
            us = host_ref.get(workload_key(r))
            if us is not None:
                rec.update(ref=GROUPED_MM, ref_us=round(us, 2))
            out.write(json.dumps(rec) + "\n")

    # Per workload: every kernel and form of ours, against each reference.
    width = max([len(r.get("rust_name", "")) for _, merged, _, _ in results for r in merged] + [6])
    for key, merged, timed, check in results:
        _, _, rows, n, k, dtype = key
        print(f"\n{workload_text(key)}: {len(rows)} experts, {sum(rows)} rows (min {min(rows)}, max {max(rows)}), "
              f"N {n}, K {k}, {dtype}; {flops(key) / 1e9:.1f} GFLOP"
              + (f"; torch _grouped_mm vs loop: rel diff {check:.1e}" if check is not None else ""))
        for ref, (us, error) in timed.items():
            if us:
                print(f"  {ref:<20} {us:>10.2f} us {tflops(key, us):>7.1f} TFLOP/s")
            else:
                print(f"  {ref:<20} failed: {error}")
        heads = "  ".join(f"{RATIO_LABEL[ref]:>12}" for ref in timed)
        print(f"  {'kernel':<{width}} {'form':<5} {'us':>10} {'TF/s':>7} {'ok':>3}  {heads}")
        for rec in merged:
            if "unsupported" in rec:
                continue
            ours_us = rec.get("ours_us")
            ok = "yes" if rec.get("verified") is True else "NO"
            if not ours_us:
                print(f"  {rec.get('rust_name', '?'):<{width}} {rec.get('form', '?'):<5}  ERROR: "
                      f"{rec.get('error', '?')[:160]}")
                continue
            ratios = "  ".join(f"{ratio_text(ours_us, us):>12}" for us, _ in timed.values())
            print(f"  {rec.get('rust_name', '?'):<{width}} {rec.get('form', '?'):<5} {ours_us:>10.2f} "
                  f"{rec.get('ours_tflops', 0):>7.1f} {ok:>3}  {ratios}")

    # Host overhead: ours per path against torch._grouped_mm's host time per call.
    if host:
        print("\nhost time per call (median; GPU not waited for):")
        print(f"  {'workload':<22} {'kernel':<{width}} {'form':<5} {'path':<6} {'ours us':>8} {'torch us':>9}")
        for r in host:
            torch_us = host_ref.get(workload_key(r))
            ours_us = r.get("ours_us")
            print(f"  {workload_text(workload_key(r)):<22} {r.get('rust_name', '?'):<{width}} {r.get('form', '?'):<5} "
                  f"{r.get('path', '?'):<6} {ours_us if ours_us is not None else '-':>8} "
                  f"{f'{torch_us:.2f}' if torch_us else '-':>9}")

    # Summary: the best verified kernel (and form) of ours per workload against each reference.
    print("\nsummary: best verified kernel and form of ours per workload, ratio = ours TFLOP/s / torch TFLOP/s")
    print(f"  {'workload':<22} {'best of ours':<{width + 6}} {'us':>10}  "
          f"{'/ grouped_mm':>12} {'/ loop':>8} {'/ bmm':>8}  {'best list':>10} {'best moe':>10}")
    means = {(ref, form): [] for ref in REFS for form in (None, "list", "moe")}
    for key, merged, timed, _ in results:
        top = best(merged)
        if top is None:
            print(f"  {workload_text(key):<22} no verified kernel of ours")
            continue
        cells = []
        for ref in REFS:
            us = timed.get(ref, (None, None))[0]
            cells.append(ratio_text(top["ours_us"], us))
            for form in (None, "list", "moe"):
                b = best(merged, form)
                if b is not None and us and (is_moe(key) or ref == BMM):
                    means[(ref, form)].append(us / b["ours_us"])
        by_form = [best(merged, f) for f in ("list", "moe")]
        print(f"  {workload_text(key):<22} {top.get('rust_name', '?') + '/' + top.get('form', '?'):<{width + 6}} "
              f"{top['ours_us']:>10.2f}  {cells[0]:>12} {cells[1]:>8} {cells[2]:>8}  "
              + " ".join(f"{b['ours_us'] if b else '-':>10}" for b in by_form))
    print("geometric mean over the MoE workloads (mixtral_*/deepseek_*, uniform and zipf):")
    for ref in (GROUPED_MM, LOOP):
        parts = []
        for form, label in ((None, "best of both forms"), ("list", "list"), ("moe", "moe")):
            values = means[(ref, form)]
            parts.append(f"{label} {geomean(values):.3f} ({len(values)})" if values else f"{label} -")
        print(f"  ours / {ref}: " + "; ".join(parts))
    if means[(BMM, None)]:
        print(f"  ours / {BMM} (equal-size workloads): best of both forms "
              f"{geomean(means[(BMM, None)]):.3f} ({len(means[(BMM, None)])})")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
