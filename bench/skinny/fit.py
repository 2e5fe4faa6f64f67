#!/usr/bin/env python3
"""The cost constants of the skinny GEMM kernels (src/dispatch/skinny.rs) against timings of
bench/skinny/harness.cu: the RMS log error of the model select::cost::streaming_seconds (and
tiny_seconds for the tiny forms) computes, with the committed constants, and (--refit) constants a random search finds from them.

    python3 bench/skinny/fit.py TIMINGS.jsonl[.gz] [--refit [trials=N] [seed=S]]

The committed constants fit bench/results/h100_2026-11-27_issue26_skinny_staging_model.jsonl.gz and,
for the tiny forms, ..._tiny_fit.jsonl.gz (the harness on bench/skinny/fit_problems*.txt and on the
problems of the selection tables' skinny rows; rows of sets "losers" and "heldout", held-out
problems, are left out); the narrow form's load-width scales (width2, width4) fit
..._narrow_load_width_fit.jsonl, its vectorised kernel on the 16-bit fit problems.
"""
import gzip
import json
import math
import random
import sys

SMS = 132
BYTES_PER_SECOND = 2.6e12
LAUNCH = 2.5e-6
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}
# As src/dispatch/skinny.rs states them (fs: femtoseconds, ns: nanoseconds).
CONSTANTS = {
    "dot": {"fs": 192, "fs_col": 114, "ns_block": 2590, "ns_chunk": 850,
            "fs_output": 1, "fs_output_across": 1, "ps_staged": 667},
    "axpy": {"fs": 487, "fs_col": 30, "ns_block": 3551, "ns_chunk": 1,
             "fs_output": 5991, "fs_output_across": 13219, "ps_staged": 1450},
    "narrow": {"fs": 249, "fs_col": 17, "ns_block": 2928, "ns_chunk": 1866, "fs_output": 3822, "conc": 73,
               "width2": 700, "width4": 660},
    "tiny_thread": {"ns_fixed": 4281, "ps_step": 50311, "f64_step_permille": 3006, "fs_sector_x": 591,
                    "fs_sector_y": 961, "fs_output": 9311, "mb_per_second": 1816000},
    "tiny_warp": {"ns_fixed": 4407, "ps_step": 49193, "f64_step_permille": 3616, "fs_sector_x": 4984,
                  "fs_sector_y": 1625, "fs_output": 207566, "mb_per_second": 1517000},
}


def tiny_sectors(along_depth, cols, e, contiguous, per_block):
    """The 32-byte sectors of X and Y one warp step touches, as select::cost::tiny_sectors."""
    if along_depth:
        x, y = [e if c else 32 for c in contiguous]
        return [x / min(cols, per_block), y]
    covered = [math.ceil(32 / cols) if cols < 32 else 1, min(cols, 32)]
    return [covered[i] if contiguous[i] else covered[i] * e / 32 for i in (0, 1)]


def tiny_model(c, form, e, rows, cols, k, batch, contiguous):
    """Microseconds, as tiny_seconds: a fixed time, the steps of each pass, the sectors the warps'
    steps touch, a time per output; never under the bytes at the form's bandwidth."""
    per_block, lanes = (128, 1) if form == "tiny_thread" else (4, 32)
    outputs = rows * cols * batch
    passes = math.ceil(math.ceil(outputs / per_block) / (16 * SMS))
    steps = math.ceil(k / lanes)
    step = c["ps_step"] * 1e-12 * (c["f64_step_permille"] / 1000 if e == 8 else 1)
    sx, sy = tiny_sectors(lanes > 1, cols, e, contiguous, per_block)
    warp_steps = steps * (outputs if lanes > 1 else math.ceil(outputs / 32))
    traffic = warp_steps * (sx * c["fs_sector_x"] + sy * c["fs_sector_y"]) * 1e-15
    t = c["ns_fixed"] * 1e-9 + passes * steps * step + traffic + outputs * c["fs_output"] * 1e-15
    moved = (rows * k + k * cols + rows * cols) * e * batch
    return max(t, moved / (c["mb_per_second"] * 1e6)) * 1e6


def load_width(rows, k, x_row_major):
    """Elements of X the narrow form loads at once, as support::skinny::x_load_width."""
    extent = k if x_row_major else rows
    return 4 if extent % 4 == 0 else 2 if extent % 2 == 0 else 1


