#!/usr/bin/env python3
"""How evenly a bucket-index hash spreads structured key sets (docs/benchmarks.md).

Places n keys into m = n / 1.5 heads of three slots -- CLHT's buckets at the load the
benchmarks run at -- with the head index taken from the hash's high bits (reduce_range), and
prints per key pattern and hash the share of heads that overflow into a chain, the share of keys
that sit in chains, and the longest chain (keys in one head). Hashes: MurmurHash3's fmix64 as
ccf's mix64 applies it (seeded), and Fibonacci hashing (the key times 2^64 / golden ratio).

  scripts/hash_spread.py [LOG2_N] > bench/results/hash_spread_<date>.txt
"""
import collections
import sys

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / golden ratio; also ccf's kDefaultSeed
SLOTS = 3


def mix64(key, seed=GOLDEN):
    k = key ^ seed
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & MASK
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & MASK
    return k ^ (k >> 33)


def fibonacci(key):
    return (key * GOLDEN) & MASK


PATTERNS = {
    "dense 1..n": lambda i: i + 1,
    "multiples of 7": lambda i: 7 * (i + 1),
    "multiples of 1000": lambda i: 1000 * (i + 1),
    "multiples of 10^5": lambda i: 100000 * (i + 1),
    "aligned 2^11": lambda i: (i + 1) << 11,
    "aligned 2^12 (pages)": lambda i: (i + 1) << 12,
    "aligned 2^16": lambda i: (i + 1) << 16,
    "random (fmix64 of i)": lambda i: mix64(i + 1, 0) or 1,
}


def main():
    n = 1 << (int(sys.argv[1]) if len(sys.argv) > 1 else 18)
    m = n * 2 // 3
    print(f"# scripts/hash_spread.py: n = {n} keys into m = {m} heads of {SLOTS} slots")
    print(f"{'pattern':22} {'hash':10} {'heads overflowing':>18} {'keys in chains':>15} "
          f"{'longest':>8}")
    for name, key in PATTERNS.items():
        for hash_name, hash_fn in (("fmix64", mix64), ("fibonacci", fibonacci)):
            heads = collections.Counter((hash_fn(key(i)) * m) >> 64 for i in range(n))
            over = [c for c in heads.values() if c > SLOTS]
            print(f"{name:22} {hash_name:10} {100 * len(over) / m:17.1f}% "
                  f"{100 * sum(c - SLOTS for c in over) / n:14.1f}% {max(heads.values()):8}")


if __name__ == "__main__":
    main()
