#!/usr/bin/env python3
"""Puts retimed rows (select_sweep --retime) in place of the rows of the same problem, kernel,
split and tuning in selection tables, and notes the retime in each changed table's header.

    python3 bench/dispatch/replace_rows.py RETIMED.tsv "what changed" bench/dispatch/nvidia_h100*.tsv
"""
import sys
import datetime


def key(fields):
    return tuple(fields[:-1])  # every column but the time


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    retimed_path, why, tables = sys.argv[1], sys.argv[2], sys.argv[3:]
    new = {}
    for line in open(retimed_path):
        if line.startswith('#') or not line.strip():
            continue
        fields = line.rstrip('\n').split('\t')
        new[key(fields)] = fields[-1]
    used = set()
    today = datetime.date.today().isoformat()
    for path in tables:
        lines = open(path).read().split('\n')
        changed = 0
        for i, line in enumerate(lines):
            if line.startswith('#') or not line.strip():
                continue
            fields = line.split('\t')
            k = key(fields)
            if k in new:
                fields[-1] = new[k]
                lines[i] = '\t'.join(fields)
                used.add(k)
                changed += 1
        if changed:
            last_header = max(i for i, l in enumerate(lines) if l.startswith('#') and i < 16)
            lines.insert(last_header + 1, f'# retimed {today}: {changed} rows ({why})')
            open(path, 'w').write('\n'.join(lines))
        print(f'{path}: {changed} rows replaced')
    print(f'{len(used)} of {len(new)} retimed rows placed')


if __name__ == '__main__':
    main()
