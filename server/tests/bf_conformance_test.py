#!/usr/bin/python3
"""Conformance suite for RedisBloom's BF.* (Bloom filter) commands in ccf's two front ends.

Every numbered conformance case of /work/shared/BF-COMMANDS.md §10 is one test, named
test_case_NN_..., with the case's text as its docstring. Around them: the §2 filter model
checked through BF.DEBUG, false-positive rates, a concurrent hammer, SCANDUMP/LOADCHUNK
across servers and front ends, snapshots of `ccf serve`, error robustness, and smoke tests
through redis-py's `r.bf()` and redis-cli.

Usage: /usr/bin/python3 bf_conformance_test.py PATH/TO/ccf [unittest options]
       /usr/bin/python3 bf_conformance_test.py --redis-module PATH/TO/ccf-redis.so
                        [--ccf PATH/TO/ccf] [unittest options]

The harness (RESP client, Server, ServerTest with FLUSHALL per case, assertReply) is the CF.*
suite's, conformance_test.py, imported as `harness`. With --redis-module the cases run against
Debian's redis-server with the module loaded (MODULE_CASES); the module's key types are
ccfBloom- and ccfCuckoo. The cross-front-end dump test also starts a `ccf serve` there: its
binary comes from --ccf or the CCF_BINARY environment variable (skipped if neither is given).

ccf's own choices where the contract allows (its [hash] and [layout] cases, §7): sub-filters
are blocked Bloom filters (standard ones where a sub-filter's error is below what the blocked
layout reaches), so byte counts, hash counts and dump bytes are ccf's; what is
checked instead is the model: capacities c_i = capacity * expansion^i, error ratios halved
per sub-filter, the number of sub-filters the fewest that cover the items inserted, bits = 8 *
bytes with bytes a positive multiple of 8 (whole 64-bit words), dump chunks the size of their
sub-filters.
"""

import math
import os
import random
import re
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance_test as harness  # noqa: E402  (the CF.* suite: client, servers, asserts)

try:
    import redis  # Debian's python3-redis, for the smoke test of redis-py's r.bf()
except ImportError:
    redis = None

Err, Simple, Map, Match = harness.Err, harness.Simple, harness.Map, harness.Match
OK, PONG = harness.OK, harness.PONG
POSITIVE_INT, ANY_INT, ANY_BULK = harness.POSITIVE_INT, harness.ANY_INT, harness.ANY_BULK
arity = harness.arity

BF_TYPE_NAME = "MBbloom--"  # TYPE of a Bloom key ("ccfBloom-" in the module)
CCF_SERVE_BINARY = ""       # `ccf serve` for the cross-front-end test in module mode

# ---------------------------------------------------------------------------------------------
# Error texts of the contract (§1, §4), verbatim.

E_EXISTS, E_NOTFOUND, E_TYPE = harness.E_EXISTS, harness.E_NOTFOUND, harness.E_TYPE
RANGE_E = Err("ERR error rate must be in the range (0.000000, 1.000000)")
RANGE_C = Err("ERR capacity must be in the range [1, 1073741824]")
RANGE_X = Err("ERR expansion must be in the range [0, 32768]")
BAD_RATE = Err("ERR bad error rate")
BAD_CAP = Err("ERR bad capacity")
NO_EXPANSION = Err("ERR no expansion")
BAD_EXP = Err("ERR bad expansion")
CANNOT_EXPAND = Err("Nonscaling filters cannot expand")
INSERT_BAD_CAPACITY = Err("Bad capacity")
INSERT_BAD_RATE = Err("Bad error rate")
INSERT_BAD_EXPANSION = Err("Bad expansion")
UNKNOWN_ARGUMENT = harness.UNKNOWN_ARGUMENT
FULL = Err("ERR non scaling filter is full")
INVALID_INFO = Err("Invalid information value")
SCANDUMP_NOT_NUMERIC = Err("Second argument must be numeric")
LOADCHUNK_NOT_NUMERIC = Err("ERR Second argument must be numeric")
BAD_DATA = Err("ERR received bad data")
NO_LINK = Err("ERR invalid offset - no link found")
TOO_BIG = Err("ERR invalid chunk - Too big for current filter")
NO_MEMORY = Err("ERR Insufficient memory to create filter")

INFO_NAMES = ("Capacity", "Size", "Number of filters", "Number of items inserted",
              "Expansion rate")
MAX_CHUNK = 16 << 20  # §4 BF.SCANDUMP: at most 16 MiB per chunk
DEBUG_LINE = re.compile(rb"bytes:([0-9]+) bits:([0-9]+) hashes:([0-9]+) hashwidth:64 "
                        rb"capacity:([0-9]+) size:([0-9]+) ratio:([^ ]+)")


def bf_info_reply(capacity, filters, items, expansion, size=POSITIVE_INT):
    """The exact RESP2 BF.INFO reply: 10 elements, names as simple strings."""
    values = (capacity, size, filters, items, expansion)
    return [part for name, value in zip(INFO_NAMES, values) for part in (Simple(name), value)]


def bf_info_map(capacity, filters, items, expansion, size=POSITIVE_INT):
    """The exact RESP3 BF.INFO reply: the same five pairs as a map, in the same order."""
    values = (capacity, size, filters, items, expansion)
    return Map((Simple(name), value) for name, value in zip(INFO_NAMES, values))


def fewest_filters(items, capacity, expansion):
    """§2: the fewest sub-filters whose capacities (capacity * expansion^i) cover `items`
    (1 for an empty filter), and the sum of their capacities."""
    count, covered = 1, capacity
    while covered < items and count < 10000:
        covered += capacity * expansion ** count
        count += 1
    return count, covered


def ratios(rate, scaling, count):
    """§2: e_0 = min(rate, 0.25) / 2 for a scaling filter (as given when non-scaling), halved
    for each following sub-filter; as BF.DEBUG prints them (C `%g`)."""
    first = min(rate, 0.25) / (2 if scaling else 1)
    return ["%g" % (first / 2 ** i) for i in range(count)]


def items_of(prefix, count):
    return [f"{prefix}{i}".encode() for i in range(count)]


# XXH3-64 (seed 0, default secret) for inputs of 17 to 128 bytes: what ccf's header checksum
# is (include/ccf/scalable_bloom_filter.hpp), so that the robustness tests can forge headers
# whose checksum is right and whose content is not. Checked against a header ccf wrote first.
XXH3_SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364")
MASK64 = (1 << 64) - 1


def xxh3_64(data):
    assert 16 < len(data) <= 128, "only the 17-128 byte branch is implemented"

    def word(buf, at):
        return int.from_bytes(buf[at:at + 8], "little")

    def mix16(at, secret_at):
        product = ((word(data, at) ^ word(XXH3_SECRET, secret_at)) *
                   (word(data, at + 8) ^ word(XXH3_SECRET, secret_at + 8)))
        return (product & MASK64) ^ (product >> 64)

    n, acc = len(data), len(data) * 0x9E3779B185EBCA87
    pairs = [(0, n - 16)] + [(16 * k, n - 16 * (k + 1)) for k in range(1, 4)
                             if n > 32 * k]
    for k, (front, back) in enumerate(pairs):
        acc += mix16(front, 32 * k) + mix16(back, 32 * k + 16)
    acc &= MASK64
    acc ^= acc >> 37
    acc = (acc * 0x165667919E3779F9) & MASK64
    return acc ^ (acc >> 32)


# ---------------------------------------------------------------------------------------------
# Helpers shared by the test classes (each takes the connection it works on).

class BloomChecks:
    """BF.INFO / BF.DEBUG / SCANDUMP readers that check the reply shapes, and the §2 model."""

    def bf_info(self, conn, key):
        """BF.INFO (RESP2) checked for shape, names and order; returns {name: value}."""
        reply = conn.call("BF.INFO", key)
        self.assertIs(type(reply), list, f"BF.INFO {key!r}: {reply!r}")
        self.assertEqual(len(reply), 10, f"BF.INFO {key!r}: {reply!r}")
        self.assertEqual(reply[0::2], [Simple(n) for n in INFO_NAMES], f"BF.INFO {key!r}")
        for name, value in zip(INFO_NAMES, reply[1::2]):
            if name != "Expansion rate" or value is not None:
                self.assertIs(type(value), int, f"BF.INFO {key!r} {name}: {reply!r}")
        return dict(zip(INFO_NAMES, reply[1::2]))

    def bf_debug(self, conn, key):
        """BF.DEBUG parsed: (items inserted, [{bytes, bits, hashes, capacity, size, ratio}]),
        with the [layout] facts ccf promises checked: bits = 8 * bytes, bytes a positive
        multiple of 8, at least one hash, the sub-filters' sizes summing to the total."""
        reply = conn.call("BF.DEBUG", key)
        what = f"BF.DEBUG {key!r}: {reply!r:.600}"
        self.assertIs(type(reply), list, what)
        self.assertGreaterEqual(len(reply), 2, what)
        for line in reply:
            self.assertIs(type(line), bytes, what)
        head = re.fullmatch(rb"size:([0-9]+)", reply[0])
        self.assertTrue(head, what)
        subs = []
        for line in reply[1:]:
            m = DEBUG_LINE.fullmatch(line)
            self.assertTrue(m, f"{what}: line {line!r} is not in the contract's format")
            size_bytes, bits, hashes, capacity, size = (int(g) for g in m.groups()[:5])
            self.assertGreater(size_bytes, 0, what)
            self.assertEqual(size_bytes % 8, 0, f"{what}: bytes not whole 64-bit words")
            self.assertEqual(bits, 8 * size_bytes, what)
            self.assertGreaterEqual(hashes, 1, what)
            subs.append(dict(bytes=size_bytes, bits=bits, hashes=hashes, capacity=capacity,
                             size=size, ratio=m.group(6).decode()))
        self.assertEqual(sum(s["size"] for s in subs), int(head.group(1)), what)
        return int(head.group(1)), subs

    def assertModel(self, conn, key, capacity, expansion, rate, scaling=True, added=None,
                    check_ratios=True):
        """§2 model, hash-independent: `Number of filters` is the fewest sub-filters whose
        capacities cover the items inserted; Capacity their sum; BF.DEBUG lists them with
        capacity c_i = capacity * expansion^i and ratio e_i; each but the newest is exactly
        full; no sub-filter has fewer bits than c_i * log2(1/e_i) (no filter can meet e_i with
        less). Returns (BF.INFO as a dict, the sub-filters)."""
        info = self.bf_info(conn, key)
        items = info["Number of items inserted"]
        if added is not None:
            self.assertLessEqual(items, added, f"{key}: more items inserted than added")
        count, covered = fewest_filters(items, capacity, expansion) if scaling else (1, capacity)
        self.assertEqual(info["Number of filters"], count, f"{key}: {info}")
        self.assertEqual(info["Capacity"], covered, f"{key}: {info}")
        self.assertEqual(info["Expansion rate"], expansion if scaling else None, f"{key}")
        total, subs = self.bf_debug(conn, key)
        self.assertEqual(total, items, f"{key}: BF.DEBUG size vs BF.INFO items")
        self.assertEqual([s["capacity"] for s in subs],
                         [capacity * expansion ** i for i in range(count)], f"{key}: {subs}")
        if check_ratios:
            self.assertEqual([s["ratio"] for s in subs], ratios(rate, scaling, count), key)
        for i, sub in enumerate(subs):
            if i < count - 1:
                self.assertEqual(sub["size"], sub["capacity"], f"{key} sub-filter {i}: {sub}")
            else:
                self.assertLessEqual(sub["size"], sub["capacity"], f"{key} newest: {sub}")
            bound = sub["capacity"] * -math.log2(float(sub["ratio"]))
            self.assertGreaterEqual(sub["bits"], bound, f"{key} sub-filter {i}: {sub}")
        return info, subs

    def dump(self, conn, key):
        """Every (iterator, data) pair of BF.SCANDUMP from 0 until [0, ""], with the structure
        checked: [1, non-empty header] first, then chunks of at most 16 MiB whose iterator is
        the previous one plus the chunk's length; the end is an empty bulk string, not nil."""
        pairs, iterator = [], 0
        for _ in range(100000):
            reply = conn.call("BF.SCANDUMP", key, iterator)
            what = f"BF.SCANDUMP {key!r} {iterator}: {reply!r:.300}"
            self.assertReply(reply, [ANY_INT, ANY_BULK], what)
            following, data = reply
            if following == 0:
                self.assertEqual(data, b"", what)
                self.assertNotEqual(iterator, 0, f"{what}: no header")
                return pairs
            if iterator == 0:
                self.assertEqual(following, 1, what)
                self.assertGreater(len(data), 0, f"{what}: empty header")
            else:
                self.assertTrue(0 < len(data) <= MAX_CHUNK, what)
                self.assertEqual(following, iterator + len(data), what)
            pairs.append((following, data))
            iterator = following
        self.fail(f"BF.SCANDUMP {key!r} never returned iterator 0")

    def assertChunksMatchDebug(self, conn, key, pairs):
        """[layout] ccf: one chunk per sub-filter, as long as BF.DEBUG's bytes for it."""
        _, subs = self.bf_debug(conn, key)
        self.assertEqual([len(data) for _, data in pairs[1:]], [s["bytes"] for s in subs],
                         f"{key}: chunk lengths vs BF.DEBUG bytes")

    def load(self, conn, key, pairs):
        for iterator, data in pairs:
            self.assertReply(conn.call("BF.LOADCHUNK", key, iterator, data), OK,
                             f"BF.LOADCHUNK {key!r} {iterator} <{len(data)} bytes>")

    def add_all(self, conn, key, values, command="BF.ADD", batch=500):
        """Adds every value (pipelined BF.ADD, or BF.MADD batches); each reply must be 1 or
        0 (0: a false positive among new items). Returns how many answered 1."""
        ones = 0
        for start in range(0, len(values), batch):
            chunk = values[start:start + batch]
            if command == "BF.ADD":
                replies = conn.pipeline([("BF.ADD", key, v) for v in chunk])
            else:
                replies = conn.call(command, key, *chunk)
                self.assertIs(type(replies), list, f"{command} {key}: {replies!r:.200}")
            self.assertEqual(len(replies), len(chunk), f"{command} {key}")
            bad = [(v, r) for v, r in zip(chunk, replies) if type(r) is not int or r not in (0, 1)]
            self.assertEqual(bad[:5], [], f"{command} {key}")
            ones += sum(replies)
        return ones

    def missing(self, conn, key, values, batch=1000):
        """The values BF.MEXISTS does not find (a Bloom filter has no false negatives)."""
        gone = []
        for start in range(0, len(values), batch):
            chunk = values[start:start + batch]
            reply = conn.call("BF.MEXISTS", key, *chunk)
            self.assertIs(type(reply), list, f"BF.MEXISTS {key}: {reply!r:.200}")
            self.assertEqual(len(reply), len(chunk), f"BF.MEXISTS {key}")
            gone += [v for v, r in zip(chunk, reply) if type(r) is not int or r != 1]
        return gone

    def false_positives(self, conn, key, values, batch=1024):
        count = 0
        for start in range(0, len(values), batch):
            reply = conn.call("BF.MEXISTS", key, *values[start:start + batch])
            count += sum(1 for r in reply if r == 1)
        return count


