#!/usr/bin/env python3
"""The Python package against the C++ library and against Python's own choices, in one run.

1. Batched: CuckooFilter(2**26, fp_bits=12) built to 95% load with add_many, then contains_many
   over 10**7 member and 10**7 other uint64 keys (a NumPy array) -- beside filter_bench's figures
   for the same filter in the same run (its batched build and batched lookups).
2. Per item, random 64-bit Python ints: `x in f` / `f.add(x)` against `x in s` / `s.add(x)` for a
   built-in set of the same keys (the filter sized for them), with the bare loop's cost shown
   apart, the set's case of sequential small ints beside, and the memory of each; then the
   same at a size where the set's table fits in cache too.
3. Debian's python3-flor (pure-Python Bloom filter) beside ccf's BloomFilter and CuckooFilter:
   same bytes keys, same false-positive target.

Usage: /usr/bin/python3 bench/python_bench.py [--filter-bench build/release/bench/filter_bench]
       [--log2-items 26] [--lookups 10000000] [--per-item 1000000] [--in-cache 10000]
       [--flor 100000]
(with PYTHONPATH=build/release/python, or the package installed). Prints a report.
"""

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

import ccf


def seconds(fn):
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def ns(elapsed, n):
    return 1e9 * elapsed / n


def cpu_model():
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def batched(log2_items, lookups, filter_bench):
    n = 1 << log2_items
    rng = np.random.default_rng(1)
    members = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
    others = np.random.default_rng(2).integers(0, 2**64, size=lookups, dtype=np.uint64)
    f = ccf.CuckooFilter(n, fp_bits=12, max_load=0.95)  # filter_bench's filter and load
    f.clear()  # commit the pages first, as filter_bench does before its timed build
    t_add, stored = seconds(lambda: f.add_many(members))
    assert stored == n, "the build filled up before 95% load"
    probe = members[:lookups]
    t_pos, hits = seconds(lambda: f.contains_many(probe))
    assert hits.all(), "false negative"
    t_neg, false_hits = seconds(lambda: f.contains_many(others))
    py = {"insert_batched_ns": ns(t_add, n), "positive_lookup_batched_ns": ns(t_pos, lookups),
          "negative_lookup_batched_ns": ns(t_neg, lookups),
          "fpr": float(false_hits.mean()), "load_factor": len(f) / f.capacity}
    del f, members, probe, others
    gc.collect()
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([filter_bench, "--log2-items", str(log2_items), "--fp-bits", "12",
                        "--repeat", "1", "--json", out.name], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cpp = json.load(open(out.name))[0]
    return py, cpp


def per_item(count, repeats=5):
    # Random 64-bit keys for both: a set of sequential small ints (0, 2, 4, ...) probes
    # consecutive slots of its table, which no hashed structure can; the row "keys 0, 2, 4"
    # shows that case for the set alone. Lookups are half members, half not, the same list
    # of int objects for both, in the order they were made.
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**64, size=count, dtype=np.uint64).tolist()
    probe = keys[: count // 2] + rng.integers(0, 2**64, size=count - count // 2,
                                                dtype=np.uint64).tolist()
    s = set(keys)
    f = ccf.CuckooFilter(count)  # sized as a user would: capacity = items
    f.update(keys)
    small = list(range(0, 2 * count, 2))
    small_set = set(small)
    small_probe = small[: count // 2] + list(range(1, count, 2))

    def adds(make):  # into a new container each round: a filter keeps duplicates
        c = make()
        return seconds(lambda: [c.add(x) for x in keys])[0]

    rounds = {"bare loop": lambda: seconds(lambda: [None for x in probe])[0],
              "set.add": lambda: adds(set),
              "CuckooFilter.add": lambda: adds(lambda: ccf.CuckooFilter(count)),
              "x in set": lambda: seconds(lambda: [x in s for x in probe])[0],
              "x in CuckooFilter": lambda: seconds(lambda: [x in f for x in probe])[0],
              "x in set, keys 0, 2, 4..":
                  lambda: seconds(lambda: [x in small_set for x in small_probe])[0]}
    # Best of `repeats` rounds, the loops taking turns within a round, so that a busy spell of
    # the shared machine does not fall on one of them only.
    rows = {}
    for _ in range(repeats):
        for name, timed in rounds.items():
            rows[name] = min(rows.get(name, float("inf")), timed())
    set_bytes = sys.getsizeof(s) + sum(sys.getsizeof(x) for x in keys)
    return {k: ns(v, count) for k, v in rows.items()}, set_bytes, f.memory_bytes


def flor_side_by_side(count, fpr=0.001):
    import flor

    keys = [str(i).encode() for i in range(count)]
    others = [str(i).encode() for i in range(count, 2 * count)]
    out = {}
    for name, make in [("flor.BloomFilter", lambda: flor.BloomFilter(n=count, p=fpr)),
                       ("ccf.BloomFilter", lambda: ccf.BloomFilter(count, fpr)),
                       ("ccf.CuckooFilter", lambda: ccf.CuckooFilter(count, fpr))]:
        f = make()
        t_add = seconds(lambda: [f.add(k) for k in keys])[0]
        t_check, hits = seconds(lambda: [k in f for k in keys])
        assert all(hits)
        false_hits = sum(k in f for k in others)
        out[name] = (ns(t_add, count), ns(t_check, count), false_hits / count)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--filter-bench", default="build/release/bench/filter_bench")
    parser.add_argument("--log2-items", type=int, default=26)
    parser.add_argument("--lookups", type=int, default=10_000_000)
    parser.add_argument("--per-item", type=int, default=1_000_000)
    parser.add_argument("--in-cache", type=int, default=10_000,
                        help="keys of the per-item run whose set and filter both fit in cache")
    parser.add_argument("--flor", type=int, default=100_000)
    args = parser.parse_args()

    print(f"command: {' '.join([os.path.basename(sys.executable)] + sys.argv)}")
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores; python {platform.python_version()}, "
          f"numpy {np.__version__}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M')}\n")

    py, cpp = batched(args.log2_items, args.lookups, args.filter_bench)
    print(f"1. batched, CuckooFilter 12-bit b=4, n = 2^{args.log2_items} at load "
          f"{py['load_factor']:.3f}, {args.lookups:,} lookups of uint64 keys in a NumPy array")
    print(f"   {'ns per key':<34}{'Python':>9}{'C++ filter_bench':>18}{'C++/Python':>12}")
    for key, label in [("insert_batched_ns", "add_many / insert_many"),
                       ("positive_lookup_batched_ns", "contains_many, members"),
                       ("negative_lookup_batched_ns", "contains_many, others")]:
        print(f"   {label:<34}{py[key]:>9.1f}{cpp[key]:>18.1f}{cpp[key] / py[key]:>12.2f}")
    print(f"   false-positive rate: Python {py['fpr']:.5f}, C++ {cpp['fpr']:.5f}\n")

    rows, set_bytes, filter_bytes = per_item(args.per_item)
    print(f"2. per item, {args.per_item:,} random 64-bit Python ints (list comprehensions; "
          f"lookups half members; best of 5 rounds taking turns)")
    for k, v in rows.items():
        print(f"   {k:<26}{v:>8.1f} ns")
    print(f"   add: filter/set {rows['CuckooFilter.add'] / rows['set.add']:.2f}x; "
          f"lookup: filter/set {rows['x in CuckooFilter'] / rows['x in set']:.2f}x")
    print(f"   memory: set + its ints {set_bytes / 2**20:.1f} MiB, CuckooFilter "
          f"{filter_bytes / 2**20:.2f} MiB ({set_bytes / filter_bytes:.0f}x less)")
    # At this size the set's table (2^21 slots) misses the cache on most lookups and the
    # filter's does not; with few keys both are in cache, which is the call's own cost.
    small, _, _ = per_item(args.in_cache, repeats=50)
    lookup, add = small["x in CuckooFilter"], small["CuckooFilter.add"]
    print(f"   in cache, {args.in_cache:,} keys (best of 50): x in set {small['x in set']:.1f} ns, "
          f"x in CuckooFilter {lookup:.1f} ns: {lookup / small['x in set']:.2f}x; "
          f"f.add {add:.1f} ns, set.add {small['set.add']:.1f} ns\n")

    print(f"3. beside python3-flor, {args.flor:,} bytes keys, target fpr 0.001")
    print(f"   {'':<20}{'add (ns)':>10}{'check (ns)':>12}{'measured fpr':>14}")
    for name, (add, check, fpr) in flor_side_by_side(args.flor).items():
        print(f"   {name:<20}{add:>10.0f}{check:>12.0f}{fpr:>14.5f}")


if __name__ == "__main__":
    main()
