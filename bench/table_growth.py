#!/usr/bin/python3
"""How a ccf hash table grows, measured with chtbench, for one or more chtbench builds side by
side (e.g. before/after a change): rounds interleave builds and runs, and each figure is the
median over the rounds, with every round's value printed too.

  build    i items inserted by n threads (--init-threads all) into a table built from empty
           (--capacity 1) and into one sized for i (--capacity i, as reserve(i) would):
           build rate i / fill_seconds (M items/s), their ratio, and bytes per item after
  resize   chtbench's resize experiment (thesis: 90% full, -u 40 --insert-pct 35, 2 threads):
           --capacity i/0.9 against a table sized for the key range (--capacity r = 2i):
           throughput ratio, resizes and their time; with --latency, p99.9 of inserts and
           lookups in both runs
  churn    i items inserted by 2 threads into a table built from empty and into one sized for
           i, then 2 threads run 90% find / 5% insert / 5% erase (-u 10) and 60/20/20 (-u 40)
           with --latency for --churn-ms: M ops/s of each mix, their ratio, the resizes the churn
           triggered and the longest sampled operation (the Hopscotch pathology: a table left at
           its resize threshold by the build doubles in the churn)
  memory   bytes per item after a build from empty (2 threads) against a table sized for i, for
           i at --memory-steps points per octave between 2^--memory-octaves (a growth policy's
           cost depends on where i falls between two resizes, so one i says little): the ratio
           at each i, its largest and its geometric mean

Usage: bench/table_growth.py --bin before=PATH --bin after=PATH [--structure clht-lb]
           [--build-initial 8388608] [--resize-initial 4194304] [--threads 2,8] [--rounds 3]
           [--only build|resize|churn|memory] [--churn-ms 2000] [--extra LABEL=ARGS]
           [--memory-octaves 20:23] [--memory-steps 4]

--extra adds chtbench arguments to one label's runs, so that one binary can be compared with
itself under two settings: --bin g2=PATH --bin g1.5=PATH --extra g1.5="--growth 1.5".
"""
import argparse
import json
import statistics
import subprocess
import sys