class BFTest(BloomChecks, harness.ServerTest):
    """One server per class (ccf serve, or redis-server with the module); FLUSHALL per case."""

    scan = harness.GenericCommandTest.scan  # SCAN from "0" until cursor "0", on self.c

    def info_field(self, key, field):
        return self.c.call("BF.INFO", key, field)

    def case_48_setup(self):
        """Case 48's filter: `BF.RESERVE bf 0.1 10`; `BF.ADD bf item1`; returns (H, I, D) from
        `BF.SCANDUMP bf 0` → [1, H] and `BF.SCANDUMP bf 1` → [I, D], after checking
        I = 1 + len(D) = 1 + BF.DEBUG's bytes of sub-filter 0 and `BF.SCANDUMP bf I` → [0, ""]."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.1", "10")
        self.assertCmd(self.c, 1, "BF.ADD", "bf", "item1")
        first = self.c.call("BF.SCANDUMP", "bf", 0)
        self.assertReply(first, [1, ANY_BULK], "BF.SCANDUMP bf 0")
        header = first[1]
        self.assertGreater(len(header), 0, "empty header")
        second = self.c.call("BF.SCANDUMP", "bf", 1)
        self.assertReply(second, [ANY_INT, ANY_BULK], "BF.SCANDUMP bf 1")
        following, data = second
        _, subs = self.bf_debug(self.c, "bf")
        self.assertEqual(len(subs), 1)
        self.assertGreater(following, 1)
        self.assertEqual(len(data), subs[0]["bytes"], "chunk length vs BF.DEBUG bytes")
        self.assertEqual(following, 1 + len(data), "the iterator counts the data's bytes")
        self.assertCmd(self.c, [0, b""], "BF.SCANDUMP", "bf", following)
        return header, following, data


# =============================================================================================
# §10 cases 1-16: BF.RESERVE and BF.INFO.

class BFReserveTest(BFTest):
    """BF.RESERVE and BF.INFO: cases 1-16."""

    def test_case_01_reserve_twice_and_type(self):
        """`BF.RESERVE bf 0.01 1000` → `OK`; again → `ERR item exists`; `TYPE bf` →
        `MBbloom--` (ccfBloom- in the module)."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.01", "1000")
        self.assertCmd(self.c, E_EXISTS, "BF.RESERVE", "bf", "0.01", "1000")
        self.assertCmd(self.c, Simple(BF_TYPE_NAME), "TYPE", "bf")

    def test_case_02_info(self):
        """`BF.RESERVE bf 0.001 100` → `OK`; `BF.INFO bf` → `[Capacity, 100, Size, >0, Number
        of filters, 1, Number of items inserted, 0, Expansion rate, 2]` ([layout]: Size 296)."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.001", "100")
        self.assertCmd(self.c, bf_info_reply(100, 1, 0, 2), "BF.INFO", "bf")

    def test_case_03_info_single_fields(self):
        """Continue 2: `BF.INFO bf capacity` → `[100]`; `BF.INFO bf SIZE` → `[>0]` ([layout]
        296); `BF.INFO bf filters` → `[1]`; `BF.INFO bf items` → `[0]`; `BF.INFO bf expansion`
        → `[2]`."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.001", "100")
        self.assertCmd(self.c, [100], "BF.INFO", "bf", "capacity")
        size = self.bf_info(self.c, "bf")["Size"]
        self.assertCmd(self.c, [size], "BF.INFO", "bf", "SIZE")
        self.assertGreater(size, 0)
        self.assertCmd(self.c, [1], "BF.INFO", "bf", "filters")
        self.assertCmd(self.c, [0], "BF.INFO", "bf", "items")
        self.assertCmd(self.c, [2], "BF.INFO", "bf", "expansion")
        self.assertCmd(self.c, [100], "BF.INFO", "bf", "CaPaCiTy")

    def test_case_04_info_arity_and_field(self):
        """Continue 2: `BF.INFO bf capacity size` and `BF.INFO` → `ERR wrong number of
        arguments for 'bf.info' command`; `BF.INFO bf wrong_value` → `Invalid information
        value`."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.001", "100")
        self.assertCmd(self.c, arity("bf.info"), "BF.INFO", "bf", "capacity", "size")
        self.assertCmd(self.c, arity("bf.info"), "BF.INFO")
        self.assertCmd(self.c, INVALID_INFO, "BF.INFO", "bf", "wrong_value")
        for field in ("capacityx", "cap", "item", "", "expansion "):  # whole words only
            self.assertCmd(self.c, INVALID_INFO, "BF.INFO", "bf", field)

    def test_case_05_info_missing_and_wrongtype(self):
        """`BF.INFO nokey` and `BF.INFO nokey wrong_value` → `ERR not found`; `SET s v`;
        `BF.INFO s` → WRONGTYPE; `CF.RESERVE c 100`; `BF.INFO c` → WRONGTYPE."""
        self.assertCmd(self.c, E_NOTFOUND, "BF.INFO", "nokey")
        self.assertCmd(self.c, E_NOTFOUND, "BF.INFO", "nokey", "wrong_value")
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "BF.INFO", "s")
        self.assertCmd(self.c, E_TYPE, "BF.INFO", "s", "wrong_value")  # type before field
        self.assertCmd(self.c, OK, "CF.RESERVE", "c", "100")
        self.assertCmd(self.c, E_TYPE, "BF.INFO", "c")

    def test_case_06_reserve_arity(self):
        """`BF.RESERVE foo` and `BF.RESERVE foo 0.001` → `ERR wrong number of arguments for
        'bf.reserve' command`; `BF.RESERVE f 0.01 100 a b c d` → same; `EXISTS foo f` → `0`."""
        self.assertCmd(self.c, arity("bf.reserve"), "BF.RESERVE", "foo")
        self.assertCmd(self.c, arity("bf.reserve"), "BF.RESERVE", "foo", "0.001")
        self.assertCmd(self.c, arity("bf.reserve"), "BF.RESERVE", "f", "0.01", "100",
                       "a", "b", "c", "d")
        self.assertCmd(self.c, 0, "EXISTS", "foo", "f")

    def test_case_07_bad_numbers(self):
        """`BF.RESERVE foo 0.001 blah` → `ERR bad capacity`; `BF.RESERVE foo blah 1000` →
        `ERR bad error rate`; `BF.RESERVE foo "" 1000` and `BF.RESERVE foo " 0.01" 100` and
        `BF.RESERVE foo 0.01x 100` and `BF.RESERVE foo nan 100` → `ERR bad error rate`."""
        self.assertCmd(self.c, BAD_CAP, "BF.RESERVE", "foo", "0.001", "blah")
        self.assertCmd(self.c, BAD_RATE, "BF.RESERVE", "foo", "blah", "1000")
        for rate in ("", " 0.01", "0.01x", "nan"):
            self.assertCmd(self.c, BAD_RATE, "BF.RESERVE", "foo", rate, "100")
        self.assertCmd(self.c, 0, "EXISTS", "foo")

    def test_case_08_error_rate_range(self):
        """`BF.RESERVE foo 0 0`, `BF.RESERVE foo 0 100`, `BF.RESERVE foo 7.7 1000`,
        `BF.RESERVE bf 1 1000`, `BF.RESERVE foo -0.5 100` → each `ERR-RANGE-E` (error rate is
        checked before capacity)."""
        for key, rate, capacity in (("foo", "0", "0"), ("foo", "0", "100"),
                                    ("foo", "7.7", "1000"), ("bf", "1", "1000"),
                                    ("foo", "-0.5", "100")):
            self.assertCmd(self.c, RANGE_E, "BF.RESERVE", key, rate, capacity)
        self.assertCmd(self.c, 0, "EXISTS", "foo", "bf")

    def test_case_09_capacity_range(self):
        """`BF.RESERVE f 0.01 0`, `… -5`, `… 1073741825` → `ERR-RANGE-C`;
        `BF.RESERVE f 0.01 18446744073709551616` and `BF.RESERVE f 0.01 0100` → `ERR bad
        capacity`; `BF.RESERVE f 0.01 1` → `OK`; `BF.INFO f CAPACITY` → `[1]`."""
        for capacity in ("0", "-5", "1073741825"):
            self.assertCmd(self.c, RANGE_C, "BF.RESERVE", "f", "0.01", capacity)
        for capacity in ("18446744073709551616", "0100"):
            self.assertCmd(self.c, BAD_CAP, "BF.RESERVE", "f", "0.01", capacity)
        self.assertCmd(self.c, 0, "EXISTS", "f")
        self.assertCmd(self.c, OK, "BF.RESERVE", "f", "0.01", "1")
        self.assertCmd(self.c, [1], "BF.INFO", "f", "CAPACITY")

    def test_case_10_float_spellings(self):
        """`BF.RESERVE a 1e-2 100` → `OK`; `BF.RESERVE b .01 100` → `OK`; `BF.RESERVE c 0.010
        100` → `OK`; `BF.INFO a`, `BF.INFO b` and `BF.INFO c` are equal."""
        for key, rate in (("a", "1e-2"), ("b", ".01"), ("c", "0.010")):
            self.assertCmd(self.c, OK, "BF.RESERVE", key, rate, "100")
        info_a = self.c.call("BF.INFO", "a")
        self.assertReply(info_a, bf_info_reply(100, 1, 0, 2))
        self.assertCmd(self.c, info_a, "BF.INFO", "b")
        self.assertCmd(self.c, info_a, "BF.INFO", "c")
        self.assertEqual(self.c.call("BF.DEBUG", "a"), self.c.call("BF.DEBUG", "b"))
        self.assertEqual(self.c.call("BF.DEBUG", "a"), self.c.call("BF.DEBUG", "c"))

    def test_case_11_expansion_errors(self):
        """`BF.RESERVE f 0.01 100 EXPANSION` → `ERR no expansion`; `BF.RESERVE f 0.01 100
        EXPANSION str` → `ERR bad expansion`; `BF.RESERVE f 0.1 1 EXPANSION -1` and
        `… EXPANSION 32769` → `ERR-RANGE-X`; `BF.RESERVE f 0.01 100 EXPANSION 32768` → `OK`."""
        self.assertCmd(self.c, NO_EXPANSION, "BF.RESERVE", "f", "0.01", "100", "EXPANSION")
        self.assertCmd(self.c, BAD_EXP, "BF.RESERVE", "f", "0.01", "100", "EXPANSION", "str")
        self.assertCmd(self.c, RANGE_X, "BF.RESERVE", "f", "0.1", "1", "EXPANSION", "-1")
        self.assertCmd(self.c, RANGE_X, "BF.RESERVE", "f", "0.1", "1", "EXPANSION", "32769")
        self.assertCmd(self.c, 0, "EXISTS", "f")
        self.assertCmd(self.c, OK, "BF.RESERVE", "f", "0.01", "100", "EXPANSION", "32768")
        self.assertCmd(self.c, [32768], "BF.INFO", "f", "EXPANSION")

    def test_case_12_nonscaling_cannot_expand(self):
        """`BF.RESERVE m 0.01 1000 NONSCALING EXPANSION 2` and `BF.RESERVE m 0.01 1000
        EXPANSION 2 NONSCALING` → `Nonscaling filters cannot expand`; `BF.RESERVE m 0.01 1000
        NONSCALING EXPANSION -1` → `Nonscaling filters cannot expand`; `EXISTS m` → `0`."""
        for options in (("NONSCALING", "EXPANSION", "2"), ("EXPANSION", "2", "NONSCALING"),
                        ("NONSCALING", "EXPANSION", "-1")):
            self.assertCmd(self.c, CANNOT_EXPAND, "BF.RESERVE", "m", "0.01", "1000", *options)
        self.assertCmd(self.c, 0, "EXISTS", "m")

    def test_case_13_nonscaling_forms(self):
        """`BF.RESERVE n1 0.01 1000 NONSCALING EXPANSION 0` → `OK`; `BF.RESERVE n2 0.01 1000
        EXPANSION 0` → `OK`; `BF.RESERVE n3 0.01 1000 nonscaling` → `OK`; `BF.INFO n1
        EXPANSION`, `BF.INFO n2 EXPANSION`, `BF.INFO n3 EXPANSION` → `[nil]` each."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "n1", "0.01", "1000", "NONSCALING",
                       "EXPANSION", "0")
        self.assertCmd(self.c, OK, "BF.RESERVE", "n2", "0.01", "1000", "EXPANSION", "0")
        self.assertCmd(self.c, OK, "BF.RESERVE", "n3", "0.01", "1000", "nonscaling")
        for key in ("n1", "n2", "n3"):
            self.assertCmd(self.c, [None], "BF.INFO", key, "EXPANSION")
            self.assertCmd(self.c, bf_info_reply(1000, 1, 0, None), "BF.INFO", key)

    def test_case_14_expansion_kept_and_unknown_word(self):
        """`BF.RESERVE e3 0.01 1000 EXPANSION 3` → `OK`; `BF.INFO e3 EXPANSION` → `[3]`;
        `BF.RESERVE u 0.01 100 FOO` → `OK` (unknown word ignored)."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "e3", "0.01", "1000", "EXPANSION", "3")
        self.assertCmd(self.c, [3], "BF.INFO", "e3", "EXPANSION")
        self.assertCmd(self.c, OK, "BF.RESERVE", "u", "0.01", "100", "FOO")
        self.assertCmd(self.c, bf_info_reply(100, 1, 0, 2), "BF.INFO", "u")

    def test_case_15_arguments_checked_before_key(self):
        """`BF.RESERVE exp4 0.01 4 EXPANSION 4` → `OK`; `BF.RESERVE exp4 0.01 4 EXPANSION 0` →
        `ERR item exists`; `BF.RESERVE exp4 0.01 4 EXPANSION str` → `ERR bad expansion`
        (arguments before key)."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "exp4", "0.01", "4", "EXPANSION", "4")
        self.assertCmd(self.c, E_EXISTS, "BF.RESERVE", "exp4", "0.01", "4", "EXPANSION", "0")
        self.assertCmd(self.c, BAD_EXP, "BF.RESERVE", "exp4", "0.01", "4", "EXPANSION", "str")
        self.assertCmd(self.c, [4], "BF.INFO", "exp4", "EXPANSION")

    def test_case_16_reserve_wrongtype(self):
        """`SET s v`; `BF.RESERVE s 0.01 100` → WRONGTYPE; `CF.RESERVE c 100`; `BF.RESERVE c
        0.01 100` → WRONGTYPE."""
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "BF.RESERVE", "s", "0.01", "100")
        self.assertCmd(self.c, OK, "CF.RESERVE", "c", "100")
        self.assertCmd(self.c, E_TYPE, "BF.RESERVE", "c", "0.01", "100")
        self.assertCmd(self.c, b"v", "GET", "s")

    # -- beyond §10: §1 conventions, §4 order of checks --

    def test_reserve_check_order(self):
        """§4 BF.RESERVE: arity, error rate, capacity, NONSCALING/EXPANSION, then the key: a
        string key gets the argument errors first, WRONGTYPE only for valid arguments."""
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, arity("bf.reserve"), "BF.RESERVE", "s", "0.01")
        self.assertCmd(self.c, RANGE_E, "BF.RESERVE", "s", "2", "x")
        self.assertCmd(self.c, BAD_CAP, "BF.RESERVE", "s", "0.01", "x", "EXPANSION", "y")
        self.assertCmd(self.c, BAD_EXP, "BF.RESERVE", "s", "0.01", "100", "EXPANSION", "y")
        self.assertCmd(self.c, CANNOT_EXPAND, "BF.RESERVE", "s", "0.01", "100", "NONSCALING",
                       "EXPANSION", "99999")
        self.assertCmd(self.c, RANGE_X, "BF.RESERVE", "s", "0.01", "100", "EXPANSION", "99999")
        self.assertCmd(self.c, E_TYPE, "BF.RESERVE", "s", "0.01", "100", "EXPANSION", "0")
        self.assertCmd(self.c, b"v", "GET", "s")

    def test_strict_integers_and_floats(self):
        """§1: integers: optional '-', no '+', no spaces, no leading zeros, 64-bit; floats in
        strtod syntax (`+0.01`, `1e-2`, an integer) over the whole argument."""
        for capacity in ("+100", " 100", "100 ", "", "1e3", "0x10", "100.0",
                         "9223372036854775808"):
            self.assertCmd(self.c, BAD_CAP, "BF.RESERVE", "f", "0.01", capacity)
        self.assertCmd(self.c, RANGE_C, "BF.RESERVE", "f", "0.01", "9223372036854775807")
        self.assertCmd(self.c, RANGE_C, "BF.RESERVE", "f", "0.01", "-9223372036854775808")
        for rate in ("0.01 ", "1e", "--0.01", "0.0.1"):
            self.assertCmd(self.c, BAD_RATE, "BF.RESERVE", "f", rate, "100")
        self.assertCmd(self.c, BAD_EXP, "BF.RESERVE", "f", "0.01", "100", "EXPANSION", "02")
        self.assertCmd(self.c, BAD_EXP, "BF.RESERVE", "f", "0.01", "100", "EXPANSION", "+2")
        self.assertCmd(self.c, 0, "EXISTS", "f")
        for rate in ("1e400", "-1e400", "1e-400"):  # overflow, underflow to zero
            self.assertCmd(self.c, BAD_RATE, "BF.RESERVE", "f", rate, "100")
        self.assertCmd(self.c, OK, "BF.RESERVE", "f", "+0.01", "100")
        self.assertCmd(self.c, OK, "bf.reserve", "g", "0.01", "100", "expansion", "5")
        self.assertCmd(self.c, [5], "Bf.Info", "g", "Expansion")
        self.assertCmd(self.c, OK, "BF.RESERVE", "h", "0.01", "100", "EXPANSION", "5",
                       "EXPANSION")  # the first occurrence counts
        self.assertCmd(self.c, [5], "BF.INFO", "h", "EXPANSION")


# =============================================================================================
# §10 cases 17-27: BF.ADD, BF.MADD, BF.EXISTS, BF.MEXISTS, BF.CARD.