def model(c, form, e, rows, cols, k, batch, slices, d_column_major, contiguous):
    """Microseconds, as streaming_seconds (slices as the launch runs them: none empty)."""
    if form.startswith("tiny"):
        return tiny_model(c, form, e, rows, cols, k, batch, contiguous)
    acc = 8 if e == 8 and form != "narrow" else 4
    if form == "narrow":
        rpb, slots, columns, depth = 128, 3 * SMS, max(16, 1 << (cols - 1).bit_length()), 64
    else:
        columns = min(16, 1 << (cols - 1).bit_length() if cols > 1 else 1)
        depth = min(1024, (32768 // acc) // columns)
        rpb, slots = ((16 if e == 8 else 32), 2 * SMS) if form == "dot" else (256, 4 * SMS)
    # Wider loads of X (the narrow form) stage it faster: per-element and per-chunk costs scale.
    width = load_width(rows, k, contiguous[0]) if form == "narrow" else 1
    staging = c.get(f"width{width}", 1000) / 1000
    per = (c["fs"] * staging + c["fs_col"] * columns) * 1e-15
    # The axpy form with fewer rows than a block holds: its threads split the depth, so a block
    # takes the time of the rows its row groups cover (a power of two of threads, 2 rows each).
    if form == "axpy" and rows < rpb:
        rpb = min(rpb, 2 * (1 << (math.ceil(rows / 2) - 1).bit_length()))
    sd = math.ceil(k / slices)
    sl = math.ceil(k / sd)
    groups = 1 if form == "narrow" else math.ceil(cols / 16)  # CUDA-core forms: 16 columns a block
    blocks = math.ceil(rows / rpb) * sl * batch * groups
    # A block's elements at the rate of `concurrent` blocks sharing the GPU: a few alone run no
    # faster than `conc` of them would.
    concurrent = max(min(blocks, slots), c["conc"]) if "conc" in c else slots
    # Staging the small operand: a block's time per entry of it (slice depth x columns).
    block = (c["ns_block"] * 1e-9 + c["ns_chunk"] * staging * 1e-9 * math.ceil(sd / depth) + rpb * sd * per * concurrent
             + c.get("ps_staged", 0) * 1e-12 * sd * columns)
    # Outputs cost more where D's contiguous dimension runs across the form's threads.
    along = {"dot": not d_column_major, "axpy": d_column_major}.get(form, True)
    fs_output = c["fs_output"] if along else c.get("fs_output_across", c["fs_output"])
    t = math.ceil(blocks / slots) * block + rows * cols * batch * sl * fs_output * 1e-15
    if sl > 1:
        t += LAUNCH + 2 * sl * rows * cols * batch * acc / BYTES_PER_SECOND
    moved = (rows * k + k * cols + rows * cols) * e * batch
    return (max(t, moved / BYTES_PER_SECOND) + LAUNCH) * 1e6


def rms(c, form, rows):
    errors = []
    for r in rows:
        big, small = (r["n"], r["m"]) if r["orient"] else (r["m"], r["n"])
        # The harness's D is row-major: column-major as the transposed orientation computes it.
        # X and Y contiguous along depth: A row-major, B column-major (swapped when transposed).
        a, b = r["layout"][0] == "t", r["layout"][1] == "n"
        us = model(c, form, ELEMENT_BYTES[r["dtype"]], big, small, r["k"], r["batch"], r["slices"],
                   r["orient"] == 1, (b, a) if r["orient"] else (a, b))
        errors.append(math.log(us / r["us"]) ** 2)
    return math.sqrt(sum(errors) / len(errors))


def main():
    opener = gzip.open if sys.argv[1].endswith(".gz") else open
    rows = [json.loads(line) for line in opener(sys.argv[1], "rt")]
    # Held-out problems are left out.
    rows = [r for r in rows if r.get("set") not in ("losers", "heldout")]
    good = [r for r in rows if r["status"] == "no error" and r["rel"] < (1e-2 if ELEMENT_BYTES[r["dtype"]] == 2 else 1e-5)]
    print(f"{len(good)} of {len(rows)} timings verified")
    options = dict(a.split("=", 1) for a in sys.argv[2:] if "=" in a)
    random.seed(int(options.get("seed", 3)))
    for form, c in CONSTANTS.items():
        subset = [r for r in good if r["form"] == form]
        if not subset:
            continue
        best = rms(c, form, subset)
        print(f"{form:<7} {len(subset):4} timings, RMS log error {best:.3f} with {c}")
        if "--refit" in sys.argv:
            for _ in range(int(options.get("trials", 6000))):
                trial = dict(c)
                key = random.choice(list(trial))
                trial[key] = max(1, trial[key] * math.exp(random.gauss(0, 0.2)))
                error = rms(trial, form, subset)
                if error < best:
                    best, c = error, trial
            print(f"        refit: {best:.3f} with { {k: round(v) for k, v in c.items()} }")


if __name__ == "__main__":
    main()
