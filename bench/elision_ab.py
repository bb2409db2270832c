#!/usr/bin/env python3
"""Elision A/B pairs measured in one run (docs/benchmarks.md, "Elision events: what counting
costs, and the adaptive policy without RTM").

Each pair (A, B) runs interleaved over ROUNDS rounds -- A, B, A, B, ... -- every run
`chtbench run -k REPEAT` (its median); the table gives the median of the rounds for A and B
and the ratio B / A of the medians, per thread count.

  counting   the same structure with --elision-stats off (A) and on (B): what counting costs
  adaptive   a fixed policy or the plain lock (A) against the adaptive policy (B)

Usage: bench/elision_ab.py [path/to/chtbench] > OUT.txt
Environment: ROUNDS (3), REPEAT (3), DURATION_MS (500), THREADS ("1 2 8"), UPDATE (10),
INITIAL (1048576).
"""
import json
import os
import statistics
import subprocess
import sys

CHTBENCH = sys.argv[1] if len(sys.argv) > 1 else "build/release/tools/chtbench/chtbench"
ROUNDS = int(os.environ.get("ROUNDS", "3"))
REPEAT = os.environ.get("REPEAT", "3")
DURATION = os.environ.get("DURATION_MS", "500")
THREADS = os.environ.get("THREADS", "1 2 8").split()
UPDATE = os.environ.get("UPDATE", "10")
INITIAL = os.environ.get("INITIAL", "1048576")

# (label, (structure, extra args) A, (structure, extra args) B)
PAIRS = [
    ("counting", ("ccf-rtm-retry", ["--elision-stats", "off"]), ("ccf-rtm-retry", [])),
    ("counting", ("ccf-global-mcs", ["--elision-stats", "off"]), ("ccf-global-mcs", [])),
    ("counting", ("htm-clht-htm-retry", ["--elision-stats", "off"]), ("htm-clht-htm-retry", [])),
    ("adaptive", ("ccf-global-mcs", []), ("ccf-rtm-adaptive", [])),
    ("adaptive", ("ccf-rtm-retry", []), ("ccf-rtm-adaptive", [])),
    ("adaptive", ("htm-clht-mcs", []), ("htm-clht-adaptive", [])),
]


def run(structure, extra, threads):
    out = subprocess.run(
        [CHTBENCH, "run", "-s", structure, "-n", threads, "-u", UPDATE, "-i", INITIAL,
         "-d", DURATION, "-k", REPEAT, "--format", "json", *extra],
        check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    result = result[0] if isinstance(result, list) else result
    return result["throughput_mops"], result.get("speculative_share")


def name(side):
    structure, extra = side
    return structure + ("" if not extra else " " + " ".join(extra))


def main():
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), "unknown CPU")
    listing = subprocess.run([CHTBENCH, "--list"], capture_output=True, text=True).stdout
    adaptive = next((line for line in listing.splitlines() if line.startswith("ccf-rtm-adaptive")),
                    "")
    rtm_line = adaptive[adaptive.rfind("(") + 1:adaptive.rfind(")")]  # describe(rtm_support())
    print(f"# {cpu}, {os.cpu_count()} CPUs; u = {UPDATE}%, i = {INITIAL}, d = {DURATION} ms, "
          f"-k {REPEAT}, {ROUNDS} interleaved rounds")
    print(f"# {rtm_line}")
    print(f"{'pair':<9} {'A':<36} {'B':<36} {'n':>3} {'A Mops/s':>9} {'B Mops/s':>9} "
          f"{'B/A':>6} {'B spec.':>8}")
    for label, a, b in PAIRS:
        for threads in THREADS:
            rates = {"a": [], "b": []}
            shares = []
            for _ in range(ROUNDS):
                rates["a"].append(run(*a, threads)[0])
                rate, share = run(*b, threads)
                rates["b"].append(rate)
                if share is not None:
                    shares.append(share)
            ma, mb = statistics.median(rates["a"]), statistics.median(rates["b"])
            spec = f"{100 * statistics.median(shares):.1f}%" if shares else "-"
            print(f"{label:<9} {name(a):<36} {name(b):<36} {threads:>3} {ma:>9.2f} {mb:>9.2f} "
                  f"{mb / ma:>6.3f} {spec:>8}", flush=True)


if __name__ == "__main__":
    main()