class BFAddExistsTest(BFTest):
    """BF.ADD / BF.MADD / BF.EXISTS / BF.MEXISTS / BF.CARD: cases 17-27."""

    def test_case_17_add_autocreates(self):
        """`BF.ADD bf item1` → `(int) 1`; again → `(int) 0`; `BF.INFO bf` → `[Capacity, 100,
        Size, >0, Number of filters, 1, Number of items inserted, 1, Expansion rate, 2]`
        ([layout] Size 240); `TYPE bf` → `MBbloom--` (ccfBloom- in the module)."""
        self.assertCmd(self.c, 1, "BF.ADD", "bf", "item1")
        self.assertCmd(self.c, 0, "BF.ADD", "bf", "item1")
        self.assertCmd(self.c, bf_info_reply(100, 1, 1, 2), "BF.INFO", "bf")
        self.assertCmd(self.c, Simple(BF_TYPE_NAME), "TYPE", "bf")
        # The defaults: capacity 100 at 1 % (e_0 = 0.005).
        self.assertModel(self.c, "bf", 100, 2, 0.01, added=1)

    def test_case_18_arity(self):
        """`BF.ADD f`, `BF.ADD f a b` → `ERR wrong number of arguments for 'bf.add' command`;
        `BF.MADD f` → `… 'bf.madd' …`; `BF.EXISTS f`, `BF.EXISTS f 1 2` → `… 'bf.exists' …`;
        `BF.MEXISTS f` → `… 'bf.mexists' …`; `bf.Add f` → `… 'bf.add' …`."""
        self.assertCmd(self.c, arity("bf.add"), "BF.ADD", "f")
        self.assertCmd(self.c, arity("bf.add"), "BF.ADD", "f", "a", "b")
        self.assertCmd(self.c, arity("bf.madd"), "BF.MADD", "f")
        self.assertCmd(self.c, arity("bf.exists"), "BF.EXISTS", "f")
        self.assertCmd(self.c, arity("bf.exists"), "BF.EXISTS", "f", "1", "2")
        self.assertCmd(self.c, arity("bf.mexists"), "BF.MEXISTS", "f")
        self.assertCmd(self.c, arity("bf.add"), "bf.Add", "f")
        self.assertCmd(self.c, 0, "EXISTS", "f")

    def test_case_19_string_key(self):
        """`SET s v`; `BF.ADD s a`, `BF.MADD s a b`, `BF.INSERT s ITEMS a`, `BF.CARD s` →
        WRONGTYPE; `BF.EXISTS s a` → `0`; `BF.MEXISTS s a b` → `[0, 0]`."""
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "BF.ADD", "s", "a")
        self.assertCmd(self.c, E_TYPE, "BF.MADD", "s", "a", "b")
        self.assertCmd(self.c, E_TYPE, "BF.INSERT", "s", "ITEMS", "a")
        self.assertCmd(self.c, E_TYPE, "BF.CARD", "s")
        self.assertCmd(self.c, 0, "BF.EXISTS", "s", "a")
        self.assertCmd(self.c, [0, 0], "BF.MEXISTS", "s", "a", "b")
        self.assertCmd(self.c, b"v", "GET", "s")

    def test_case_20_cuckoo_and_bloom_keys(self):
        """`CF.ADD c a` → `1`; `BF.ADD c a` → WRONGTYPE; `BF.EXISTS c a` → `0`; `BF.SCANDUMP c
        0` → WRONGTYPE; `BF.ADD b a` → `1`; `CF.ADD b a` → WRONGTYPE; `CF.EXISTS b a` → `0`."""
        self.assertCmd(self.c, 1, "CF.ADD", "c", "a")
        self.assertCmd(self.c, E_TYPE, "BF.ADD", "c", "a")
        self.assertCmd(self.c, 0, "BF.EXISTS", "c", "a")
        self.assertCmd(self.c, [0], "BF.MEXISTS", "c", "a")
        self.assertCmd(self.c, E_TYPE, "BF.SCANDUMP", "c", "0")
        self.assertCmd(self.c, 1, "BF.ADD", "b", "a")
        self.assertCmd(self.c, E_TYPE, "CF.ADD", "b", "a")
        self.assertCmd(self.c, 0, "CF.EXISTS", "b", "a")
        self.assertCmd(self.c, 1, "CF.EXISTS", "c", "a")
        self.assertCmd(self.c, 1, "BF.EXISTS", "b", "a")

    def test_case_21_madd_exists(self):
        """`BF.RESERVE test 0.05 1000` → `OK`; `BF.MADD test foo bar baz` → `[1, 1, 1]`;
        `BF.EXISTS test foo` → `1`; `BF.EXISTS test nonexist` → `0` [hash]."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "test", "0.05", "1000")
        self.assertCmd(self.c, [1, 1, 1], "BF.MADD", "test", "foo", "bar", "baz")
        self.assertCmd(self.c, 1, "BF.EXISTS", "test", "foo")
        self.assertCmd(self.c, 0, "BF.EXISTS", "test", "nonexist")

    def test_case_22_add_then_madd(self):
        """`BF.ADD test foo` → `1`; `BF.EXISTS test foo` → `1`; `BF.EXISTS test bar` → `0`;
        `BF.MADD test foo bar` → `[0, 1]`; `BF.EXISTS test foo`, `BF.EXISTS test bar` → `1`,
        `1`; `BF.EXISTS test nonexist` → `0` [hash]."""
        self.assertCmd(self.c, 1, "BF.ADD", "test", "foo")
        self.assertCmd(self.c, 1, "BF.EXISTS", "test", "foo")
        self.assertCmd(self.c, 0, "BF.EXISTS", "test", "bar")
        self.assertCmd(self.c, [0, 1], "BF.MADD", "test", "foo", "bar")
        self.assertCmd(self.c, 1, "BF.EXISTS", "test", "foo")
        self.assertCmd(self.c, 1, "BF.EXISTS", "test", "bar")
        self.assertCmd(self.c, 0, "BF.EXISTS", "test", "nonexist")

    def test_case_23_madd_mexists(self):
        """`BF.MADD test foo bar baz` → `[1, 1, 1]`; `BF.MADD test foo new1 bar` → `[0, 1, 0]`;
        `BF.MEXISTS test nonexist` → `[0]`; `BF.MEXISTS test nonexist foo` → `[0, 1]` [hash]."""
        self.assertCmd(self.c, [1, 1, 1], "BF.MADD", "test", "foo", "bar", "baz")
        self.assertCmd(self.c, [0, 1, 0], "BF.MADD", "test", "foo", "new1", "bar")
        self.assertCmd(self.c, [0], "BF.MEXISTS", "test", "nonexist")
        self.assertCmd(self.c, [0, 1], "BF.MEXISTS", "test", "nonexist", "foo")

    def test_case_24_duplicate_in_madd(self):
        """`BF.MADD bf item1 item2 item2` → `[1, 1, 0]`; `BF.CARD bf` → `2`; `BF.INFO bf ITEMS`
        → `[2]` [hash]."""
        self.assertCmd(self.c, [1, 1, 0], "BF.MADD", "bf", "item1", "item2", "item2")
        self.assertCmd(self.c, 2, "BF.CARD", "bf")
        self.assertCmd(self.c, [2], "BF.INFO", "bf", "ITEMS")

    def test_case_25_missing_key_reads(self):
        """`BF.EXISTS myBloom foo` → `0`; `BF.MEXISTS myBloom foo bar baz` → `[0, 0, 0]`;
        `EXISTS myBloom` → `0`; [R3] `BF.EXISTS myBloom foo` → `false`; `BF.MEXISTS myBloom
        foo` → `[false]`."""
        self.assertCmd(self.c, 0, "BF.EXISTS", "myBloom", "foo")
        self.assertCmd(self.c, [0, 0, 0], "BF.MEXISTS", "myBloom", "foo", "bar", "baz")
        self.assertCmd(self.c, 0, "EXISTS", "myBloom")
        self.hello3(self.c)
        self.assertCmd(self.c, False, "BF.EXISTS", "myBloom", "foo")
        self.assertCmd(self.c, [False], "BF.MEXISTS", "myBloom", "foo")
        self.assertCmd(self.c, 0, "EXISTS", "myBloom")

    def test_case_26_empty_item(self):
        """`BF.ADD f ""` → `1`; `BF.EXISTS f ""` → `1`; `BF.ADD f ""` → `0`; `BF.EXISTS f x` →
        `0` [hash]."""
        self.assertCmd(self.c, 1, "BF.ADD", "f", "")
        self.assertCmd(self.c, 1, "BF.EXISTS", "f", "")
        self.assertCmd(self.c, 0, "BF.ADD", "f", "")
        self.assertCmd(self.c, 0, "BF.EXISTS", "f", "x")

    def test_case_27_card(self):
        """`BF.CARD not_exist` → `0`; `BF.RESERVE bf 0.001 100`; `BF.CARD bf` → `0`; `BF.ADD bf
        foo` → `1`; `BF.CARD bf` → `1`; `BF.CARD` → `ERR wrong number of arguments for
        'bf.card' command`; `SET key:string foo`; `BF.CARD key:string` → WRONGTYPE."""
        self.assertCmd(self.c, 0, "BF.CARD", "not_exist")
        self.assertCmd(self.c, 0, "EXISTS", "not_exist")
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.001", "100")
        self.assertCmd(self.c, 0, "BF.CARD", "bf")
        self.assertCmd(self.c, 1, "BF.ADD", "bf", "foo")
        self.assertCmd(self.c, 1, "BF.CARD", "bf")
        self.assertCmd(self.c, arity("bf.card"), "BF.CARD")
        self.assertCmd(self.c, arity("bf.card"), "BF.CARD", "bf", "x")
        self.assertCmd(self.c, OK, "SET", "key:string", "foo")
        self.assertCmd(self.c, E_TYPE, "BF.CARD", "key:string")

    # -- beyond §10 --

    def test_binary_safe_keys_and_items(self):
        """§1: keys and items are binary-safe byte strings."""
        key = b"k\x00\r\n\xff"
        values = [b"\x00", b"\r\n", b"a\x00b", bytes(range(256)), b"x" * 100000,
                  b"a\x00", b"a\x01"]
        for value in values:
            self.assertCmd(self.c, 1, "BF.ADD", key, value)
        self.assertCmd(self.c, [1] * len(values), "BF.MEXISTS", key, *values)
        self.assertCmd(self.c, len(values), "BF.CARD", key)
        self.assertCmd(self.c, Simple(BF_TYPE_NAME), "TYPE", key)

    def test_size_grows_with_the_filter_and_counts_the_bit_arrays(self):
        """[layout] ccf: Size is positive, at least the sub-filters' bytes of BF.DEBUG, and
        grows when a sub-filter is added."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.01", "2")
        before = self.bf_info(self.c, "bf")["Size"]
        self.assertGreater(before, 0)
        _, subs = self.bf_debug(self.c, "bf")
        self.assertGreaterEqual(before, sum(s["bytes"] for s in subs))
        self.assertCmd(self.c, [1, 1, 1, 1, 1], "BF.MADD", "bf", "a", "b", "c", "d", "e")
        after = self.bf_info(self.c, "bf")["Size"]
        _, subs = self.bf_debug(self.c, "bf")
        self.assertEqual(len(subs), 2)
        self.assertGreater(after, before, "Size did not grow with a second sub-filter")
        self.assertGreaterEqual(after, sum(s["bytes"] for s in subs))


# =============================================================================================
# §10 cases 28-33, 63: RESP3 and non-scaling filters.

