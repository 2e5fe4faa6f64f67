#!/usr/bin/env python3
"""Fused epilogues (issue 5): our bf16 GEMM + bias + GELU kernels against PyTorch, side by side on
the same GPU in the same session.

Reads the JSON Lines of `epilogue_bench --json PATH` and, for each of our records, times on the same
shape (x: M x K row-major, w: N x K row-major as nn.Linear stores it, bias: N; bf16, uniform in
[-1, 1]):

  epilogue bias_gelu         "torch.matmul+add+gelu":       y = x @ w.t(); y = y + bias;
                                                            y = gelu(y)  (three ops, exact erf GELU)
                             "torch._addmm_activation(gelu)": cuBLASLt's fused GELU_BIAS epilogue
                                                            (the tanh approximation: not quite the
                                                            same function; noted in "ref_note")
  epilogue bias_gelu_taylor  "torch.matmul+add+gelu_tanh":  as above with approximate="tanh"
                             "torch._addmm_activation(gelu)"
  linear_combination (plain) "torch.matmul":                x @ w.t()

It writes one record per (our record, reference): our record's fields plus "ref", "ref_us",
"ref_tflops" and "ratio" = ref_us / ours_us (> 1: ours is faster); a reference that could not run
has "ref_us": null and "ref_error". With --rerun-ours EPILOGUE_BENCH, each of our kernels is re-run
on its shape right before torch (GPU clocks drift with temperature by a few percent over a session):
the record then carries the re-run's time ("measurement": "side_by_side", the sweep's time in
"ours_us_sweep").

    python3 bench/compare_epilogue.py --ours epilogue.jsonl --out epilogue_results.jsonl \
        [--rerun-ours .gpu/epilogue_bench] [--iters N] [--warmup N]

Timing is compare.py's (and the profiler's): warm-up calls, then calls enqueued back to back behind
a spin kernel (torch.cuda._sleep) with a CUDA event between consecutive ones; the median. Warm-up
and iteration counts are taken from our records unless given. TFLOP/s = 2*M*N*K / time.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in bench/ from importing compare.py
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import event_times_us, read_jsonl  # noqa: E402  (compare.py's timing and reader)

ADDMM_GELU = "torch._addmm_activation(gelu)"
ADDMM_NOTE = ("cuBLASLt GELU_BIAS epilogue: the tanh approximation of GELU (ours: exact erf)")

# Our epilogue label -> the references timed for it: (ref name, kind, argument).
REFS = {
    "bias_gelu": [("torch.matmul+add+gelu", "unfused", "none"), (ADDMM_GELU, "addmm_gelu", None)],
    "bias_gelu_taylor": [("torch.matmul+add+gelu_tanh", "unfused", "tanh"), (ADDMM_GELU, "addmm_gelu", None)],
    "linear_combination": [("torch.matmul", "matmul", None)],
}


def shape_of(r):
    return (r["m"], r["n"], r["k"])


def shape_text(shape):
    return "x".join(str(v) for v in shape)


def tflops(shape, us):
    m, n, k = shape
    return 2.0 * m * n * k / (us * 1e-6) / 1e12 if us else None


class Inputs:
    """x (M x K), w (N x K), bias (N), bf16 in [-1, 1], for one shape; preallocated outputs."""

    def __init__(self, torch, shape):
        m, n, k = shape
        bf16 = torch.bfloat16
        self.x = torch.rand(m, k, device="cuda", dtype=bf16) * 2 - 1
        self.w = torch.rand(n, k, device="cuda", dtype=bf16) * 2 - 1
        self.bias = torch.rand(n, device="cuda", dtype=bf16) * 2 - 1
        self.y = torch.empty(m, n, device="cuda", dtype=bf16)


def reference_fn(torch, inputs, kind, arg):
    """The callable torch runs for a reference, or raises (AttributeError: not in this torch)."""
    x, w, bias = inputs.x, inputs.w, inputs.bias
    gelu = torch.nn.functional.gelu
    if kind == "matmul":
        return lambda: torch.matmul(x, w.t(), out=inputs.y)
    if kind == "unfused":
        def unfused():
            y = torch.matmul(x, w.t())
            y = y + bias
            return gelu(y, approximate=arg)
        return unfused
    if kind == "addmm_gelu":
        fused = torch._addmm_activation  # AttributeError in a torch without it
        return lambda: fused(bias, x, w.t(), use_gelu=True)
    raise ValueError(kind)


def time_reference(torch, inputs, kind, arg, warmup, iters):
    """(us, None) or (None, why it did not run)."""
    try:
        fn = reference_fn(torch, inputs, kind, arg)
        fn()
        torch.cuda.synchronize()
        return event_times_us(torch, fn, warmup, iters), None
    except (RuntimeError, AttributeError, TypeError, torch.cuda.OutOfMemoryError) as e:
        try:
            torch.cuda.synchronize()
        except RuntimeError:
            pass
        torch.cuda.empty_cache()
        return None, (str(e).splitlines() or [type(e).__name__])[0][:300]


def rerun_ours(binary, r, warmup, iters):
    """Runs our kernel of record `r` on its shape again; its verified JSON record, or None."""
    handle, path = tempfile.mkstemp(suffix=".jsonl", prefix="epilogue_rerun_")
    os.close(handle)
    command = [binary, "--kernels", r.get("rust_name", r["kernel"]), "--shapes", shape_text(shape_of(r)),
               "--iters", str(iters), "--warmup", str(warmup), "--samples", "64", "--json", path]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        records = read_jsonl(path)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"re-run of {r.get('rust_name')} on {shape_text(shape_of(r))} failed: {e}", file=sys.stderr)
        return None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    for record in records:
        if record.get("verified") is True and "ours_us" in record:
            return record
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    print(f"re-run of {r.get('rust_name')} on {shape_text(shape_of(r))} gave no verified record "
          f"(rc {done.returncode}: {tail})", file=sys.stderr)
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ours", required=True, help="epilogue_bench --json output (JSON Lines)")
    p.add_argument("--out", required=True, help="JSON Lines to write")
    p.add_argument("--iters", type=int, help="timed calls per reference (default: as in our records)")
    p.add_argument("--warmup", type=int, help="warm-up calls per reference (default: as in our records)")
    p.add_argument("--rerun-ours", metavar="EPILOGUE_BENCH",
                   help="re-time each of our kernels with this epilogue_bench executable right before torch")
    args = p.parse_args()

    try:
        ours = [r for r in read_jsonl(args.ours) if r.get("op", "gemm") == "gemm" and "m" in r]
    except OSError as e:
        print(f"compare_epilogue.py: cannot read our records: {e}", file=sys.stderr)
        return 2
    if not ours:
        print(f"compare_epilogue.py: no records in {args.ours}", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("compare_epilogue.py: PyTorch is not installed; nothing to compare with", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("compare_epilogue.py: torch sees no CUDA device; nothing was run", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    device = torch.cuda.get_device_name()
    ours_devices = sorted({r.get("device", "?") for r in ours})
    if ours_devices != [device]:
        print(f"warning: our records are from {ours_devices}, torch runs on {device!r}", file=sys.stderr)
    print(f"device: {device}; torch {torch.__version__} (cuda {torch.version.cuda}); "
          f"ratio = torch us / ours us (> 1: ours faster)"
          + ("; ours re-run side by side" if args.rerun_ours else ""))

    shapes = []
    for r in ours:
        if shape_of(r) not in shapes:
            shapes.append(shape_of(r))
    results = []  # (our record used, [(ref, us, error)])
    for shape in shapes:
        same = [r for r in ours if shape_of(r) == shape]
        iters = args.iters or max(int(r.get("iters", 50)) for r in same)
        warmup = args.warmup if args.warmup is not None else max(int(r.get("warmup", 10)) for r in same)
        try:
            inputs = Inputs(torch, shape)
        except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
            inputs, why = None, (str(e).splitlines() or ["allocation failed"])[0][:300]
        for r in same:
            refs = REFS.get(r.get("epilogue"), [])
            if not refs:
                print(f"{r.get('rust_name')}: no torch reference for epilogue {r.get('epilogue')!r}", file=sys.stderr)
            rec = dict(r)
            if args.rerun_ours and "ours_us" in r:
                rerun = rerun_ours(args.rerun_ours, r, warmup, iters)
                if rerun is not None:
                    rec = dict(rerun, measurement="side_by_side", ours_us_sweep=r["ours_us"])
            timed = []
            for name, kind, arg in refs:
                if inputs is None:
                    timed.append((name, None, why))
                else:
                    us, error = time_reference(torch, inputs, kind, arg, warmup, iters)
                    timed.append((name, us, error))
            results.append((rec, timed))
        del inputs
        torch.cuda.empty_cache()
        print(f"[{shapes.index(shape) + 1}/{len(shapes)}] {shape_text(shape)} timed", file=sys.stderr, flush=True)

    with open(args.out, "w") as out:
        for rec, timed in results:
            if not timed:
                out.write(json.dumps(dict(rec, ref=None, ref_skipped="no torch reference for this epilogue")) + "\n")
            for name, us, error in timed:
                row = dict(rec, ref=name, ref_us=round(us, 2) if us else None)
                row["ref_tflops"] = round(tflops(shape_of(rec), us), 1) if us else None
                ours_us = rec.get("ours_us")
                row["ratio"] = round(us / ours_us, 3) if us and ours_us else None
                if error:
                    row["ref_error"] = error
                if name == ADDMM_GELU:
                    row["ref_note"] = ADDMM_NOTE
                out.write(json.dumps(row) + "\n")

    # Table: per shape and kernel of ours, each reference.
    width = max([len(rec.get("rust_name", "")) for rec, _ in results] + [6])
    print(f"{'shape':<16} {'kernel':<{width}} {'epilogue':<18} {'ours us':>9} {'TF/s':>6} {'ok':>3}  "
          f"{'torch':<31} {'torch us':>9} {'TF/s':>6} {'ratio':>6}")
    best = {}  # (shape, epilogue) -> best ours us among verified
    for rec, timed in results:
        shape = shape_of(rec)
        ours_us = rec.get("ours_us")
        ok = "yes" if rec.get("verified") is True else "NO"
        head = (f"{shape_text(shape):<16} {rec.get('rust_name', '?'):<{width}} {rec.get('epilogue', '?'):<18} "
                + (f"{ours_us:>9.2f} {rec.get('ours_tflops', 0):>6.1f} {ok:>3}" if ours_us else
                   f"{'-':>9} {'-':>6} {ok:>3}"))
        if ours_us and rec.get("verified") is True:
            key = (shape, rec.get("epilogue"))
            best[key] = min(best.get(key, math.inf), ours_us)
        if not timed:
            print(f"{head}  (no torch reference)")
        for i, (name, us, error) in enumerate(timed):
            lead = head if i == 0 else " " * len(head)
            if us:
                ratio = f"{us / ours_us:.3f}" if ours_us else "-"
                print(f"{lead}  {name:<31} {us:>9.2f} {tflops(shape, us):>6.1f} {ratio:>6}")
            else:
                print(f"{lead}  {name:<31} failed: {error}")
        if "error" in rec:
            print(f"{' ' * 16} ERROR (ours): {rec['error'][:200]}")

    # Summary: the fused epilogue's cost over our plain GEMM, and ours fused vs torch's best.
    print("summary (best verified kernel of ours per epilogue):")
    for shape in shapes:
        plain = best.get((shape, "linear_combination"))
        for epilogue in ("bias_gelu", "bias_gelu_taylor"):
            fused = best.get((shape, epilogue))
            if fused is None:
                continue
            refs = [(name, us) for rec, timed in results if shape_of(rec) == shape and rec.get("epilogue") == epilogue
                    for name, us, _ in timed if us]
            torch_best = min(refs, key=lambda t: t[1], default=None)
            parts = [f"{shape_text(shape):<16} {epilogue:<17} ours {fused:9.2f} us"]
            if plain:
                parts.append(f"epilogue cost {100 * (fused / plain - 1):+.1f}% over our plain GEMM ({plain:.2f} us)")
            if torch_best:
                parts.append(f"torch best {torch_best[1]:.2f} us ({torch_best[0]}): ratio {torch_best[1] / fused:.3f}")
            print("  " + "; ".join(parts))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