def run(binary, args):
    out = subprocess.run([binary, "run", "--format", "json", *args], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def median(values):
    return statistics.median(values) if values else float("nan")


def longest(r):
    """The longest sampled operation of a --latency run, ns (nan from a chtbench that does not
    report it)."""
    vals = [c["max"] for c in r["latency_ns"].values() if c["samples"] > 0 and "max" in c]
    return max(vals) if vals else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", action="append", required=True, help="LABEL=PATH of a chtbench")
    p.add_argument("--extra", action="append", default=[],
                   help="LABEL=ARGS: more chtbench arguments for that label's runs")
    p.add_argument("--structure", default="clht-lb")
    p.add_argument("--build-initial", type=int, default=1 << 23)
    p.add_argument("--resize-initial", type=int, default=1 << 22)
    p.add_argument("--threads", default="2,8")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--resize-ms", type=int, default=1000)
    p.add_argument("--churn-ms", type=int, default=2000)
    p.add_argument("--only", choices=["build", "resize", "churn", "memory"])
    p.add_argument("--memory-octaves", default="20:23", help="LOW:HIGH, log2 of the item counts")
    p.add_argument("--memory-steps", type=int, default=4, help="item counts per octave")
    a = p.parse_args()
    bins = [b.split("=", 1) for b in a.bin]
    extra = {label: args.split() for label, args in (e.split("=", 1) for e in a.extra)}
    unknown = set(extra) - {label for label, _ in bins}
    if unknown:
        p.error(f"--extra for labels without a --bin: {', '.join(sorted(unknown))}")
    threads = [int(t) for t in a.threads.split(",")]
    s = a.structure
    i, ri = a.build_initial, a.resize_initial
    build_cases = [(n, cap) for n in threads for cap in ("empty", "sized")]
    resize_cases = [(cap, lat) for lat in (False, True) for cap in ("from90", "sized_r")]
    churn_cases = [(cap, u) for cap in ("empty", "sized") for u in (10, 40)]
    kinds = {"build", "resize", "churn"} if a.only is None else {a.only}
    low, high = (int(x) for x in a.memory_octaves.split(":"))
    memory_sizes = [round(2 ** (low + k / a.memory_steps))
                    for k in range((high - low) * a.memory_steps + 1)]
    res = {}  # (label, kind, case) -> list of result dicts
    for rnd in range(a.rounds):
        for label, path in bins:
            if "build" in kinds:
                for n, cap in build_cases:
                    args = ["-s", s, "-n", str(n), "-i", str(i), "--init-threads", "all", "-d",
                            "100", "--capacity", "1" if cap == "empty" else str(i)]
                    r = run(path, args + extra.get(label, []))
                    res.setdefault((label, "build", (n, cap)), []).append(r)
                    print(f"# round {rnd + 1} {label} build n={n} {cap}: "
                          f"{i / r['fill_seconds'] / 1e6:.2f} M items/s, "
                          f"{r['bytes_per_item']:.1f} B/item", file=sys.stderr, flush=True)
            if "churn" in kinds:
                for cap, u in churn_cases:
                    args = ["-s", s, "-n", "2", "-u", str(u), "-i", str(i), "--init-threads",
                            "all", "-d", str(a.churn_ms), "--latency",
                            "--capacity", "1" if cap == "empty" else str(i)]
                    r = run(path, args + extra.get(label, []))
                    res.setdefault((label, "churn", (cap, u)), []).append(r)
                    print(f"# round {rnd + 1} {label} churn {cap} -u {u}: "
                          f"{r['throughput_mops']:.2f} Mops/s, resizes "
                          f"{r['events'].get('resizes')} in "
                          f"{r['events'].get('resize_ns', 0) / 1e6:.0f} ms, longest "
                          f"{longest(r) / 1e6:.2f} ms",
                          file=sys.stderr, flush=True)
            if "memory" in kinds:
                for n_items in memory_sizes:
                    for cap in ("empty", "sized"):
                        args = ["-s", s, "-n", "2", "-i", str(n_items), "--init-threads", "all",
                                "-d", "10", "--capacity", "1" if cap == "empty" else str(n_items)]
                        r = run(path, args + extra.get(label, []))
                        res.setdefault((label, "memory", (n_items, cap)), []).append(r)
                print(f"# round {rnd + 1} {label} memory: {len(memory_sizes)} sizes",
                      file=sys.stderr, flush=True)
            if "resize" in kinds:
                for cap, lat in resize_cases:
                    args = ["-s", s, "-n", "2", "-u", "40", "--insert-pct", "35", "-i", str(ri),
                            "-d", str(a.resize_ms)]
                    if cap == "from90":
                        args += ["--capacity", str(int(ri / 0.9))]
                    if lat:
                        args.append("--latency")
                    r = run(path, args + extra.get(label, []))
                    res.setdefault((label, "resize", (cap, lat)), []).append(r)
                    print(f"# round {rnd + 1} {label} resize {cap}{' latency' if lat else ''}: "
                          f"{r['throughput_mops']:.2f} Mops/s, resizes "
                          f"{r['events'].get('resizes')}", file=sys.stderr, flush=True)

    def values(label, kind, case, f):
        return [f(r) for r in res.get((label, kind, case), [])]

    def fmt(vs):
        return " ".join(f"{v:.2f}" for v in vs)

    if "build" in kinds:
        print(f"## build: {s}, i = {i}, --init-threads all; build rate in M items/s "
              f"(median of {a.rounds}; rounds in brackets)")
        print("build n empty sized empty/sized B/item_empty B/item_sized")
        for label, _ in bins:
            for n in threads:
                e = values(label, "build", (n, "empty"), lambda r: i / r["fill_seconds"] / 1e6)
                z = values(label, "build", (n, "sized"), lambda r: i / r["fill_seconds"] / 1e6)
                be = values(label, "build", (n, "empty"), lambda r: r["bytes_per_item"])
                bz = values(label, "build", (n, "sized"), lambda r: r["bytes_per_item"])
                print(f"{label} {n} {median(e):.2f} [{fmt(e)}] {median(z):.2f} [{fmt(z)}] "
                      f"{median(e) / median(z):.2f} {median(be):.1f} {median(bz):.1f}")
    if "memory" in kinds:
        print(f"## memory: {s}, bytes per item built from empty (2 threads) / sized for i "
              f"(median of {a.rounds}), i = {memory_sizes[0]} .. {memory_sizes[-1]}")
        print("build " + " ".join(str(n) for n in memory_sizes) + " max geomean")
        for label, _ in bins:
            ratios = [median(values(label, "memory", (n, "empty"), lambda r: r["bytes_per_item"])) /
                      median(values(label, "memory", (n, "sized"), lambda r: r["bytes_per_item"]))
                      for n in memory_sizes]
            print(f"{label} {fmt(ratios)} {max(ratios):.2f} "
                  f"{statistics.geometric_mean(ratios):.2f}")
    if "churn" in kinds:
        print(f"## churn: {s}, i = {i} built by 2 threads, then n = 2, d = {a.churn_ms} ms, "
              f"--latency; M ops/s (median of {a.rounds}; rounds in brackets), resizes during "
              f"the churn, longest sampled operation in ms (max over rounds)")
        print("build table 90/5/5 60/20/20 ratio resizes_90 resize_ms_90 longest_90 longest_60")
        for label, _ in bins:
            for cap in ("empty", "sized"):
                m = {u: values(label, "churn", (cap, u), lambda r: r["throughput_mops"])
                     for u in (10, 40)}
                rz = values(label, "churn", (cap, 10), lambda r: r["events"].get("resizes", 0))
                rms = values(label, "churn", (cap, 10),
                             lambda r: r["events"].get("resize_ns", 0) / 1e6)
                lo = {u: max(values(label, "churn", (cap, u), longest), default=float("nan"))
                      for u in (10, 40)}
                print(f"{label} {cap} {median(m[10]):.2f} [{fmt(m[10])}] {median(m[40]):.2f} "
                      f"[{fmt(m[40])}] {median(m[10]) / median(m[40]):.2f} {fmt(rz)} {fmt(rms)} "
                      f"{lo[10] / 1e6:.2f} {lo[40] / 1e6:.2f}")
    if "resize" in kinds:
        print(f"## resize: {s}, i = {ri}, n = 2, -u 40 --insert-pct 35, d = {a.resize_ms} ms; "
              f"M ops/s (median of {a.rounds}; rounds in brackets)")
        print("build from90 sized_r ratio resizes resize_ms B/item_from90 B/item_sized_r")
        for label, _ in bins:
            f90 = values(label, "resize", ("from90", False), lambda r: r["throughput_mops"])
            sr = values(label, "resize", ("sized_r", False), lambda r: r["throughput_mops"])
            rz = values(label, "resize", ("from90", False), lambda r: r["events"].get("resizes", 0))
            rns = values(label, "resize", ("from90", False),
                         lambda r: r["events"].get("resize_ns", 0) / 1e6)
            b90 = values(label, "resize", ("from90", False), lambda r: r["bytes_per_item"])
            bsr = values(label, "resize", ("sized_r", False), lambda r: r["bytes_per_item"])
            print(f"{label} {median(f90):.2f} [{fmt(f90)}] {median(sr):.2f} [{fmt(sr)}] "
                  f"{median(f90) / median(sr):.2f} {fmt(rz)} {fmt(rns)} {median(b90):.1f} "
                  f"{median(bsr):.1f}")
        print("## resize with --latency (one operation in 64 timed): p99.9 ns, median of rounds")
        print("build class from90 sized_r from90/sized_r  (p99 from90 sized_r)")
        for label, _ in bins:
            for cls in ("put_suc", "get_suc", "get_fail"):
                def pct(cap, key):
                    return median(values(label, "resize", (cap, True),
                                         lambda r: r["latency_ns"][cls][key]))
                a90, asr = pct("from90", "p999"), pct("sized_r", "p999")
                print(f"{label} {cls} {a90:.0f} {asr:.0f} {a90 / asr:.1f}  "
                      f"({pct('from90', 'p99'):.0f} {pct('sized_r', 'p99'):.0f})")


if __name__ == "__main__":
    main()