class BFResp3NonScalingTest(BFTest):
    """RESP3 shapes and full non-scaling filters: cases 28-33 and 63."""

    def test_case_28_resp3(self):
        """[R3] `BF.ADD test item` → `true`; `BF.CARD test` → `(int) 1`; `BF.EXISTS test item`
        → `true`; `BF.INFO test` → `{Capacity: 100, Size: >0, Number of filters: 1, Number of
        items inserted: 1, Expansion rate: 2}` in that order ([layout] Size 240); `BF.INSERT
        test ITEMS item2 item3 item2` → `[true, true, false]`; `BF.MADD test item4 item5
        item2` → `[true, true, false]`; `BF.MEXISTS test item4 item5 item6` → `[true, true,
        false]` [hash]."""
        self.hello3(self.c)
        self.assertCmd(self.c, True, "BF.ADD", "test", "item")
        self.assertCmd(self.c, 1, "BF.CARD", "test")
        self.assertCmd(self.c, True, "BF.EXISTS", "test", "item")
        self.assertCmd(self.c, bf_info_map(100, 1, 1, 2), "BF.INFO", "test")
        self.assertCmd(self.c, [True, True, False], "BF.INSERT", "test", "ITEMS",
                       "item2", "item3", "item2")
        self.assertCmd(self.c, [True, True, False], "BF.MADD", "test", "item4", "item5", "item2")
        self.assertCmd(self.c, [True, True, False], "BF.MEXISTS", "test",
                       "item4", "item5", "item6")
        self.assertCmd(self.c, Map([(Simple("Number of items inserted"), 5)]),
                       "BF.INFO", "test", "ITEMS")

    def test_case_29_resp3_nil_expansion(self):
        """[R3] `BF.RESERVE ns 0.01 100 NONSCALING`; `BF.INFO ns` → map whose `Expansion rate`
        is `nil` (`_`); `BF.INFO ns EXPANSION` → `{Expansion rate: nil}`; `BF.INFO ns
        CAPACITY` → `{Capacity: 100}`."""
        self.hello3(self.c)
        self.assertCmd(self.c, OK, "BF.RESERVE", "ns", "0.01", "100", "NONSCALING")
        self.assertCmd(self.c, bf_info_map(100, 1, 0, None), "BF.INFO", "ns")
        self.assertCmd(self.c, Map([(Simple("Expansion rate"), None)]), "BF.INFO", "ns",
                       "EXPANSION")
        self.assertCmd(self.c, Map([(Simple("Capacity"), 100)]), "BF.INFO", "ns", "CAPACITY")
        size = self.c.call("BF.INFO", "ns", "SIZE")
        self.assertReply(size, Map([(Simple("Size"), POSITIVE_INT)]))
        self.assertCmd(self.c, Map([(Simple("Number of filters"), 1)]), "BF.INFO", "ns",
                       "FILTERS")

    def test_case_30_nonscaling_full(self):
        """`BF.RESERVE bf 0.01 3 NONSCALING`; `BF.ADD bf 0`, `BF.ADD bf 1`, `BF.ADD bf 2` →
        `1`, `1`, `1`; `BF.ADD bf extra` → `ERR non scaling filter is full`; `BF.ADD bf 1` →
        `0`; `BF.CARD bf` → `3` [hash]."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.01", "3", "NONSCALING")
        for value in ("0", "1", "2"):
            self.assertCmd(self.c, 1, "BF.ADD", "bf", value)
        self.assertCmd(self.c, FULL, "BF.ADD", "bf", "extra")
        self.assertCmd(self.c, 0, "BF.ADD", "bf", "1")
        self.assertCmd(self.c, 3, "BF.CARD", "bf")
        self.assertCmd(self.c, bf_info_reply(3, 1, 3, None), "BF.INFO", "bf")

    def test_case_31_insert_into_full(self):
        """`BF.INSERT ne CAPACITY 3 NONSCALING ITEMS a b c` → `[1, 1, 1]`; `BF.INSERT ne ITEMS
        a b c d d` → `[0, 0, 0, (error) ERR non scaling filter is full]` (4 elements);
        `BF.INFO ne` → `[Capacity, 3, Size, >0, Number of filters, 1, Number of items
        inserted, 3, Expansion rate, nil]` ([layout] Size 104) [hash]."""
        self.assertCmd(self.c, [1, 1, 1], "BF.INSERT", "ne", "CAPACITY", "3", "NONSCALING",
                       "ITEMS", "a", "b", "c")
        self.assertCmd(self.c, [0, 0, 0, FULL], "BF.INSERT", "ne", "ITEMS",
                       "a", "b", "c", "d", "d")
        self.assertCmd(self.c, bf_info_reply(3, 1, 3, None), "BF.INFO", "ne")

    def test_case_32_insert_stops_at_full(self):
        """`BF.INSERT n1 CAPACITY 1 NONSCALING ITEMS a b c` → `[1, (error) ERR non scaling
        filter is full]`; `BF.CARD n1` → `1`; `BF.INSERT n2 EXPANSION 0 CAPACITY 2 ITEMS a b c`
        → `[1, 1, (error) ERR non scaling filter is full]`; `BF.INFO n2 EXPANSION` → `[nil]`
        [hash]."""
        self.assertCmd(self.c, [1, FULL], "BF.INSERT", "n1", "CAPACITY", "1", "NONSCALING",
                       "ITEMS", "a", "b", "c")
        self.assertCmd(self.c, 1, "BF.CARD", "n1")
        self.assertCmd(self.c, [1, 1, FULL], "BF.INSERT", "n2", "EXPANSION", "0",
                       "CAPACITY", "2", "ITEMS", "a", "b", "c")
        self.assertCmd(self.c, [None], "BF.INFO", "n2", "EXPANSION")
        self.assertCmd(self.c, 2, "BF.CARD", "n2")

    def test_case_33_resp3_madd_full(self):
        """[R3] `BF.RESERVE g 0.01 2 NONSCALING`; `BF.MADD g a b c` → `[true, true, (error)
        ERR non scaling filter is full]` [hash]."""
        self.hello3(self.c)
        self.assertCmd(self.c, OK, "BF.RESERVE", "g", "0.01", "2", "NONSCALING")
        self.assertCmd(self.c, [True, True, FULL], "BF.MADD", "g", "a", "b", "c")
        self.assertCmd(self.c, [False, False, FULL], "BF.MADD", "g", "a", "b", "c", "d")
        self.assertCmd(self.c, FULL, "BF.ADD", "g", "c")
        self.assertCmd(self.c, False, "BF.ADD", "g", "a")  # present: 0 even when full

    def test_case_63_resp3_then_resp2(self):
        """[R3] `BF.ADD f a` → `true`; again → `false`; `HELLO 2`; `BF.ADD f a` → `0`;
        `BF.EXISTS f a` → `1`; `BF.MEXISTS f a zz` → `[1, 0]` [hash]."""
        self.hello3(self.c)
        self.assertCmd(self.c, True, "BF.ADD", "f", "a")
        self.assertCmd(self.c, False, "BF.ADD", "f", "a")
        reply = self.c.call("HELLO", "2")
        self.assertIs(type(reply), list, f"HELLO 2: {reply!r}")
        self.assertCmd(self.c, 0, "BF.ADD", "f", "a")
        self.assertCmd(self.c, 1, "BF.EXISTS", "f", "a")
        self.assertCmd(self.c, [1, 0], "BF.MEXISTS", "f", "a", "zz")
        self.assertCmd(self.c, bf_info_reply(100, 1, 1, 2), "BF.INFO", "f")

    def test_resp3_scandump_and_errors(self):
        """§6: BF.SCANDUMP is `[int, bulk]` and BF.LOADCHUNK `OK` in RESP3 too; errors are the
        same."""
        self.hello3(self.c)
        self.assertCmd(self.c, OK, "BF.RESERVE", "f", "0.01", "100")
        self.assertReply(self.c.call("BF.SCANDUMP", "f", 0), [1, ANY_BULK])
        self.assertCmd(self.c, [0, b""], "BF.SCANDUMP", "f", "-1")
        self.assertCmd(self.c, E_NOTFOUND, "BF.INFO", "nokey")
        self.assertCmd(self.c, 0, "BF.CARD", "nokey")


# =============================================================================================
# §10 cases 34-39, 47, 62: growth, the §2 model, BF.DEBUG.

class BFGrowthDebugTest(BFTest):
    """Scaling, the §2 model and BF.DEBUG: cases 34-39, 47 and 62."""

    def test_case_34_growth(self):
        """`BF.RESERVE bf 0.01 2`; `BF.MADD bf a b c d e` → `[1, 1, 1, 1, 1]`; `BF.INFO bf` →
        Capacity 6, Number of filters 2, Number of items inserted 5, Expansion rate 2
        ([layout] Size 176) [hash]."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.01", "2")
        self.assertCmd(self.c, [1, 1, 1, 1, 1], "BF.MADD", "bf", "a", "b", "c", "d", "e")
        self.assertCmd(self.c, bf_info_reply(6, 2, 5, 2), "BF.INFO", "bf")

    def test_case_35_debug_after_growth(self):
        """Continue 34 (optional BF.DEBUG): `BF.DEBUG bf` → `["size:5", "bytes:8 bits:64
        hashes:8 hashwidth:64 capacity:2 size:2 ratio:0.005", "bytes:8 bits:64 hashes:9
        hashwidth:64 capacity:4 size:3 ratio:0.0025"]` [layout][hash] — ccf: its own bytes
        (whole 64-bit words, bits = 8 * bytes) and hashes (>= 1)."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.01", "2")
        self.assertCmd(self.c, [1, 1, 1, 1, 1], "BF.MADD", "bf", "a", "b", "c", "d", "e")
        total, subs = self.bf_debug(self.c, "bf")
        self.assertEqual(total, 5)
        self.assertEqual([(s["capacity"], s["size"], s["ratio"]) for s in subs],
                         [(2, 2, "0.005"), (4, 3, "0.0025")])

    def test_case_36_expansion_1(self):
        """`BF.RESERVE bf 0.01 1 EXPANSION 1`; `BF.MADD bf a b c d` → `[1, 1, 1, 1]`; `BF.INFO
        bf` → Capacity 4, filters 4, items 4, Expansion rate 1 [hash]."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.01", "1", "EXPANSION", "1")
        self.assertCmd(self.c, [1, 1, 1, 1], "BF.MADD", "bf", "a", "b", "c", "d")
        self.assertCmd(self.c, bf_info_reply(4, 4, 4, 1), "BF.INFO", "bf")
        self.assertModel(self.c, "bf", 1, 1, 0.01, added=4)

    def test_case_37_expansions_1_2_4(self):
        """`BF.RESERVE exp1 0.01 4 EXPANSION 1`, `BF.RESERVE exp2 0.01 4 EXPANSION 2`,
        `BF.RESERVE exp4 0.01 4 EXPANSION 4`; `BF.ADD` each with the strings `0` … `99`; every
        `BF.EXISTS` of those → `1`; `BF.INFO` `Number of filters` → 23, 5, 4 [hash] (with
        another hash check the §2 invariant instead: filters = fewest sub-filters whose
        capacities cover `Number of items inserted`; for exp1 that is ⌈items ÷ 4⌉)."""
        values = [str(i).encode() for i in range(100)]
        for key, expansion in (("exp1", 1), ("exp2", 2), ("exp4", 4)):
            self.assertCmd(self.c, OK, "BF.RESERVE", key, "0.01", "4", "EXPANSION", expansion)
            ones = self.add_all(self.c, key, values)
            self.assertEqual(self.missing(self.c, key, values), [], key)
            info = self.bf_info(self.c, key)
            self.assertEqual(info["Number of items inserted"], ones, f"{key}: {info}")
            self.assertGreaterEqual(ones, 95, f"{key}: {100 - ones} false positives of 100")
            count, covered = fewest_filters(ones, 4, expansion)
            self.assertEqual((info["Number of filters"], info["Capacity"]), (count, covered),
                             f"{key}: {info}")
            if expansion == 1:
                self.assertEqual(count, -(-ones // 4))

    def test_case_38_debug_after_100_adds(self):
        """`BF.RESERVE bf 0.01 10`; `BF.ADD bf <i>` for i = 0 … 99 (decimal strings); `BF.DEBUG
        bf` → `["size:99", "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10
        ratio:0.005", "bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:20
        ratio:0.0025", "bytes:72 bits:576 hashes:10 hashwidth:64 capacity:40 size:40
        ratio:0.00125", "bytes:160 bits:1280 hashes:11 hashwidth:64 capacity:80 size:29
        ratio:0.000625"]`; `BF.INFO bf CAPACITY` → `[150]` [hash][layout] — ccf: the §2 model
        (capacities 10, 20, 40, 80 as far as the items need, ratios halved, all but the
        newest full)."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.01", "10")
        values = [str(i).encode() for i in range(100)]
        ones = self.add_all(self.c, "bf", values)
        self.assertEqual(self.missing(self.c, "bf", values), [])
        info, subs = self.assertModel(self.c, "bf", 10, 2, 0.01, added=100)
        self.assertEqual(info["Number of items inserted"], ones)
        self.assertGreaterEqual(ones, 95)
        self.assertEqual(len(subs), 4)  # 70 < items <= 150
        self.assertCmd(self.c, [150], "BF.INFO", "bf", "CAPACITY")

    def test_case_39_debug_big_first_filter(self):
        """`BF.INSERT mf ERROR 0.001 CAPACITY 50000 EXPANSION 2 ITEMS foo` → `[1]`; `BF.DEBUG
        mf` → `["size:1", "bytes:98880 bits:791040 hashes:11 hashwidth:64 capacity:50000
        size:1 ratio:0.0005"]`; `BF.INSERT mf ERROR 0.1 ITEMS foo bar baz` → `[0, 1, 1]`;
        `BF.DEBUG mf` → same sub-filter line with `size:3`, first element `size:3`
        [layout][hash] — ccf: its own bytes and hashes, the same before and after."""
        self.assertCmd(self.c, [1], "BF.INSERT", "mf", "ERROR", "0.001", "CAPACITY", "50000",
                       "EXPANSION", "2", "ITEMS", "foo")
        total, subs = self.bf_debug(self.c, "mf")
        self.assertEqual(total, 1)
        self.assertEqual([(s["capacity"], s["size"], s["ratio"]) for s in subs],
                         [(50000, 1, "0.0005")])
        self.assertCmd(self.c, [0, 1, 1], "BF.INSERT", "mf", "ERROR", "0.1", "ITEMS",
                       "foo", "bar", "baz")
        total, after = self.bf_debug(self.c, "mf")
        self.assertEqual(total, 3)
        self.assertEqual(after, [dict(subs[0], size=3)])
        self.assertModel(self.c, "mf", 50000, 2, 0.001, added=3)

    def test_case_47_error_rate_cap(self):
        """(BF.DEBUG) `BF.INSERT f ERROR 0.5 ITEMS a` → `[1]`; `BF.DEBUG f` second element
        contains `capacity:100` and `ratio:0.125` (0.5 capped to 0.25, halved); `BF.RESERVE h
        0.9999999999999999 100 NONSCALING` → `OK`; `BF.ADD h 1` → `1`; `BF.DEBUG h` second
        element contains `ratio:0.25`. ([layout]: hashes 4 and 3.)"""
        self.assertCmd(self.c, [1], "BF.INSERT", "f", "ERROR", "0.5", "ITEMS", "a")
        _, subs = self.bf_debug(self.c, "f")
        self.assertEqual((subs[0]["capacity"], subs[0]["ratio"]), (100, "0.125"))
        self.assertCmd(self.c, OK, "BF.RESERVE", "h", "0.9999999999999999", "100",
                       "NONSCALING")
        self.assertCmd(self.c, 1, "BF.ADD", "h", "1")
        _, subs = self.bf_debug(self.c, "h")
        self.assertEqual((subs[0]["capacity"], subs[0]["size"], subs[0]["ratio"]),
                         (100, 1, "0.25"))

    def test_case_62_debug(self):
        """`BF.DEBUG nokey` → `ERR not found`; `BF.RESERVE bf 0.05 1000`; `BF.DEBUG bf noexist`
        → `ERR wrong number of arguments for 'bf.debug' command`; `BF.DEBUG bf` → `["size:0",
        "bytes:960 bits:7680 hashes:6 hashwidth:64 capacity:1000 size:0 ratio:0.025"]`
        [layout] — ccf: its own bytes and hashes."""
        self.assertCmd(self.c, E_NOTFOUND, "BF.DEBUG", "nokey")
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.05", "1000")
        self.assertCmd(self.c, arity("bf.debug"), "BF.DEBUG", "bf", "noexist")
        self.assertCmd(self.c, arity("bf.debug"), "BF.DEBUG")
        total, subs = self.bf_debug(self.c, "bf")
        self.assertEqual(total, 0)
        self.assertEqual([(s["capacity"], s["size"], s["ratio"]) for s in subs],
                         [(1000, 0, "0.025")])
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "BF.DEBUG", "s")

    # -- beyond §10: the model at scale --

    def grow_and_check(self, key, capacity, expansion, rate, count):
        self.assertCmd(self.c, OK, "BF.RESERVE", key, rate, capacity, "EXPANSION", expansion)
        values = items_of(f"{key}-", count)
        ones = self.add_all(self.c, key, values, command="BF.MADD")
        self.assertEqual(self.missing(self.c, key, values), [], key)
        info, subs = self.assertModel(self.c, key, capacity, expansion, float(rate),
                                      added=count)
        self.assertEqual(info["Number of items inserted"], ones)
        self.assertGreater(len(subs), 2, f"{key} did not grow")
        return subs

    def test_ratio_keeps_halving_in_long_chains(self):
        """§2 "e_(i+1) = e_i / 2", also for the 24th sub-filter of an EXPANSION 1 chain
        (`BF.RESERVE x1 0.001 50 EXPANSION 1`, 1,200 items): BF.DEBUG's ratio of sub-filter i
        is 0.0005 / 2^i (9.53674e-10 for i = 19); and a rate asked for directly is the rate
        the filter is built for (`BF.RESERVE ns 1e-12 1000 NONSCALING` → ratio 1e-12)."""
        with self.subTest("EXPANSION 1 chain"):
            subs = self.grow_and_check("x1", 50, 1, "0.001", 1200)
            self.assertEqual(len(subs), 24)
        with self.subTest("1e-12"):
            self.assertCmd(self.c, OK, "BF.RESERVE", "ns", "1e-12", "1000", "NONSCALING")
            self.assertModel(self.c, "ns", 1000, 2, 1e-12, scaling=False, added=0)

    def test_long_chain_of_sub_filters(self):
        """§2 "no limit on the number of sub-filters": `BF.RESERVE g 0.01 1 EXPANSION 1` and
        1,300 items make 1,300 sub-filters (e_i underflows a double past about the 1,075th);
        each item found, counters and capacities as the model says (ratios are checked by
        test_ratio_keeps_halving_in_long_chains), and the dump restores it."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "g", "0.01", "1", "EXPANSION", "1")
        values = items_of("chain-", 1300)
        ones = self.add_all(self.c, "g", values, batch=100)
        self.assertEqual(self.missing(self.c, "g", values), [])
        info, subs = self.assertModel(self.c, "g", 1, 1, 0.01, added=1300, check_ratios=False)
        self.assertEqual((info["Number of items inserted"], len(subs)), (ones, ones))
        self.assertGreaterEqual(ones, 1290)
        pairs = self.dump(self.c, "g")
        self.assertEqual(len(pairs), 1 + ones)
        self.load(self.c, "copy", pairs)
        self.assertCmd(self.c, self.c.call("BF.INFO", "g"), "BF.INFO", "copy")
        self.assertEqual(self.missing(self.c, "copy", values), [])
        self.assertCmd(self.c, 1, "BF.ADD", "copy", "one more")

    def test_model_of_grown_filters(self):
        """§2 on filters grown well past their first sub-filter: expansion 3 stays 3, a
        non-scaling filter keeps one sub-filter, error rates above 0.25 are capped first;
        every added item found."""
        for key, capacity, expansion, rate, count in (("x3", 7, 3, "0.02", 2000),
                                                      ("x1", 50, 1, "0.001", 500),
                                                      ("cap", 30, 2, "0.4", 1500),
                                                      ("big", 1000, 5, "0.0001", 9000)):
            self.grow_and_check(key, capacity, expansion, rate, count)
        self.assertCmd(self.c, OK, "BF.RESERVE", "ns", "0.01", "5000", "NONSCALING")
        values = items_of("ns-", 5000)
        ones = self.add_all(self.c, "ns", values, command="BF.MADD")
        self.assertModel(self.c, "ns", 5000, 2, 0.01, scaling=False, added=5000)
        self.assertEqual(self.missing(self.c, "ns", values), [])
        self.assertGreaterEqual(ones, 4900)


class BFFalsePositiveTest(BFTest):
    """§7: the false-positive rate stays within the requested rate (RedisBloom's test adds
    1024 items and checks non-members for 0.1 … 0.0001; here 102,400 non-members each, so
    that a rate of 0.0001 is measured on more than one expected false positive)."""

    NON_MEMBERS = 102400

    def measure(self, key, rate, *options, added=1024):
        self.assertCmd(self.c, OK, "BF.RESERVE", key, rate, "1024", *options)
        self.add_all(self.c, key, items_of(f"{key}-in-", added), command="BF.MADD", batch=1024)
        return self.false_positives(self.c, key, items_of(f"{key}-out-", self.NON_MEMBERS))

    def test_scaling_filters_stay_within_the_rate(self):
        """Scaling filters (sub-filter 0 at rate/2), 1024 items: false positives among
        102,400 non-members ≤ rate × 102,400."""
        for rate in ("0.1", "0.01", "0.001", "0.0001"):
            fp = self.measure(f"s{rate}", rate)
            self.assertLessEqual(fp, float(rate) * self.NON_MEMBERS, f"rate {rate}: {fp}")

    def test_nonscaling_filters_meet_their_rate_at_capacity(self):
        """§2 "each sub-filter meets its error e_i at capacity c_i": NONSCALING, filled to
        capacity: false positives ≤ 1.25 × rate × N plus four standard deviations."""
        for rate in ("0.1", "0.01", "0.001", "0.0001"):
            fp = self.measure(f"n{rate}", rate, "NONSCALING")
            expected = float(rate) * self.NON_MEMBERS
            self.assertLessEqual(fp, 1.25 * expected + 4 * math.sqrt(expected) + 2,
                                 f"rate {rate}: {fp} false positives, {expected:.0f} expected")

    def test_grown_filter_stays_within_the_rate(self):
        """A scaling filter grown to 7 sub-filters (capacity 100, 10,000 items): the compound
        rate stays below the requested 1 %."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "g", "0.01", "100")
        self.add_all(self.c, "g", items_of("g-in-", 10000), command="BF.MADD", batch=1000)
        self.assertGreaterEqual(self.bf_info(self.c, "g")["Number of filters"], 7)
        fp = self.false_positives(self.c, "g", items_of("g-out-", self.NON_MEMBERS))
        self.assertLessEqual(fp, 0.01 * self.NON_MEMBERS, f"{fp} false positives")


# =============================================================================================
# §10 cases 40-46: BF.INSERT.

class BFInsertTest(BFTest):
    """BF.INSERT: cases 40-46."""

    def test_case_40_insert_arity_and_nocreate(self):
        """`BF.INSERT missingFilter NOCREATE ITEMS foo bar` → `ERR not found`; `BF.INSERT
        missingFilter DONTEXIST NOCREATE` → `Unknown argument received`; `BF.INSERT
        missingFilter`, `BF.INSERT missingFilter NOCREATE ITEMS`, `BF.INSERT missingFilter
        NOCREATE CAPACITY`, `BF.INSERT missingFilter ERROR`, `BF.INSERT missingFilter CAPACITY
        100 ITEMS` → `ERR wrong number of arguments for 'bf.insert' command`; `EXISTS
        missingFilter` → `0`."""
        key = "missingFilter"
        self.assertCmd(self.c, E_NOTFOUND, "BF.INSERT", key, "NOCREATE", "ITEMS", "foo", "bar")
        self.assertCmd(self.c, UNKNOWN_ARGUMENT, "BF.INSERT", key, "DONTEXIST", "NOCREATE")
        for args in ((), ("NOCREATE", "ITEMS"), ("NOCREATE", "CAPACITY"), ("ERROR",),
                     ("CAPACITY", "100", "ITEMS")):
            self.assertCmd(self.c, arity("bf.insert"), "BF.INSERT", key, *args)
        self.assertCmd(self.c, 0, "EXISTS", key)

    def test_case_41_insert_option_errors(self):
        """`BF.INSERT f CAPACITY 0.3` and `BF.INSERT f CAPACITY 0 ITEMS a` and `BF.INSERT f
        CAPACITY 1073741825 ITEMS a` → `Bad capacity`; `BF.INSERT f ERROR big`, `BF.INSERT f
        ERROR 0 ITEMS a`, `BF.INSERT f ERROR 1 ITEMS a` → `Bad error rate`; `BF.INSERT f
        EXPANSION -1 ITEMS foo`, `BF.INSERT f EXPANSION big`, `BF.INSERT f EXPANSION 32769
        ITEMS a` → `Bad expansion`; `EXISTS f` → `0`."""
        for args in (("CAPACITY", "0.3"), ("CAPACITY", "0", "ITEMS", "a"),
                     ("CAPACITY", "1073741825", "ITEMS", "a")):
            self.assertCmd(self.c, INSERT_BAD_CAPACITY, "BF.INSERT", "f", *args)
        for args in (("ERROR", "big"), ("ERROR", "0", "ITEMS", "a"), ("ERROR", "1", "ITEMS", "a")):
            self.assertCmd(self.c, INSERT_BAD_RATE, "BF.INSERT", "f", *args)
        for args in (("EXPANSION", "-1", "ITEMS", "foo"), ("EXPANSION", "big"),
                     ("EXPANSION", "32769", "ITEMS", "a")):
            self.assertCmd(self.c, INSERT_BAD_EXPANSION, "BF.INSERT", "f", *args)
        self.assertCmd(self.c, 0, "EXISTS", "f")

    def test_case_42_options_validated_on_existing_key(self):
        """`BF.ADD f z`; `BF.INSERT f CAPACITY 0 ITEMS a` → `Bad capacity` (options validated
        even when the key exists); `BF.INSERT f NOCREATE ITEMS a` → `[1]`; `BF.INSERT g
        CAPACITY 1000 NOCREATE ITEMS a` → `ERR not found`."""
        self.assertCmd(self.c, 1, "BF.ADD", "f", "z")
        self.assertCmd(self.c, INSERT_BAD_CAPACITY, "BF.INSERT", "f", "CAPACITY", "0",
                       "ITEMS", "a")
        self.assertCmd(self.c, 1, "BF.CARD", "f")
        self.assertCmd(self.c, [1], "BF.INSERT", "f", "NOCREATE", "ITEMS", "a")
        self.assertCmd(self.c, E_NOTFOUND, "BF.INSERT", "g", "CAPACITY", "1000", "NOCREATE",
                       "ITEMS", "a")
        self.assertCmd(self.c, 0, "EXISTS", "g")

    def test_case_43_keywords_after_items(self):
        """`BF.INSERT f ITEMS NOCREATE CAPACITY` → `[1, 1]`; `BF.EXISTS f NOCREATE` → `1`
        [hash]."""
        self.assertCmd(self.c, [1, 1], "BF.INSERT", "f", "ITEMS", "NOCREATE", "CAPACITY")
        self.assertCmd(self.c, 1, "BF.EXISTS", "f", "NOCREATE")
        self.assertCmd(self.c, 1, "BF.EXISTS", "f", "CAPACITY")
        self.assertCmd(self.c, 2, "BF.CARD", "f")

    def test_case_44_insert_defaults(self):
        """`BF.INSERT filter ITEMS foo bar baz` → `[1, 1, 1]`; `BF.INFO filter` → Capacity 100,
        filters 1, items 3, Expansion rate 2 [hash]."""
        self.assertCmd(self.c, [1, 1, 1], "BF.INSERT", "filter", "ITEMS", "foo", "bar", "baz")
        self.assertCmd(self.c, bf_info_reply(100, 1, 3, 2), "BF.INFO", "filter")

    def test_case_45_insert_options_then_ignored(self):
        """`BF.INSERT f CAPACITY 10000 ERROR 0.001 EXPANSION 4 ITEMS hello` → `[1]`; `BF.INFO f`
        → Capacity 10000, filters 1, items 1, Expansion rate 4 ([layout] Size 19872);
        `BF.INSERT f CAPACITY 5 NONSCALING ITEMS x` → `[1]` [hash]; `BF.INFO f CAPACITY` →
        `[10000]`; `BF.INFO f EXPANSION` → `[4]`."""
        self.assertCmd(self.c, [1], "BF.INSERT", "f", "CAPACITY", "10000", "ERROR", "0.001",
                       "EXPANSION", "4", "ITEMS", "hello")
        self.assertCmd(self.c, bf_info_reply(10000, 1, 1, 4), "BF.INFO", "f")
        self.assertCmd(self.c, [1], "BF.INSERT", "f", "CAPACITY", "5", "NONSCALING",
                       "ITEMS", "x")
        self.assertCmd(self.c, [10000], "BF.INFO", "f", "CAPACITY")
        self.assertCmd(self.c, [4], "BF.INFO", "f", "EXPANSION")
        self.assertModel(self.c, "f", 10000, 4, 0.001, added=2)

    def test_case_46_nonscaling_wins_in_insert(self):
        """`BF.INSERT f NONSCALING EXPANSION 4 ITEMS a` → `[1]`; `BF.INFO f EXPANSION` →
        `[nil]`."""
        self.assertCmd(self.c, [1], "BF.INSERT", "f", "NONSCALING", "EXPANSION", "4",
                       "ITEMS", "a")
        self.assertCmd(self.c, [None], "BF.INFO", "f", "EXPANSION")

    # -- beyond §10 --

    def test_insert_check_order(self):
        """§4 BF.INSERT: option errors, then a missing ITEMS, then the key (type, NOCREATE)."""
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, INSERT_BAD_CAPACITY, "BF.INSERT", "s", "CAPACITY", "0",
                       "ITEMS", "a")
        self.assertCmd(self.c, UNKNOWN_ARGUMENT, "BF.INSERT", "s", "NOCREATE", "FOO")
        self.assertCmd(self.c, arity("bf.insert"), "BF.INSERT", "s", "CAPACITY", "10",
                       "NOCREATE")
        self.assertCmd(self.c, E_TYPE, "BF.INSERT", "s", "NOCREATE", "ITEMS", "a")
        self.assertCmd(self.c, INSERT_BAD_CAPACITY, "BF.INSERT", "k", "NOCREATE", "CAPACITY",
                       "0", "ITEMS", "a")
        self.assertCmd(self.c, INSERT_BAD_RATE, "BF.INSERT", "k", "NOCREATE", "ERROR", "1e400",
                       "ITEMS", "a")
        self.assertCmd(self.c, E_NOTFOUND, "BF.INSERT", "k", "NOCREATE", "EXPANSION", "0",
                       "ITEMS", "a")
        self.assertCmd(self.c, 1, "CF.ADD", "c", "a")
        self.assertCmd(self.c, E_TYPE, "BF.INSERT", "c", "ITEMS", "a")
        self.assertCmd(self.c, E_TYPE, "BF.MADD", "c", "a")
        self.assertCmd(self.c, E_TYPE, "BF.CARD", "c")
        self.assertCmd(self.c, 2, "DBSIZE")

    def test_insert_option_details(self):
        """§4 BF.INSERT: keywords case-insensitive, a repeated option overwrites, NOCREATE
        with CAPACITY/ERROR accepted on an existing key, unknown word after a valid option."""
        self.assertCmd(self.c, [1], "bf.insert", "f", "capacity", "50", "Capacity", "70",
                       "error", "0.02", "items", "a")
        self.assertModel(self.c, "f", 70, 2, 0.02, added=1)
        self.assertCmd(self.c, [1], "BF.INSERT", "f", "NOCREATE", "CAPACITY", "5", "ERROR",
                       "0.3", "ITEMS", "b")
        self.assertCmd(self.c, UNKNOWN_ARGUMENT, "BF.INSERT", "g", "CAPACITY", "5", "FOO",
                       "ITEMS", "a")
        self.assertCmd(self.c, [1, 1], "BF.INSERT", "e0", "EXPANSION", "0", "ITEMS", "a", "b")
        self.assertModel(self.c, "e0", 100, 2, 0.01, scaling=False, added=2)
        self.assertCmd(self.c, 0, "EXISTS", "g")


# =============================================================================================
# §10 cases 48-59: BF.SCANDUMP / BF.LOADCHUNK.

class BFScanDumpLoadChunkTest(BFTest):
    """BF.SCANDUMP / BF.LOADCHUNK: cases 48-59. ccf's header and chunks are its own
    (checksummed, versioned header; one chunk per sub-filter, as long as its bit array)."""

    def test_case_48_dump_and_restore(self):
        """`BF.RESERVE bf 0.1 10`; `BF.ADD bf item1` → `1`; `BF.SCANDUMP bf 0` → `[1, H]`;
        `BF.SCANDUMP bf 1` → `[I, D]` with I > 1; `BF.SCANDUMP bf I` → `[0, ""]`; `DEL bf` →
        `1`; `BF.LOADCHUNK bf 1 H` → `OK`; `BF.LOADCHUNK bf I D` → `OK`; `BF.EXISTS bf item1`
        → `1`. ([layout]: H = the 73 bytes of §4, I = 9, D = `\\x01\\x08\\x00\\x80\\x00\\x04\\x20
        \\x00` — ccf: I = 1 + the bytes of sub-filter 0.)"""
        header, following, data = self.case_48_setup()
        info = self.c.call("BF.INFO", "bf")
        self.assertCmd(self.c, 1, "DEL", "bf")
        self.assertCmd(self.c, OK, "BF.LOADCHUNK", "bf", "1", header)
        self.assertCmd(self.c, OK, "BF.LOADCHUNK", "bf", following, data)
        self.assertCmd(self.c, 1, "BF.EXISTS", "bf", "item1")
        self.assertCmd(self.c, info, "BF.INFO", "bf")
        self.assertCmd(self.c, [1, header], "BF.SCANDUMP", "bf", "0")
        self.assertCmd(self.c, [following, data], "BF.SCANDUMP", "bf", "1")

    def test_case_49_dump_empty_filter(self):
        """`BF.RESERVE f 0.01 100`; `BF.SCANDUMP f 0` → `[1, non-empty bulk]`; following the
        iterators ends with `[0, ""]` ([layout]: `SCANDUMP f 1` → `[145, 144 zero bytes]`,
        `SCANDUMP f 145` → `[0, ""]`); `BF.SCANDUMP f -1` and `BF.SCANDUMP f 99999999` →
        `[0, ""]`."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "f", "0.01", "100")
        pairs = self.dump(self.c, "f")
        self.assertEqual(len(pairs), 2, "header and one sub-filter")
        self.assertChunksMatchDebug(self.c, "f", pairs)
        self.assertEqual(pairs[1][1], bytes(len(pairs[1][1])), "an empty filter's bits")
        self.assertCmd(self.c, [0, b""], "BF.SCANDUMP", "f", "-1")
        self.assertCmd(self.c, [0, b""], "BF.SCANDUMP", "f", "99999999")
        self.assertCmd(self.c, [0, b""], "BF.SCANDUMP", "f", "-9223372036854775808")
        self.assertCmd(self.c, [0, b""], "BF.SCANDUMP", "f", "9223372036854775807")

    def test_case_50_scandump_errors(self):
        """`BF.SCANDUMP bf` → `ERR wrong number of arguments for 'bf.scandump' command`;
        `BF.SCANDUMP noexist 0` and `BF.SCANDUMP noexist str` → `ERR not found`; `BF.RESERVE bf
        0.01 100`; `BF.SCANDUMP bf str` → `Second argument must be numeric`; `SET s v`;
        `BF.SCANDUMP s 0` → WRONGTYPE."""
        self.assertCmd(self.c, arity("bf.scandump"), "BF.SCANDUMP", "bf")
        self.assertCmd(self.c, arity("bf.scandump"), "BF.SCANDUMP", "bf", "0", "1")
        self.assertCmd(self.c, E_NOTFOUND, "BF.SCANDUMP", "noexist", "0")
        self.assertCmd(self.c, E_NOTFOUND, "BF.SCANDUMP", "noexist", "str")
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.01", "100")
        self.assertCmd(self.c, SCANDUMP_NOT_NUMERIC, "BF.SCANDUMP", "bf", "str")
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "BF.SCANDUMP", "s", "0")
        self.assertCmd(self.c, E_TYPE, "BF.SCANDUMP", "s", "str")

    def grown_filter(self, key, count, *options):
        self.assertCmd(self.c, OK, "BF.RESERVE", key, "0.01", "62", *options)
        values = [str(i).encode() for i in range(count)]
        self.add_all(self.c, key, values)
        self.assertEqual(self.missing(self.c, key, values), [])
        return values

    def test_case_51_round_trip(self):
        """Round trip: `BF.RESERVE bf 0.01 62`; `BF.ADD bf <i>` for i = 0 … 499; every item
        `BF.EXISTS` → `1`; dump all pairs; `DEL bf`; `BF.LOADCHUNK bf <it> <data>` for each
        pair → `OK` each; every item `BF.EXISTS` → `1`; `BF.INFO bf` equals the value before
        the DEL. ([layout][hash]: 4 sub-filters, iterators 1, 89, 289, 721, 1673 — ccf: one
        chunk per sub-filter, iterators 1 + the running sum of BF.DEBUG's bytes.)"""
        values = self.grown_filter("bf", 500)
        info, subs = self.assertModel(self.c, "bf", 62, 2, 0.01, added=500)
        debug = self.c.call("BF.DEBUG", "bf")
        pairs = self.dump(self.c, "bf")
        self.assertEqual(len(pairs), 1 + len(subs))
        self.assertChunksMatchDebug(self.c, "bf", pairs)
        iterators, at = [], 1
        for sub in subs:
            at += sub["bytes"]
            iterators.append(at)
        self.assertEqual([it for it, _ in pairs], [1] + iterators)
        self.assertCmd(self.c, 1, "DEL", "bf")
        self.load(self.c, "bf", pairs)
        self.assertEqual(self.missing(self.c, "bf", values), [])
        self.assertCmd(self.c, bf_info_reply(*(info[n] for n in (
            "Capacity", "Number of filters", "Number of items inserted", "Expansion rate")),
            size=info["Size"]), "BF.INFO", "bf")
        self.assertCmd(self.c, debug, "BF.DEBUG", "bf")
        self.assertEqual(self.dump(self.c, "bf"), pairs, "a second dump differs")

    def test_case_52_round_trip_to_new_key(self):
        """Round trip to a new key with expansion: `BF.RESERVE bf 0.01 62 EXPANSION 2`; add
        500 items; dump; load every pair into `bf2` (bf untouched) → `OK` each; `BF.INFO bf2`
        equals `BF.INFO bf`; all 500 items exist in `bf2`."""
        values = self.grown_filter("bf", 500, "EXPANSION", "2")
        info = self.c.call("BF.INFO", "bf")
        pairs = self.dump(self.c, "bf")
        self.load(self.c, "bf2", pairs)
        self.assertCmd(self.c, info, "BF.INFO", "bf2")
        self.assertCmd(self.c, info, "BF.INFO", "bf")
        self.assertEqual(self.missing(self.c, "bf2", values), [])
        self.assertEqual(self.c.call("BF.DEBUG", "bf2"), self.c.call("BF.DEBUG", "bf"))
        # The copy is a filter of its own: it grows on, the original does not change.
        more = items_of("more-", 300)
        self.add_all(self.c, "bf2", more)
        self.assertCmd(self.c, info, "BF.INFO", "bf")
        self.assertEqual(self.missing(self.c, "bf2", values + more), [])

    def test_case_53_round_trip_empty(self):
        """Round trip of a filter with no items: `BF.RESERVE e 0.01 100 NONSCALING`; dump;
        `DEL e`; load → `OK`s; `BF.INFO e` → Capacity 100, filters 1, items 0, Expansion rate
        nil."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "e", "0.01", "100", "NONSCALING")
        pairs = self.dump(self.c, "e")
        self.assertCmd(self.c, 1, "DEL", "e")
        self.load(self.c, "e", pairs)
        self.assertCmd(self.c, bf_info_reply(100, 1, 0, None), "BF.INFO", "e")
        self.assertModel(self.c, "e", 100, 2, 0.01, scaling=False, added=0)

    def test_case_54_loadchunk_errors(self):
        """`BF.LOADCHUNK bf` and `BF.LOADCHUNK bf str` → `ERR wrong number of arguments for
        'bf.loadchunk' command`; `BF.LOADCHUNK bf str data` → `ERR Second argument must be
        numeric`; `BF.LOADCHUNK nokey 5 abc` → `ERR not found`; `BF.LOADCHUNK nokey 1 short` →
        `ERR received bad data`; `EXISTS nokey` → `0`; `SET s v`; `BF.LOADCHUNK s 1 x` and
        `BF.LOADCHUNK s 5 x` → WRONGTYPE."""
        self.assertCmd(self.c, arity("bf.loadchunk"), "BF.LOADCHUNK", "bf")
        self.assertCmd(self.c, arity("bf.loadchunk"), "BF.LOADCHUNK", "bf", "str")
        self.assertCmd(self.c, arity("bf.loadchunk"), "BF.LOADCHUNK", "bf", "1", "a", "b")
        self.assertCmd(self.c, LOADCHUNK_NOT_NUMERIC, "BF.LOADCHUNK", "bf", "str", "data")
        self.assertCmd(self.c, E_NOTFOUND, "BF.LOADCHUNK", "nokey", "5", "abc")
        self.assertCmd(self.c, BAD_DATA, "BF.LOADCHUNK", "nokey", "1", "short")
        self.assertCmd(self.c, 0, "EXISTS", "nokey", "bf")
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "BF.LOADCHUNK", "s", "1", "x")
        self.assertCmd(self.c, E_TYPE, "BF.LOADCHUNK", "s", "5", "x")
        self.assertCmd(self.c, b"v", "GET", "s")

    def test_case_55_loadchunk_bad_positions(self):
        """`BF.RESERVE bf 0.1 4`; `BF.LOADCHUNK bf -9223372036854775808 1` → `ERR received bad
        data`; `BF.LOADCHUNK bf 922337203685477588 1` → `ERR invalid offset - no link found`;
        `BF.LOADCHUNK bf 4 kdoasdksaodsadsadsadsadsadadsadadsdad` → `ERR received bad data`;
        `BF.LOADCHUNK bf 4 abcd` → `ERR invalid offset - no link found`; then `BF.ADD bf x` and
        `BF.ADD bf y` answer `1` or `0` (no error)."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.1", "4")
        self.assertCmd(self.c, BAD_DATA, "BF.LOADCHUNK", "bf", "-9223372036854775808", "1")
        self.assertCmd(self.c, NO_LINK, "BF.LOADCHUNK", "bf", "922337203685477588", "1")
        self.assertCmd(self.c, BAD_DATA, "BF.LOADCHUNK", "bf", "4",
                       "kdoasdksaodsadsadsadsadsadadsadadsdad")
        self.assertCmd(self.c, NO_LINK, "BF.LOADCHUNK", "bf", "4", "abcd")
        for value in ("x", "y"):
            self.assertReply(self.c.call("BF.ADD", "bf", value),
                             Match("1 or 0", lambda r: type(r) is int and r in (0, 1)))
        self.assertCmd(self.c, 1, "BF.EXISTS", "bf", "x")

    def test_case_56_chunk_too_big(self):
        """`BF.RESERVE bf 0.1 10`; `BF.LOADCHUNK bf 10 abcdefghi` → `ERR invalid chunk - Too
        big for current filter` [layout: sub-filter 0 has 8 bytes] — ccf: with its sub-filter
        size B, B + 1 bytes at iterator B + 2 (offset 0); B bytes at iterator B + 1 fit."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.1", "10")
        _, subs = self.bf_debug(self.c, "bf")
        size = subs[0]["bytes"]
        self.assertCmd(self.c, TOO_BIG, "BF.LOADCHUNK", "bf", size + 2, b"a" * (size + 1))
        self.assertCmd(self.c, 0, "BF.CARD", "bf")
        self.assertCmd(self.c, OK, "BF.LOADCHUNK", "bf", size + 1, bytes(size))
        self.assertCmd(self.c, OK, "BF.LOADCHUNK", "bf", "2", b"")  # empty: writes nothing

    def test_case_57_header_on_existing_filter(self):
        """From 48 before the DEL (bf exists): `BF.LOADCHUNK bf 1 H` → `ERR received bad
        data`; `BF.EXISTS bf item1` → `1`; `BF.CARD bf` → `1` (nothing overwritten)."""
        header, _, _ = self.case_48_setup()
        self.assertCmd(self.c, BAD_DATA, "BF.LOADCHUNK", "bf", "1", header)
        self.assertCmd(self.c, 1, "BF.EXISTS", "bf", "item1")
        self.assertCmd(self.c, 1, "BF.CARD", "bf")

    def test_case_58_header_alone(self):
        """From 48: `BF.LOADCHUNK g 1 H` → `OK`; `BF.CARD g` → `1`; `BF.INFO g CAPACITY` →
        `[10]`; `BF.EXISTS g item1` → `0`; `BF.LOADCHUNK g I D` → `OK`; `BF.EXISTS g item1` →
        `1`."""
        header, following, data = self.case_48_setup()
        self.assertCmd(self.c, OK, "BF.LOADCHUNK", "g", "1", header)
        self.assertCmd(self.c, 1, "BF.CARD", "g")
        self.assertCmd(self.c, [10], "BF.INFO", "g", "CAPACITY")
        self.assertCmd(self.c, 0, "BF.EXISTS", "g", "item1")
        self.assertCmd(self.c, Simple(BF_TYPE_NAME), "TYPE", "g")
        self.assertCmd(self.c, OK, "BF.LOADCHUNK", "g", following, data)
        self.assertCmd(self.c, 1, "BF.EXISTS", "g", "item1")

    def test_case_59_corrupted_headers(self):
        """[layout] From 48: H with bytes 12…15 set to 0xFF (flags) → `BF.LOADCHUNK g 1 H'` →
        `ERR received bad data`; H with bytes 0…3 set to 0xFF (item total ≠ sum) → same; H
        with its last byte removed → same; `EXISTS g` → `0`. ccf: any byte of its
        (checksummed) header flipped, or the header cut by one byte → the same error."""
        header, _, _ = self.case_48_setup()
        variants = {"last byte removed": header[:-1]}
        for first in (0, 12):
            if len(header) >= first + 4:
                variants[f"bytes {first}..{first + 3} = 0xFF"] = (
                    header[:first] + b"\xff" * 4 + header[first + 4:])
        for at in range(min(len(header), 4096)):
            for mask in (0xFF, 0x01):
                changed = bytearray(header)
                changed[at] ^= mask
                variants[f"byte {at} ^ {mask:#x}"] = bytes(changed)
        names = list(variants)
        replies = self.c.pipeline([("BF.LOADCHUNK", "g", "1", variants[n]) for n in names])
        accepted = [(n, r) for n, r in zip(names, replies) if r != BAD_DATA]
        self.assertEqual(accepted[:10], [], f"{len(accepted)} corrupted headers not refused")
        self.assertCmd(self.c, 0, "EXISTS", "g")
        self.assertCmd(self.c, 1, "DBSIZE")

    # -- beyond §10 --

    def test_strict_iterators(self):
        """§1 integers for the iterators: no '+', spaces, leading zeros or 65-bit values."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "f", "0.01", "100")
        for iterator in ("+1", " 1", "01", "-0", "1.0", "18446744073709551616", ""):
            self.assertCmd(self.c, SCANDUMP_NOT_NUMERIC, "BF.SCANDUMP", "f", iterator)
            self.assertCmd(self.c, LOADCHUNK_NOT_NUMERIC, "BF.LOADCHUNK", "f", iterator, "x")

    def test_check_order_and_what_creates_keys(self):
        """§4 BF.LOADCHUNK: the iterator is parsed before the key is looked at; a cuckoo key is
        another type; §1: BF.EXISTS, BF.MEXISTS, BF.CARD, BF.INFO, BF.SCANDUMP, BF.DEBUG never
        create a key, a failed BF.RESERVE/BF.INSERT neither."""
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, LOADCHUNK_NOT_NUMERIC, "BF.LOADCHUNK", "s", "x", "d")
        self.assertCmd(self.c, LOADCHUNK_NOT_NUMERIC, "BF.LOADCHUNK", "nokey", "1.5", "d")
        self.assertCmd(self.c, 1, "CF.ADD", "c", "a")
        self.assertCmd(self.c, E_TYPE, "BF.LOADCHUNK", "c", "1", "x")
        self.assertCmd(self.c, E_TYPE, "BF.LOADCHUNK", "c", "9", "x")
        self.assertCmd(self.c, E_TYPE, "BF.INFO", "c")
        self.assertCmd(self.c, E_TYPE, "BF.DEBUG", "c")
        for command in (("BF.EXISTS", "k", "a"), ("BF.MEXISTS", "k", "a"), ("BF.CARD", "k"),
                        ("BF.INFO", "k"), ("BF.SCANDUMP", "k", "0"), ("BF.DEBUG", "k"),
                        ("BF.RESERVE", "k", "0", "100"), ("BF.INSERT", "k", "ERROR", "2",
                                                         "ITEMS", "a"),
                        ("BF.INSERT", "k", "NOCREATE", "ITEMS", "a"),
                        ("BF.LOADCHUNK", "k", "5", "abc"), ("BF.LOADCHUNK", "k", "1", "abc")):
            self.c.call(*command)
            self.assertCmd(self.c, 0, "EXISTS", "k")
        self.assertCmd(self.c, 2, "DBSIZE")

    def test_chunk_boundaries(self):
        """§4 BF.LOADCHUNK on an existing filter of two sub-filters: a chunk that would cross
        from sub-filter 0 into 1 → too big; one past the end → no link; iterator 0 or below
        → bad data; each sub-filter's own chunk loads."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "bf", "0.01", "2")
        self.assertCmd(self.c, [1, 1, 1], "BF.MADD", "bf", "a", "b", "c")
        pairs = self.dump(self.c, "bf")
        _, subs = self.bf_debug(self.c, "bf")
        self.assertEqual(len(subs), 2)
        first, second = subs[0]["bytes"], subs[1]["bytes"]
        end = 1 + first + second
        self.assertCmd(self.c, TOO_BIG, "BF.LOADCHUNK", "bf", first + 2, bytes(2))
        self.assertCmd(self.c, NO_LINK, "BF.LOADCHUNK", "bf", end + 1, b"x")
        self.assertCmd(self.c, BAD_DATA, "BF.LOADCHUNK", "bf", "0", b"")
        self.assertCmd(self.c, BAD_DATA, "BF.LOADCHUNK", "bf", "-1", b"x")
        for iterator, data in pairs[1:]:
            self.assertCmd(self.c, OK, "BF.LOADCHUNK", "bf", iterator, data)
        self.assertCmd(self.c, OK, "BF.LOADCHUNK", "bf", end, pairs[2][1][-1:])
        self.assertCmd(self.c, [1, 1, 1], "BF.MEXISTS", "bf", "a", "b", "c")
        self.assertEqual(self.dump(self.c, "bf"), pairs)

    def test_dump_of_big_sub_filter_is_chunked(self):
        """§4: a sub-filter over 16 MiB comes in several chunks of at most 16 MiB; the round
        trip restores it."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "big", "0.001", "12000000", "NONSCALING")
        values = items_of("big-", 2000)
        self.add_all(self.c, "big", values, command="BF.MADD", batch=1000)
        _, subs = self.bf_debug(self.c, "big")
        pairs = self.dump(self.c, "big")
        chunks = [len(data) for _, data in pairs[1:]]
        self.assertEqual(sum(chunks), subs[0]["bytes"])
        self.assertGreater(subs[0]["bytes"], MAX_CHUNK, "the sub-filter is under 16 MiB")
        self.assertEqual(chunks[0], MAX_CHUNK)
        self.assertCmd(self.c, 1, "DEL", "big")
        self.load(self.c, "big", pairs)
        self.assertEqual(self.missing(self.c, "big", values), [])


