#!/usr/bin/env python3
"""Side-by-side figures for the concurrent hash tables and their peers (docs/benchmarks.md).

Runs `chtbench run` for every table in interleaved rounds (round 1: every structure, then
round 2, ...), so that all of them meet the same machine noise, and prints per experiment the
median throughput of the rounds, the ratios the targets are stated in, and bytes per item:

  mixed      2 threads, u = 10%, i = 2^23 items in a 2^24 key range (capacity = range)
  full       the same, each table built for exactly i items (--capacity i): memory at its fill
  readonly   clht-lb, u = 0%, 1 and 2 threads, and the memory probe's 1 -> 2 thread scaling
  oversub    CLHT-lf, CLHT-lb and two global-lock HTM-CLHTs at 2 and at 8 threads, u = 10%
  updates    six tables at u = 0%, 10% and 40%, 2 threads: how each reacts to updates

  scripts/compare_tables.py CHTBENCH [ROUNDS] [ITEMS] > bench/results/tables_<machine>_<date>.txt

ROUNDS defaults to 3, ITEMS to 2^23. TABLES (a space-separated list) narrows the structures of
mixed and full; EXPERIMENTS (a space-separated list) the experiments; KEYS=scrambled hands the
tables random-looking 64-bit keys instead of the integers of the range (chtbench run --keys):
the workload the tables' targets are stated for (docs/benchmarks.md).
"""
import csv
import io
import os
import platform
import statistics
import subprocess
import sys
from datetime import date

OVERSUBSCRIBED = ("clht-lf", "clht-lb", "htm-clht-mcs", "htm-clht-scm-ttas-opt")
UPDATE_SENSITIVE = ("clht-lb", "clht-lf", "cuckoo-map", "tbb-hash-map", "libcuckoo-map",
                    "urcu-hash-table")
DEFAULT_TABLES = (
    "clht-lb clht-lf htm-clht-fine htm-clht-mcs htm-clht-scm-ttas-opt cuckoo-map hopscotch "
    "tbb-hash-map libcuckoo-map urcu-hash-table libcds-michael-map libcds-split-list-map "
    "libcds-feldman-map libcds-cuckoo-map"
)


def run(chtbench, structure, args):
    out = subprocess.run(
        [chtbench, "run", "-s", structure, "-k", "1", "-d", "1000", "--format", "csv", *args],
        check=True, capture_output=True, text=True).stdout
    return next(csv.DictReader(io.StringIO(out)))


def cpu_model():
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    chtbench = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    items = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 23
    tables = os.environ.get("TABLES", DEFAULT_TABLES).split()
    chosen = os.environ.get("EXPERIMENTS", "mixed full readonly oversub updates").split()
    keys = os.environ.get("KEYS", "range")
    sizes = ["-i", str(items), "-r", str(2 * items)]
    if keys != "range":  # so that the script still runs chtbench builds older than --keys
        sizes += ["--keys", keys]
    experiments = []  # (experiment, structure, threads or update %, args)
    for s in tables:
        experiments.append(("mixed", s, 2, ["-n", "2", "-u", "10", *sizes]))
        experiments.append(("full", s, 2, ["-n", "2", "-u", "10", "--capacity", str(items), *sizes]))
    for n in (1, 2):
        experiments.append(("readonly", "clht-lb", n, ["-n", str(n), "-u", "0", *sizes]))
    for s in OVERSUBSCRIBED:
        for n in (2, 8):
            experiments.append(("oversub", s, n, ["-n", str(n), "-u", "10", *sizes]))
    for s in UPDATE_SENSITIVE:
        for u in (0, 10, 40):
            experiments.append(("updates", s, u, ["-n", "2", "-u", str(u), *sizes]))
    experiments = [e for e in experiments if e[0] in chosen]

    print(f"# scripts/compare_tables.py {chtbench} {rounds} {items}   (keys: {keys})")
    print(f"# machine: {os.cpu_count()} cores, {cpu_model()}, date: {date.today()}")
    results = {}
    for r in range(rounds):
        for key in experiments:
            row = run(chtbench, key[1], key[3])
            results.setdefault(key[:3], []).append(row)
            print(f"round {r + 1} {key[0]:8} {key[1]:24} {key[2]:3} "
                  f"{float(row['throughput_mops']):8.2f} Mops/s", file=sys.stderr)

    def median(experiment, structure, threads, column="throughput_mops"):
        rows = results[(experiment, structure, threads)]
        return statistics.median(float(row[column]) for row in rows)

    if "mixed" in chosen:
        report_mixed(tables, median, results)
    if "full" in chosen:
        print("\n## full: the same, each built for exactly i items (--capacity i)")
        print(f"{'structure':24} {'Mops/s':>8} {'B/item':>8}")
        for s in tables:
            print(f"{s:24} {median('full', s, 2):8.2f} "
                  f"{median('full', s, 2, 'bytes_per_item'):8.1f}")
    if "readonly" in chosen:
        one, two = median("readonly", "clht-lb", 1), median("readonly", "clht-lb", 2)
        probe1 = median("readonly", "clht-lb", 1, "limit_mops")
        probe2 = median("readonly", "clht-lb", 2, "limit_mops")
        print("\n## readonly: clht-lb, u = 0%")
        print(f"1 thread {one:.2f}, 2 threads {two:.2f} Mops/s: scaling {two / one:.2f}; memory "
              f"probe {probe1:.2f} -> {probe2:.2f}: scaling {probe2 / probe1:.2f}; "
              f"ratio {(two / one) / (probe2 / probe1):.2f}")
    if "oversub" in chosen:
        print(f"\n## oversub: u = 10%, 8 threads on {os.cpu_count()} cores vs 2 threads")
        for s in OVERSUBSCRIBED:
            print(f"{s:24} n=2 {median('oversub', s, 2):8.2f}  n=8 {median('oversub', s, 8):8.2f}"
                  f"  n=8 / n=2 {median('oversub', s, 8) / median('oversub', s, 2):.2f}")
    if "updates" in chosen:
        print("\n## updates: 2 threads, M ops/s at u = 0%, 10%, 40%, and u=40% / u=0%")
        for s in UPDATE_SENSITIVE:
            at = [median("updates", s, u) for u in (0, 10, 40)]
            print(f"{s:24} {at[0]:8.2f} {at[1]:8.2f} {at[2]:8.2f}   {at[2] / at[0]:.2f}")


def report_mixed(tables, median, results):
    print("\n## mixed: 2 threads, u = 10%, capacity = range (medians, M ops/s; B/item)")
    print(f"{'structure':24} {'Mops/s':>8} {'runs':>24} {'B/item':>8}")
    for s in tables:
        runs = " ".join(f"{float(r['throughput_mops']):.2f}" for r in results[("mixed", s, 2)])
        print(f"{s:24} {median('mixed', s, 2):8.2f} {runs:>24} "
              f"{median('mixed', s, 2, 'bytes_per_item'):8.1f}")
    print("\n## ratios (mixed medians)")
    pairs = [("clht-lb", "tbb-hash-map"), ("clht-lb", "libcuckoo-map"),
             ("cuckoo-map", "tbb-hash-map"), ("cuckoo-map", "libcuckoo-map"),
             ("clht-lf", "tbb-hash-map")]
    pairs += [(s, "urcu-hash-table") for s in tables
              if not s.startswith(("tbb", "libcuckoo", "urcu", "libcds"))]
    for a, b in pairs:
        if a in tables and b in tables:
            print(f"{a:24} / {b:24} {median('mixed', a, 2) / median('mixed', b, 2):6.2f}")


if __name__ == "__main__":
    main()
