#!/usr/bin/env python3
"""Merges dispatch tables of one device (bench/dispatch/*.tsv format, 10 or 13 columns): per
(a, b, c, layout, m, n, k, batch) the row with the lowest time wins. The header (device, date) is
the first table's, with the date of the newest table.

    python3 bench/merge_dispatch_tables.py bench/dispatch/nvidia_h100.tsv new.tsv [...] -o out.tsv
"""
import argparse
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tables", nargs="+")
    parser.add_argument("-o", "--out", required=True)
    args = parser.parse_args()
    header, devices, dates, best = [], set(), [], {}
    for index, path in enumerate(args.tables):
        for line in open(path):
            line = line.rstrip("\n")
            if line.startswith("#"):
                if line.startswith("# device:"):
                    devices.add(line.split(":", 1)[1].strip())
                if line.startswith("# date:"):
                    dates.append(line.split(":", 1)[1].strip())
                if index == 0:
                    header.append(line)
                continue
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) == 10:
                fields = fields[:9] + ["1", "auto", "0"] + fields[9:]
            key = tuple(fields[:8])
            if key not in best or float(fields[-1]) < float(best[key][-1]):
                best[key] = fields
    if len(devices) > 1:
        sys.exit(f"tables of different devices: {sorted(devices)}")
    newest = max(dates) if dates else ""
    header = [f"# date: {newest}" if h.startswith("# date:") else h for h in header]
    header = [h if not h.startswith("# columns:") else "# columns: a b c layout m n k batch kernel split_k raster swizzle us" for h in header]
    rows = sorted(best.values(), key=lambda f: (f[0], f[1], f[2], f[3], int(f[4]), int(f[5]), int(f[6]), int(f[7])))
    with open(args.out, "w") as out:
        out.write("\n".join(header) + "\n")
        for fields in rows:
            out.write("\t".join(fields) + "\n")
    print(f"{len(rows)} rows from {len(args.tables)} tables -> {args.out}")


if __name__ == "__main__":
    main()