# =============================================================================================
# §10 cases 60, 61: module only.

class BFModuleConfigAclTest(BFTest):
    """Cases 60 and 61 (module only). Redis 7 names module configs with the module's prefix:
    ccf.bf-error-rate, ccf.bf-initial-size, ccf.bf-expansion-factor."""

    def require_module(self):
        if not harness.MODULE:
            self.skipTest("module only: `ccf serve` has no CONFIG and no ACL (contract §10)")

    def test_case_60_config(self):
        """(module only) `CONFIG SET bf-error-rate 0.02 bf-initial-size 200 bf-expansion-factor
        3` → `OK`; `BF.ADD f a` → `1`; `BF.INFO f` → Capacity 200, Expansion rate 3; `CONFIG SET
        bf-expansion-factor 0`; `BF.ADD g a`; `BF.INFO g EXPANSION` → `[nil]`; `BF.RESERVE h
        0.01 100 EXPANSION 2` → `Nonscaling filters cannot expand`; `CONFIG SET bf-error-rate
        0` and `CONFIG SET bf-initial-size 0` and `CONFIG SET bf-expansion-factor 32769` →
        errors containing `must be in the range`; `CONFIG GET bf-initial-size` →
        `[bf-initial-size, 200]`. (ccf: the names carry the prefix `ccf.`.)"""
        self.require_module()
        rate, size, factor = "ccf.bf-error-rate", "ccf.bf-initial-size", "ccf.bf-expansion-factor"
        for name, default in ((rate, b"0.01"), (size, b"100"), (factor, b"2")):
            self.assertCmd(self.c, [name.encode(), default], "CONFIG", "GET", name)
        self.addCleanup(lambda: self.connect().call("CONFIG", "SET", rate, "0.01", size, "100",
                                                    factor, "2"))
        self.assertCmd(self.c, OK, "CONFIG", "SET", rate, "0.02", size, "200", factor, "3")
        self.assertCmd(self.c, 1, "BF.ADD", "f", "a")
        self.assertCmd(self.c, bf_info_reply(200, 1, 1, 3), "BF.INFO", "f")
        _, subs = self.bf_debug(self.c, "f")
        self.assertEqual(subs[0]["ratio"], "0.01", "bf-error-rate 0.02, halved")
        self.assertCmd(self.c, OK, "BF.RESERVE", "r", "0.05", "10")  # RESERVE: expansion only
        self.assertCmd(self.c, bf_info_reply(10, 1, 0, 3), "BF.INFO", "r")
        self.assertCmd(self.c, OK, "CONFIG", "SET", factor, "0")
        self.assertCmd(self.c, 1, "BF.ADD", "g", "a")
        self.assertCmd(self.c, [None], "BF.INFO", "g", "EXPANSION")
        self.assertCmd(self.c, CANNOT_EXPAND, "BF.RESERVE", "h", "0.01", "100", "EXPANSION", "2")
        self.assertCmd(self.c, OK, "BF.RESERVE", "h", "0.01", "100")
        self.assertCmd(self.c, [None], "BF.INFO", "h", "EXPANSION")
        self.assertCmd(self.c, bf_info_reply(200, 1, 1, 3), "BF.INFO", "f")  # unchanged
        for name, value in ((rate, "0"), (size, "0"), (factor, "32769"), (rate, "1")):
            reply = self.c.call("CONFIG", "SET", name, value)
            self.assertIs(type(reply), Err, f"CONFIG SET {name} {value}: {reply!r}")
            self.assertIn("must be in the range", reply.text, f"CONFIG SET {name} {value}")
        reply = self.c.call("CONFIG", "SET", rate, "abc")
        self.assertIs(type(reply), Err, f"CONFIG SET {rate} abc: {reply!r}")
        self.assertCmd(self.c, [size.encode(), b"200"], "CONFIG", "GET", size)
        self.assertCmd(self.c, OK, "CONFIG", "SET", rate, "0.5")
        self.assertCmd(self.c, OK, "CONFIG", "SET", factor, "2")
        self.assertCmd(self.c, 1, "BF.ADD", "capped", "a")
        _, subs = self.bf_debug(self.c, "capped")
        self.assertEqual(subs[0]["ratio"], "0.125", "bf-error-rate 0.5 stored as 0.25, halved")

    def test_case_61_acl_categories(self):
        """(module only) `ACL CAT bloom` → exactly the 11 names of §3, any order; `ACL CAT
        read` contains `bf.exists`. (Needs Redis 7.4+ for module ACL categories.)"""
        self.require_module()
        fields, _ = harness.info_fields(self.c, "server")
        version = fields.get("redis_version", b"0").decode()
        parts = tuple(int(p) for p in re.findall(r"[0-9]+", version)[:2])
        if parts < (7, 4):
            self.skipTest(f"module ACL categories need Redis 7.4+; this is {version}")
        names = {b"bf.reserve", b"bf.add", b"bf.madd", b"bf.insert", b"bf.exists",
                 b"bf.mexists", b"bf.info", b"bf.card", b"bf.scandump", b"bf.loadchunk",
                 b"bf.debug"}
        reply = self.c.call("ACL", "CAT", "bloom")
        self.assertIs(type(reply), list, repr(reply))
        self.assertEqual(sorted(reply), sorted(names))
        self.assertIn(b"bf.exists", self.c.call("ACL", "CAT", "read"))


# =============================================================================================
# §10 cases 64, 65: pipelining and the keyspace.

class BFKeyspaceTest(BFTest):
    """Pipelining and the shared keyspace: cases 64 and 65."""

    def test_case_64_pipelining(self):
        """Pipelining: send `BF.ADD f a`, `BF.EXISTS f a`, `BF.CARD f`, `BF.MADD f a b` in one
        write → `1`, `1`, `1`, `[0, 1]` in order [hash]."""
        replies = self.c.pipeline([("BF.ADD", "f", "a"), ("BF.EXISTS", "f", "a"),
                                   ("BF.CARD", "f"), ("BF.MADD", "f", "a", "b")])
        self.assertReply(replies, [1, 1, 1, [0, 1]], "pipeline")

    def test_case_65_keyspace(self):
        """`BF.ADD f a`; `CF.ADD g a`; `DBSIZE` → `2`; `SCAN 0 TYPE MBbloom--` (until cursor
        `"0"`) → keys {f}; `TYPE g` → `MBbloomCF`; `DEL f` → `1`; `BF.CARD f` → `0`. (Module:
        ccfBloom- and ccfCuckoo.)"""
        self.assertCmd(self.c, 1, "BF.ADD", "f", "a")
        self.assertCmd(self.c, 1, "CF.ADD", "g", "a")
        self.assertCmd(self.c, 2, "DBSIZE")
        self.assertEqual(self.scan("TYPE", BF_TYPE_NAME), {b"f"})
        self.assertEqual(self.scan("TYPE", harness.TYPE_NAME), {b"g"})
        self.assertCmd(self.c, Simple(harness.TYPE_NAME), "TYPE", "g")
        self.assertCmd(self.c, Simple(BF_TYPE_NAME), "TYPE", "f")
        self.assertCmd(self.c, 1, "DEL", "f")
        self.assertCmd(self.c, 0, "BF.CARD", "f")
        self.assertCmd(self.c, 0, "EXISTS", "f")

    def test_pipelined_key_replaced_in_between(self):
        """One write: commands on `f` around `DEL f`, `SET f`, `CF.ADD f`, `FLUSHALL` each see
        the key as those left it."""
        replies = self.c.pipeline([
            ("BF.ADD", "f", "a"), ("DEL", "f"), ("BF.EXISTS", "f", "a"), ("SET", "f", "t"),
            ("BF.ADD", "f", "a"), ("BF.EXISTS", "f", "a"), ("DEL", "f"), ("CF.ADD", "f", "a"),
            ("BF.EXISTS", "f", "a"), ("BF.CARD", "f"), ("FLUSHALL",), ("BF.ADD", "f", "b"),
            ("BF.EXISTS", "f", "a"), ("BF.CARD", "f")])
        self.assertReply(replies, [1, 1, 0, OK, E_TYPE, 0, 1, 1, 0, E_TYPE, OK, 1, 0, 1])

    def test_command_names_are_known(self):
        """§3: COMMAND INFO knows every BF.* command (an array each, not nil)."""
        names = ("bf.reserve", "bf.add", "bf.madd", "bf.insert", "bf.exists", "bf.mexists",
                 "bf.info", "bf.card", "bf.scandump", "bf.loadchunk", "bf.debug")
        reply = self.c.call("COMMAND", "INFO", *names)
        self.assertIs(type(reply), list, repr(reply)[:300])
        self.assertEqual(len(reply), len(names))
        for name, entry in zip(names, reply):
            self.assertIs(type(entry), list, f"COMMAND INFO {name}: {entry!r}")


# =============================================================================================
# Beyond §10: concurrency.

class BFConcurrencyTest(BFTest):
    """Many clients on one small-capacity scaling key that grows while it is read."""

    WRITERS, READERS, PER_WRITER, BATCH = 8, 3, 1500, 50
    RACE_ROUNDS, RACE_BATCH = 40, 50
    TIME_LIMIT_S = 120

    def client(self, name, body, errors, on_error=None):
        """A thread running body(conn) on a connection of its own; what it raises is appended
        to errors (checked by the test), and on_error() runs then (e.g. to free a barrier)."""
        port = self.server.port

        def run():
            conn = None
            try:
                conn = harness.Conn(port)
                body(conn)
            except Exception as e:  # noqa: BLE001 -- every failure goes to errors
                errors.append(f"{name}: {e!r}")
                if on_error:
                    on_error()
            finally:
                if conn is not None:
                    conn.close()

        return threading.Thread(target=run, name=name, daemon=True)

    def run_threads(self, threads, deadline):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()) + 5)
        stuck = [t.name for t in threads if t.is_alive()]
        self.assertEqual(stuck, [], f"threads still running after {self.TIME_LIMIT_S} s")

    def test_adds_while_growing_and_lookups(self):
        """8 writers BF.ADD (pipelined) or BF.MADD 1,500 own items each into `BF.RESERVE h
        0.01 8` (it grows to about 11 sub-filters) while 3 readers BF.EXISTS / BF.MEXISTS items
        acknowledged before the lookup began: every one is found, then and at the end; BF.CARD
        equals the adds answered 1; the sub-filters are as §2 says."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "h", "0.01", "8")
        acked, lock, errors = [], threading.Lock(), []
        ones = [0] * self.WRITERS
        writers_done = threading.Event()
        barrier = threading.Barrier(self.WRITERS + self.READERS, timeout=30)
        lookups = [0] * self.READERS
        deadline = time.monotonic() + self.TIME_LIMIT_S

        def writer(conn, t):
            barrier.wait()
            for start in range(0, self.PER_WRITER, self.BATCH):
                batch = [f"w{t}-{i}".encode() for i in range(start, start + self.BATCH)]
                if t % 2:
                    replies = conn.call("BF.MADD", "h", *batch)
                else:
                    replies = conn.pipeline([("BF.ADD", "h", v) for v in batch])
                if type(replies) is not list or len(replies) != len(batch) or any(
                        type(r) is not int or r not in (0, 1) for r in replies):
                    raise AssertionError(f"replies {str(replies)[:300]}")
                ones[t] += sum(replies)
                with lock:
                    acked.extend(batch)
                if time.monotonic() > deadline:
                    raise AssertionError("out of time")

        def reader(conn, r):
            rng = random.Random(r)
            barrier.wait()
            for _ in range(100000):
                finished = writers_done.is_set()
                with lock:
                    n = len(acked)
                    sample = [acked[rng.randrange(n)] for _ in range(min(n, 20))]
                if sample:
                    if r == 0:
                        reply = conn.pipeline([("BF.EXISTS", "h", v) for v in sample])
                    else:
                        reply = conn.call("BF.MEXISTS", "h", *sample)
                    if type(reply) is not list or len(reply) != len(sample) or any(
                            type(v) is not int or v != 1 for v in reply):
                        raise AssertionError(f"acknowledged items not found: "
                                             f"{list(zip(sample, reply or []))[:5]!r:.300}")
                    lookups[r] += 1
                if finished or time.monotonic() > deadline:
                    break

        def abort():
            barrier.abort()

        writers = [self.client(f"writer {t}", lambda conn, t=t: writer(conn, t), errors, abort)
                   for t in range(self.WRITERS)]
        readers = [self.client(f"reader {r}", lambda conn, r=r: reader(conn, r), errors, abort)
                   for r in range(self.READERS)]
        for thread in readers:
            thread.start()
        self.run_threads(writers, deadline)
        writers_done.set()
        for thread in readers:
            thread.join(max(0.0, deadline - time.monotonic()) + 10)
        self.assertEqual([t.name for t in readers if t.is_alive()], [], "readers stuck")
        self.assertEqual(errors, [])
        self.assertEqual(len(acked), self.WRITERS * self.PER_WRITER)
        self.assertTrue(all(lookups), f"every reader looked up at least once: {lookups}")
        self.assertEqual(self.missing(self.c, "h", acked)[:10], [])
        added = sum(ones)
        self.assertGreaterEqual(added, 0.98 * len(acked), "more than 2 % answered 0")
        self.assertCmd(self.c, added, "BF.CARD", "h")
        _, subs = self.assertModel(self.c, "h", 8, 2, 0.01, added=len(acked))
        self.assertGreaterEqual(len(subs), 10)

    def test_card_and_info_never_see_half_a_madd(self):
        """§1 atomicity: one client sends 300 BF.MADD of 20 new items each into `BF.RESERVE m
        0.01 4` (it grows meanwhile) while another polls BF.CARD and BF.INFO: every BF.CARD
        seen is a count some BF.MADD left behind (the sum of the 1s of the commands before it),
        and every BF.INFO's filters and capacity fit its items as §2 says."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "m", "0.01", "4")
        errors, done = [], threading.Event()
        totals, seen, infos = [0], [], []

        def writer(conn):
            try:
                for batch in range(300):
                    replies = conn.call("BF.MADD", "m", *items_of(f"m{batch}-", 20))
                    totals.append(totals[-1] + sum(replies))
            finally:
                done.set()

        def poller(conn):
            for _ in range(200000):
                finished = done.is_set()
                card, info = conn.pipeline([("BF.CARD", "m"), ("BF.INFO", "m")])
                seen.append(card)
                infos.append(info)
                if finished:
                    break

        self.run_threads([self.client("writer", writer, errors),
                          self.client("poller", poller, errors)],
                         time.monotonic() + self.TIME_LIMIT_S)
        self.assertEqual(errors, [])
        self.assertEqual(len(totals), 301)
        self.assertGreater(len(seen), 0, "the poller never ran")
        possible = set(totals)
        self.assertEqual([c for c in seen if c not in possible][:10], [],
                         "BF.CARD saw part of a BF.MADD")
        self.assertEqual(seen, sorted(seen), "BF.CARD went backwards")
        for info in infos:
            self.assertIs(type(info), list, f"BF.INFO m: {info!r}")
            fields = dict(zip([name.text for name in info[0::2]], info[1::2]))
            items = fields["Number of items inserted"]
            self.assertIn(items, possible, f"BF.INFO saw part of a BF.MADD: {fields}")
            self.assertEqual((fields["Number of filters"], fields["Capacity"]),
                             fewest_filters(items, 4, 2), fields)

    def test_racing_adds_of_the_same_new_item(self):
        """Two clients send `BF.ADD r <item>` for the same 2,000 new items, in the same order,
        at the same time, into a scaling filter of capacity 4 (it grows meanwhile): no item is
        answered 1 twice, at most 2 % get no 1 (a false positive), BF.CARD = the 1s."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "r", "0.01", "4")
        errors, results = [], [[], []]
        barrier = threading.Barrier(2, timeout=30)

        def racer(conn, t):
            for round_ in range(self.RACE_ROUNDS):
                batch = [f"race-{round_}-{j}" for j in range(self.RACE_BATCH)]
                barrier.wait()
                results[t].extend(conn.pipeline([("BF.ADD", "r", v) for v in batch]))

        self.run_threads([self.client(f"racer {t}", lambda conn, t=t: racer(conn, t), errors,
                                      barrier.abort) for t in range(2)],
                         time.monotonic() + self.TIME_LIMIT_S)
        self.assertEqual(errors, [])
        total = self.RACE_ROUNDS * self.RACE_BATCH
        self.assertEqual((len(results[0]), len(results[1])), (total, total))
        for replies in results:
            self.assertEqual([r for r in replies if type(r) is not int or r not in (0, 1)], [])
        twice = [i for i in range(total) if results[0][i] == 1 and results[1][i] == 1]
        self.assertEqual(twice[:10], [], f"{len(twice)} items added twice")
        neither = sum(1 for i in range(total) if results[0][i] == 0 and results[1][i] == 0)
        self.assertLessEqual(neither, 0.02 * total)
        added = sum(results[0]) + sum(results[1])
        self.assertCmd(self.c, added, "BF.CARD", "r")
        values = [f"race-{r}-{j}".encode() for r in range(self.RACE_ROUNDS)
                  for j in range(self.RACE_BATCH)]
        self.assertEqual(self.missing(self.c, "r", values), [])
        self.assertModel(self.c, "r", 4, 2, 0.01, added=total)


# =============================================================================================
# Beyond §10: dumps across servers and front ends.

class CcfServe(harness.Server):
    """`ccf serve`, also in --redis-module mode (the harness starts redis-server there)."""

    def start(self):
        saved = harness.MODULE, harness.BINARY
        harness.MODULE, harness.BINARY = "", CCF_SERVE_BINARY or harness.BINARY
        try:
            return super().start()
        finally:
            harness.MODULE, harness.BINARY = saved


class BFDumpAcrossServersTest(BFTest):
    """BF.SCANDUMP from `ccf serve`, BF.LOADCHUNK into another key, another `ccf serve`, and
    (with --redis-module) the module; and from the module into `ccf serve`."""

    FILTERS = (("grown", ("0.01", "20"), 1000), ("ns", ("0.001", "500", "NONSCALING"), 300),
               ("e3", ("0.05", "10", "EXPANSION", "3"), 400), ("empty", ("0.02", "1000"), 0))

    def ccf_serve(self):
        """A connection to a `ccf serve` other than self.server."""
        if harness.MODULE and not CCF_SERVE_BINARY:
            self.skipTest("module mode needs a `ccf serve` binary: --ccf PATH or CCF_BINARY")
        server = CcfServe()
        self.addCleanup(server.cleanup)
        server.start()
        conn = harness.Conn(server.port)
        self.addCleanup(conn.close)
        return conn

    def populate(self, conn):
        kept = {}
        for key, args, count in self.FILTERS:
            self.assertReply(conn.call("BF.RESERVE", key, *args), OK, f"BF.RESERVE {key}")
            kept[key] = items_of(f"{key}-", count)
            if count:
                self.add_all(conn, key, kept[key], command="BF.MADD")
        return kept

    def copy_and_compare(self, source, kept, targets):
        for key, values in kept.items():
            info, debug = source.call("BF.INFO", key), source.call("BF.DEBUG", key)
            pairs = self.dump(source, key)
            for conn, target in targets:
                self.assertReply(conn.call("DEL", target), Match("0 or 1", lambda r: r in (0, 1)))
                self.load(conn, target, pairs)
                self.assertReply(conn.call("BF.INFO", target), info, f"BF.INFO {target}")
                self.assertReply(conn.call("BF.DEBUG", target), debug, f"BF.DEBUG {target}")
                self.assertEqual(self.missing(conn, target, values), [], target)
                self.assertEqual(self.dump(conn, target), pairs, f"dump of {target}")

    def test_scandump_from_ccf_serve_loads_elsewhere(self):
        """ccf serve → another key of the same server, and → a second server (serve mode:
        another `ccf serve`; module mode: the module): equal BF.INFO, BF.DEBUG, dumps, and
        every item found."""
        if harness.MODULE:
            source = self.ccf_serve()
            targets = [(source, "copy"), (self.c, "copy")]
        else:
            source = self.c
            targets = [(self.c, "copy"), (self.ccf_serve(), "copy")]
        kept = self.populate(source)
        self.copy_and_compare(source, kept, targets)

    def test_scandump_from_module_loads_into_ccf_serve(self):
        """(module mode) module → `ccf serve`: the same."""
        if not harness.MODULE:
            self.skipTest("needs --redis-module")
        other = self.ccf_serve()
        kept = self.populate(self.c)
        self.copy_and_compare(self.c, kept, [(other, "copy")])


# =============================================================================================
# Beyond §10: snapshots of `ccf serve`.

class BFSnapshotTest(BloomChecks, unittest.TestCase):
    """SAVE / BGSAVE / shutdown with save points, then a restart with the same --dir and
    --dbfilename: every Bloom key back with equal BF.INFO, BF.DEBUG and dump, every item
    found, and the keys go on working."""

    setUp = harness.PersistenceTest.setUp
    start = harness.PersistenceTest.start
    assertReply = harness.ServerTest.assertReply
    _mismatch = harness.ServerTest._mismatch
    DBFILENAME = "bloom.snapshot"

    def populate(self, conn):
        kept = {}
        for key, args, count in (("grown", ("0.01", "50"), 3000),
                                 ("ns", ("0.001", "2000", "NONSCALING"), 1500),
                                 ("e3", ("0.3", "10", "EXPANSION", "3"), 500),
                                 ("empty", ("0.05", "1000"), 0)):
            self.assertReply(conn.call("BF.RESERVE", key, *args), OK)
            kept[key] = items_of(f"{key}-", count)
            if count:
                self.add_all(conn, key, kept[key], command="BF.MADD")
        self.assertReply(conn.call("BF.ADD", "auto", "x"), 1)
        kept["auto"] = [b"x"]
        self.assertReply(conn.call("CF.ADD", "cf", "a"), 1)
        self.assertReply(conn.call("SET", "s", "v"), OK)
        return kept

    def state(self, conn, kept):
        return {key: (conn.call("BF.INFO", key), conn.call("BF.DEBUG", key),
                      self.dump(conn, key)) for key in kept}

    def check_restored(self, conn, kept, before):
        self.assertEqual(self.state(conn, kept), before)
        for key, values in kept.items():
            self.assertEqual(self.missing(conn, key, values), [], key)
            self.assertReply(conn.call("TYPE", key), Simple("MBbloom--"))
        self.assertReply(conn.call("CF.EXISTS", "cf", "a"), 1)
        self.assertReply(conn.call("GET", "s"), b"v")
        self.assertReply(conn.call("DBSIZE"), len(kept) + 2)
        # The restored filters go on growing as before.
        more = items_of("more-", 2000)
        ones = self.add_all(conn, "grown", more)
        self.assertModel(conn, "grown", 50, 2, 0.01, added=5000)
        self.assertEqual(self.missing(conn, "grown", kept["grown"] + more), [])
        items = before["grown"][0][7] + ones
        self.assertReply(conn.call("BF.CARD", "grown"), items)
        self.assertReply(conn.call("BF.ADD", "ns", "full?"), Match(
            "1 or 0", lambda r: type(r) is int and r in (0, 1)))

    def restart(self, server, conn, *options):
        conn.close()
        self.assertEqual(server.stop(), 0, "the server did not exit cleanly")
        self.assertTrue(os.path.isfile(os.path.join(self.dir.name, self.DBFILENAME)))
        return self.start("--dbfilename", self.DBFILENAME, *options)

    def test_save_then_restart(self):
        server, conn = self.start("--dbfilename", self.DBFILENAME)
        kept = self.populate(conn)
        before = self.state(conn, kept)
        self.assertReply(conn.call("SAVE"), OK)
        server, conn = self.restart(server, conn)
        self.check_restored(conn, kept, before)

    def test_bgsave_then_restart(self):
        server, conn = self.start("--dbfilename", self.DBFILENAME)
        kept = self.populate(conn)
        before = self.state(conn, kept)
        self.assertReply(conn.call("BGSAVE"), Simple("Background saving started"))
        for _ in range(200):  # up to 20 s for the background save
            fields, _ = harness.info_fields(conn, "persistence")
            if fields.get("rdb_bgsave_in_progress") == b"0" and conn.call("LASTSAVE") > 0:
                break
            time.sleep(0.1)
        self.assertGreater(conn.call("LASTSAVE"), 0, "BGSAVE did not finish within 20 s")
        self.assertEqual(fields.get("rdb_last_bgsave_status"), b"ok", fields)
        server, conn = self.restart(server, conn)
        self.check_restored(conn, kept, before)

    def test_shutdown_with_save_points(self):
        server, conn = self.start("--dbfilename", self.DBFILENAME, "--save", "3600", "1")
        kept = self.populate(conn)
        before = self.state(conn, kept)
        server, conn = self.restart(server, conn)
        self.check_restored(conn, kept, before)


# =============================================================================================
# Beyond §10: error robustness.

class BFRobustnessTest(BFTest):
    """Huge capacities and hostile LOADCHUNK data: an error or success, never a crash."""

    def test_huge_capacity_is_created_or_refused(self):
        """Capacity 2^30 at 1 % (about 1.5 GB of bits) through BF.RESERVE and BF.INSERT, and at
        1e-300 (190 GB by the standard formula; ccf stops at 64 bits per item, 8 GiB): `OK`
        (then usable and deleted) or `ERR Insufficient memory to create filter`; the server
        answers PING after each."""
        for args, created in ((("BF.RESERVE", "big", "0.01", "1073741824"), OK),
                              (("BF.INSERT", "big", "CAPACITY", "1073741824", "ERROR", "0.01",
                                "ITEMS", "a"), [1]),
                              (("BF.RESERVE", "big", "1e-300", "1073741824", "NONSCALING"), OK),
                              (("BF.INSERT", "big", "CAPACITY", "1073741824", "ERROR", "1e-300",
                                "EXPANSION", "32768", "ITEMS", "a"), [1])):
            conn = self.connect()
            try:
                reply = conn.call_slow(*args)
            except (harness.ConnectionClosed, OSError) as e:
                self.fail(f"{harness.show_command(args)}: connection lost ({e!r}); server "
                          f"alive: {self.server.alive()}")
            self.assertIn(reply, (created, NO_MEMORY), harness.show_command(args))
            if reply == created:
                self.assertCmd(conn, 1, "BF.ADD", "big", "b")
                self.assertCmd(conn, [1, 1], "BF.MEXISTS", "big", "b", "b")
                self.assertCmd(conn, 1, "DEL", "big")
            else:
                self.assertCmd(conn, 0, "EXISTS", "big")
            self.assertCmd(conn, PONG, "PING")

    def hostile_headers(self, header):
        rng = random.Random(20260622)
        yield "empty", b""
        yield "one zero byte", b"\x00"
        yield "all 0xFF", b"\xff" * len(header)
        yield "all zero", bytes(len(header))
        yield "header twice", header + header
        yield "header plus a byte", header + b"\x00"
        for length in (1, 7, 8, 20, 73, len(header) - 1, len(header), len(header) + 1, 4096,
                       1 << 20):
            yield f"random {length} bytes", rng.randbytes(length)
        for at in range(0, len(header) - 7):
            yield f"bytes {at}..{at + 7} = 0xFF", header[:at] + b"\xff" * 8 + header[at + 8:]
            yield f"bytes {at}..{at + 7} = 0x7F..", (header[:at] + b"\xff" * 7 + b"\x7f" +
                                                     header[at + 8:])
        for n in range(200):
            yield f"random #{n}", rng.randbytes(rng.randrange(1, 2 * len(header)))

    def test_hostile_headers_are_refused(self):
        """BF.LOADCHUNK k 1 <data> with data that is not a header ccf wrote (random bytes,
        words set to huge values, cut or extended) → `ERR received bad data`, no key, and the
        server still answers PING."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "src", "0.01", "100")
        header = self.dump(self.c, "src")[0][1]
        cases = list(self.hostile_headers(header))
        for start in range(0, len(cases), 50):
            batch = cases[start:start + 50]
            try:
                replies = self.c.pipeline([("BF.LOADCHUNK", "k", "1", d) for _, d in batch])
            except (harness.ConnectionClosed, OSError) as e:
                self.fail(f"connection lost in {[n for n, _ in batch]}: {e!r}")
            accepted = [(n, r) for (n, _), r in zip(batch, replies) if r != BAD_DATA]
            self.assertEqual(accepted, [], "hostile headers not refused")
            self.assertCmd(self.c, 0, "EXISTS", "k")
        self.assertCmd(self.c, PONG, "PING")
        self.assertCmd(self.c, OK, "BF.LOADCHUNK", "k", "1", header)

    def test_hostile_chunks_on_an_existing_filter(self):
        """Data chunks at extreme iterators or of odd sizes → the §4 errors; the filter stays
        usable."""
        self.assertCmd(self.c, OK, "BF.RESERVE", "k", "0.01", "100")
        _, subs = self.bf_debug(self.c, "k")
        size = subs[0]["bytes"]
        for iterator, data, expected in (
                ("9223372036854775807", b"x", NO_LINK),
                ("9223372036854775807", b"x" * 1000, NO_LINK),
                ("-9223372036854775808", b"", BAD_DATA),
                ("1", b"xx", BAD_DATA),
                (size + 2, b"x", NO_LINK),
                (size + 3, b"x" * (size + 2), TOO_BIG),
                (size + 1, b"x" * (size + 1), NO_LINK)):  # iterator = len(data)
            self.assertCmd(self.c, expected, "BF.LOADCHUNK", "k", iterator, data)
        self.assertCmd(self.c, OK, "BF.LOADCHUNK", "k", size + 1, b"\xff" * size)
        self.assertCmd(self.c, 1, "BF.EXISTS", "k", "anything")  # every bit set
        self.assertCmd(self.c, PONG, "PING")


    def genuine_header(self, key, *setup):
        """The header of a filter made by `setup` commands; skips the forging tests if ccf's
        header is not (any more) checksummed with XXH3-64 over all but its last 8 bytes."""
        for command in setup:
            self.assertReply(self.c.call(*command), Match("not an error",
                                                          lambda r: type(r) is not Err))
        header = self.dump(self.c, key)[0][1]
        if not 16 < len(header) - 8 <= 128 or \
                xxh3_64(header[:-8]) != int.from_bytes(header[-8:], "little"):
            self.skipTest("ccf's dump header is not a 17-128 byte body plus its XXH3-64: the "
                          "forged-header cases need rewriting for its format")
        return header

    @staticmethod
    def forge(header, **fields):
        """The header with fields replaced (offsets of ccf's format: options at 16, records of
        32 bytes from 48) and the checksum recomputed."""
        layout = {"version": (8, "<I"), "kind": (12, "<I"), "capacity": (16, "<Q"),
                  "error": (24, "<d"), "expansion": (32, "<I"), "count": (36, "<I"),
                  "seed": (40, "<Q"), "cap0": (48, "<Q"), "items0": (56, "<Q"),
                  "bits0": (64, "<Q"), "hashes0": (72, "<I"), "reserved0": (76, "<I"),
                  "cap1": (80, "<Q"), "items1": (88, "<Q")}
        body = bytearray(header[:-8])
        for name, value in fields.items():
            at, fmt = layout[name]
            struct.pack_into(fmt, body, at, value)
        return bytes(body) + struct.pack("<Q", xxh3_64(bytes(body)))

    def test_forged_headers_with_valid_checksums(self):
        """Headers whose checksum is right but whose content is not what ccf writes (counters
        past capacities, error rates outside (0, 1), sizes past 2^46 bytes, a non-scaling
        filter of two sub-filters, a full sub-filter missing, shapes not the options' own) →
        `ERR received bad data`, nothing created, PING answered."""
        one = self.genuine_header("one", ("BF.RESERVE", "one", "0.01", "2"))
        two = self.genuine_header("two", ("BF.RESERVE", "two", "0.01", "2"),
                                  ("BF.MADD", "two", "a", "b", "c"))
        (cap0,) = struct.unpack_from("<Q", one, 48)
        (bits0,) = struct.unpack_from("<Q", one, 64)
        (hashes0,) = struct.unpack_from("<I", one, 72)
        self.assertEqual(self.forge(one), one, "re-checksumming changes nothing")
        self.assertCmd(self.c, OK, "BF.LOADCHUNK", "copy", "1", self.forge(one))
        cases = {
            "items past capacity": self.forge(one, items0=cap0 + 1),
            "items 2^64 - 1": self.forge(one, items0=MASK64),
            "capacity 2^63": self.forge(one, capacity=1 << 63),
            "capacities 2^63": self.forge(one, capacity=1 << 63, cap0=1 << 63),
            "capacities 2^40": self.forge(one, capacity=1 << 40, cap0=1 << 40),
            "capacity 0": self.forge(one, capacity=0, cap0=0),
            "bits + 512": self.forge(one, bits0=bits0 + 512),
            "bits 2^63": self.forge(one, bits0=1 << 63),
            "bits 0": self.forge(one, bits0=0),
            "hashes + 1": self.forge(one, hashes0=hashes0 + 1),
            "hashes 0": self.forge(one, hashes0=0),
            "reserved 1": self.forge(one, reserved0=1),
            "version 99": self.forge(one, version=99),
            "kind 99": self.forge(one, kind=99),
            "count 2": self.forge(one, count=2),
            "count 0": self.forge(one, count=0),
            "non-scaling with two sub-filters": self.forge(two, expansion=0),
            "first of two not full": self.forge(two, items0=1),
            "newest past capacity": self.forge(two, items1=5),
        }
        for error in (0.0, 1.0, -0.01, 2.0, float("inf"), float("nan")):
            cases[f"error rate {error!r}"] = self.forge(one, error=error)
        names = list(cases)
        replies = self.c.pipeline([("BF.LOADCHUNK", "k", "1", cases[n]) for n in names])
        accepted = [(n, r) for n, r in zip(names, replies) if r != BAD_DATA]
        self.assertEqual(accepted, [], "forged headers not refused")
        self.assertCmd(self.c, 0, "EXISTS", "k")
        self.assertCmd(self.c, PONG, "PING")

    def test_forged_expansion_past_the_limit(self):
        """A header that is ccf's own but for an expansion past 32768 (its checksum right):
        refused (`ERR received bad data`) or loaded; if loaded, the growth it leads to (a
        second sub-filter of 2 * expansion items) answers 1, 0 or `ERR problem inserting into
        filter` per item, never a crash."""
        one = self.genuine_header("one", ("BF.RESERVE", "one", "0.001", "2"))
        for expansion in (32769, 1 << 31, (1 << 32) - 1):
            reply = self.c.call("BF.LOADCHUNK", "k", "1", self.forge(one, expansion=expansion))
            self.assertIn(reply, (OK, BAD_DATA), f"expansion {expansion}")
            if reply == OK:
                replies = self.c.call("BF.MADD", "k", "a", "b", "c", "d")
                self.assertIs(type(replies), list, f"expansion {expansion}: {replies!r}")
                for r in replies:
                    self.assertIn(r, (0, 1, Err("ERR problem inserting into filter")),
                                  f"expansion {expansion}: {replies!r}")
                self.assertCmd(self.c, 1, "DEL", "k")
            self.assertCmd(self.c, PONG, "PING")


# =============================================================================================
# Smoke tests through real clients: redis-py 4.3.4 (Debian) and redis-cli.

class BFRedisPyTest(BFTest):
    """redis-py's `r.bf()` helpers (RESP2)."""

    def setUp(self):
        super().setUp()
        if redis is None:
            self.skipTest("redis-py (python3-redis) is not installed")
        self.redis = redis
        self.r = redis.Redis(host="127.0.0.1", port=self.server.port,
                             socket_timeout=harness.SOCKET_TIMEOUT_S)
        self.addCleanup(self.r.close)
        self.bf = self.r.bf()

    def test_bf_helpers(self):
        """create/add/madd/exists/mexists/info/insert/scandump/loadchunk via r.bf(), BF.CARD
        through execute_command (redis-py 4.3.4 has no card())."""
        bf = self.bf
        self.assertTrue(bf.create("f", 0.01, 1000))
        self.assertTrue(bf.create("e", 0.01, 100, expansion=3))
        self.assertTrue(bf.create("n", 0.01, 100, noScale=True))
        self.assertEqual(bf.add("f", "a"), 1)
        self.assertEqual(bf.add("f", "a"), 0)
        self.assertEqual(bf.madd("f", "b", "c", "a"), [1, 1, 0])
        self.assertEqual(bf.exists("f", "a"), 1)
        self.assertEqual(bf.exists("f", "zz"), 0)
        self.assertEqual(bf.mexists("f", "a", "b", "zz"), [1, 1, 0])
        self.assertEqual(bf.insert("f", ["d"], capacity=10, error=0.5, expansion=2), [1])
        self.assertEqual(bf.insert("f", ["e"], noCreate=True), [1])
        self.assertEqual(self.r.execute_command("BF.CARD", "f"), 5)
        info = bf.info("f")
        self.assertEqual((info.capacity, info.filterNum, info.insertedNum, info.expansionRate),
                         (1000, 1, 5, 2))
        self.assertGreater(info.size, 0)
        self.assertEqual(bf.info("e").expansionRate, 3)
        self.assertIsNone(bf.info("n").expansionRate)
        reply = bf.insert("h", ["x", "y", "z"], capacity=2, noScale=True)
        self.assertEqual(reply[:2], [1, 1])
        self.assertIsInstance(reply[2], self.redis.ResponseError)
        self.assertEqual(str(reply[2]), "non scaling filter is full")
        self.assertEqual(self.r.type("f"), BF_TYPE_NAME.encode())

    def test_scandump_loadchunk(self):
        """The scandump/loadchunk loop of redis-py's documentation copies a grown filter."""
        bf = self.bf
        self.assertTrue(bf.create("f", 0.01, 50))
        values = [f"v{i}" for i in range(600)]
        bf.madd("f", *values)
        chunks, iterator = [], 0
        for _ in range(1000):
            iterator, data = bf.scandump("f", iterator)
            if iterator == 0:
                self.assertEqual(data, b"")
                break
            chunks.append((iterator, data))
        self.assertEqual(iterator, 0, "scandump never ended")
        for iterator, data in chunks:
            self.assertIn(bf.loadchunk("copy", iterator, data), (True, b"OK", "OK"))
        self.assertEqual(set(bf.mexists("copy", *values)), {1})
        original, copy = bf.info("f"), bf.info("copy")
        self.assertEqual(vars(original), vars(copy))

    def test_errors(self):
        """Error replies become ResponseError with the contract's text (redis-py strips a
        leading `ERR `)."""
        bf = self.bf
        self.assertTrue(bf.create("f", 0.01, 100))
        with self.assertRaisesRegex(self.redis.ResponseError, "^item exists$"):
            bf.create("f", 0.01, 100)
        with self.assertRaisesRegex(self.redis.ResponseError,
                                    r"^capacity must be in the range \[1, 1073741824\]$"):
            bf.create("g", 0.01, 0)
        with self.assertRaisesRegex(self.redis.ResponseError, "^not found$"):
            bf.insert("nokey", ["a"], noCreate=True)
        with self.assertRaisesRegex(self.redis.ResponseError, "^Bad error rate$"):
            bf.insert("nokey", ["a"], error=2)
        with self.assertRaisesRegex(self.redis.ResponseError, "^not found$"):
            bf.info("nokey")
        self.r.set("s", "v")
        with self.assertRaisesRegex(self.redis.ResponseError, "WRONGTYPE"):
            bf.add("s", "a")
        self.assertEqual(bf.exists("s", "a"), 0)

    def test_pipeline(self):
        """A non-transactional redis-py pipeline sends everything in one write."""
        pipe = self.r.pipeline(transaction=False)
        pipe.execute_command("BF.ADD", "f", "a")
        pipe.execute_command("BF.EXISTS", "f", "a")
        pipe.execute_command("BF.CARD", "f")
        pipe.execute_command("BF.MEXISTS", "f", "a", "b")
        self.assertEqual(pipe.execute(), [1, 1, 1, [1, 0]])


class BFRedisCliTest(BFTest):
    """redis-cli (Debian's redis-tools) prints BF.* replies as for RedisBloom."""

    cli = harness.RedisCliTest.cli

    def test_bf_commands(self):
        self.assertEqual(self.cli("BF.RESERVE", "f", "0.01", "1000"), "OK\n")
        self.assertEqual(self.cli("BF.ADD", "f", "a"), "(integer) 1\n")
        self.assertEqual(self.cli("BF.MADD", "f", "a", "b"), "1) (integer) 0\n2) (integer) 1\n")
        self.assertEqual(self.cli("BF.MEXISTS", "f", "a", "zz"),
                         "1) (integer) 1\n2) (integer) 0\n")
        self.assertEqual(self.cli("BF.RESERVE", "f", "0.01", "1000"), "(error) ERR item exists\n")
        self.assertEqual(self.cli("BF.INSERT", "g", "CAPACITY", "0", "ITEMS", "a"),
                         "(error) Bad capacity\n")
        self.assertEqual(self.cli("TYPE", "f"), f"{BF_TYPE_NAME}\n")
        self.assertEqual(self.cli("BF.SCANDUMP", "f", "-1"), '1) (integer) 0\n2) ""\n')
        out = self.cli("BF.INFO", "f").splitlines()
        self.assertEqual(len(out), 10, out)
        self.assertRegex(out[3], r"^ 4\) \(integer\) [1-9][0-9]*$")
        self.assertEqual(out[:3] + out[4:], [
            " 1) Capacity", " 2) (integer) 1000", " 3) Size", " 5) Number of filters",
            " 6) (integer) 1", " 7) Number of items inserted", " 8) (integer) 2",
            " 9) Expansion rate", "10) (integer) 2"])
        self.assertEqual(self.cli("BF.RESERVE", "n", "0.01", "10", "NONSCALING"), "OK\n")
        self.assertEqual(self.cli("BF.INFO", "n", "EXPANSION"), "1) (nil)\n")

    def test_resp3(self):
        """`redis-cli -3`: booleans print as (true)/(false), BF.INFO as a map."""
        self.assertEqual(self.cli("BF.ADD", "f", "a", resp3=True), "(true)\n")
        self.assertEqual(self.cli("BF.EXISTS", "f", "b", resp3=True), "(false)\n")
        self.assertEqual(self.cli("BF.CARD", "f", resp3=True), "(integer) 1\n")
        out = self.cli("BF.INFO", "f", resp3=True).splitlines()
        self.assertEqual(len(out), 5, out)
        self.assertEqual(out[0], "1# Capacity => (integer) 100")
        self.assertEqual(out[4], "5# Expansion rate => (integer) 2")
        self.cli("BF.RESERVE", "n", "0.01", "10", "NONSCALING")
        self.assertEqual(self.cli("BF.INFO", "n", "EXPANSION", resp3=True),
                         "1# Expansion rate => (nil)\n")


# The classes that run against the Redis module too (--redis-module).
MODULE_CASES = ["BFReserveTest", "BFAddExistsTest", "BFResp3NonScalingTest", "BFGrowthDebugTest",
                "BFFalsePositiveTest", "BFInsertTest", "BFScanDumpLoadChunkTest",
                "BFModuleConfigAclTest", "BFKeyspaceTest", "BFConcurrencyTest",
                "BFDumpAcrossServersTest", "BFRobustnessTest", "BFRedisPyTest",
                "BFRedisCliTest"]


def main():
    global BF_TYPE_NAME, CCF_SERVE_BINARY
    args = sys.argv[1:]
    if len(args) >= 2 and args[0] == "--redis-module":
        harness.MODULE = os.path.abspath(args[1])
        harness.TYPE_NAME, BF_TYPE_NAME = "ccfCuckoo", "ccfBloom-"
        args = args[2:]
        if len(args) >= 2 and args[0] == "--ccf":
            CCF_SERVE_BINARY, args = os.path.abspath(args[1]), args[2:]
        else:
            CCF_SERVE_BINARY = os.environ.get("CCF_BINARY", "")
        if not os.path.isfile(harness.MODULE):
            print(f"{harness.MODULE}: no such file", file=sys.stderr)
            return 2
        if CCF_SERVE_BINARY and not os.access(CCF_SERVE_BINARY, os.X_OK):
            print(f"{CCF_SERVE_BINARY}: not an executable file", file=sys.stderr)
            return 2
        program = unittest.main(argv=[sys.argv[0]] + args, verbosity=2, exit=False,
                                defaultTest=MODULE_CASES)
        return 0 if program.result.wasSuccessful() else 1
    if not args or args[0].startswith("-"):
        print(f"usage: {sys.argv[0]} PATH/TO/ccf [unittest options]\n"
              f"       {sys.argv[0]} --redis-module PATH/TO/ccf-redis.so [--ccf PATH/TO/ccf] "
              f"[unittest options]", file=sys.stderr)
        return 2
    harness.BINARY = os.path.abspath(args[0])
    if not os.access(harness.BINARY, os.X_OK):
        print(f"{harness.BINARY}: not an executable file", file=sys.stderr)
        return 2
    program = unittest.main(argv=[sys.argv[0]] + args[1:], verbosity=2, exit=False)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
