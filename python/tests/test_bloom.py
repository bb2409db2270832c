"""The Bloom family: the concurrent classes and ScalableBloomFilter against a Python model, from
8 Python threads, and in files (save/load, bytes, pickle, ccf.open, corrupt bytes, the bytes C++
writes)."""

import pathlib
import pickle
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ccf

BLOOM_CLASSES = [ccf.BloomFilter, ccf.BlockedBloomFilter, ccf.CountingBloomFilter,
                 ccf.ConcurrentBloomFilter, ccf.ConcurrentBlockedBloomFilter,
                 ccf.ConcurrentCountingBloomFilter]
# Each sequential class and its concurrent twin write the same bytes and load each other's.
TWINS = [(ccf.BloomFilter, ccf.ConcurrentBloomFilter),
         (ccf.BlockedBloomFilter, ccf.ConcurrentBlockedBloomFilter),
         (ccf.CountingBloomFilter, ccf.ConcurrentCountingBloomFilter)]
THREADS = 8
# Bloom files that C++ wrote (fuzz/make_corpus.cpp, the seed corpus of the Bloom fuzz target).
CPP_CORPUS = pathlib.Path(__file__).resolve().parents[2] / "fuzz" / "corpus" / "bloom_filter"

keys = st.one_of(st.integers(-2**63, 2**64 - 1), st.integers(0, 40), st.binary(max_size=3),
                 st.text(max_size=2))


@settings(max_examples=60)
@given(ops=st.lists(st.tuples(st.sampled_from(["add", "batch"]), keys), max_size=300),
       capacity=st.integers(1, 16), error_rate=st.sampled_from([0.5, 0.1, 0.01, 1e-9]),
       expansion=st.integers(0, 3))
def test_scalable_against_a_set(ops, capacity, error_rate, expansion):
    # (1e-9: sub-filters of the standard layout, a rate the blocked one cannot reach)
    f = ccf.ScalableBloomFilter(capacity, error_rate, expansion)
    model = set()
    for op, key in ops:
        if op == "add":
            if f.add(key):
                model.add(key)
            else:  # only a filter that does not grow refuses, and only when full
                assert expansion == 0 and len(f) == capacity and key not in model
        else:
            held = [k for k in model if isinstance(k, int)]
            if held:
                assert f.contains_many(held).all()
        assert all(k in f for k in model)
    # len counts the adds that found the key absent: each distinct key at most once, less
    # those that tested present (false positives) when added.
    assert len(f) <= len(model)
    assert f.filter_count == 1 or expansion > 0
    assert f.capacity >= len(f)


def test_scalable_grows_within_its_error_rate():
    f = ccf.ScalableBloomFilter(1000, 0.01)
    members = np.arange(0, 200_000, dtype=np.uint64)
    assert f.add_many(members) == len(members)
    assert f.filter_count > 5 and f.capacity >= len(f) >= 0.99 * len(members)
    assert f.contains_many(members).all()
    others = np.arange(1 << 40, (1 << 40) + 200_000, dtype=np.uint64)
    assert f.contains_many(others).mean() < 0.01
    assert 0 < f.expected_fpr < 0.01
    assert (f.error_rate, f.expansion) == (0.01, 2)


def test_scalable_that_does_not_grow_refuses_past_capacity():
    f = ccf.ScalableBloomFilter(100, 0.001, expansion=0)
    with pytest.raises(ccf.FullError):
        f.update(range(1000))
    assert len(f) == 100 and f.filter_count == 1
    assert f.add_many(np.arange(5000, 5010, dtype=np.uint64)) == 0  # full: nothing stored
    with pytest.raises(ValueError, match="error_rate"):
        ccf.ScalableBloomFilter(10, 1.5)


def thread_work(f, t, per_thread, failures, start):
    mine = np.arange(per_thread, dtype=np.uint64) + np.uint64(t * per_thread)
    start.wait()
    try:
        half = per_thread // 2
        assert f.add_many(mine[:half]) == half  # batch, without the GIL
        for k in mine[half:].tolist():  # one at a time, with the GIL
            assert f.add(k)
        for round_ in range(4):
            assert f.contains_many(mine).all()  # every acknowledged item, while others write
            if hasattr(f, "discard"):
                gone = mine[round_::8].tolist()
                for k in gone:
                    f.discard(k)
                assert f.add_many(gone) == len(gone)
        assert all(k in f for k in mine[::97].tolist())
    except AssertionError as e:  # pragma: no cover - reported below
        failures.append((t, repr(e)))


@pytest.mark.parametrize("make", [
    lambda n: ccf.ConcurrentBloomFilter(n, 0.01),
    lambda n: ccf.ConcurrentBlockedBloomFilter(n, 0.01),
    lambda n: ccf.ConcurrentCountingBloomFilter(n, 0.01),
    lambda n: ccf.ScalableBloomFilter(n // 64, 0.01),  # grows while the threads add
], ids=["ConcurrentBloomFilter", "ConcurrentBlockedBloomFilter",
        "ConcurrentCountingBloomFilter", "ScalableBloomFilter"])
def test_eight_threads_lose_no_acknowledged_item(make):
    per_thread = 20_000
    f = make(THREADS * per_thread)
    start = threading.Barrier(THREADS)
    failures = []
    threads = [threading.Thread(target=thread_work, args=(f, t, per_thread, failures, start))
               for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    everything = np.arange(THREADS * per_thread, dtype=np.uint64)
    assert f.contains_many(everything).all()
    if isinstance(f, ccf.ScalableBloomFilter):
        assert f.filter_count > 1 and len(f) <= len(everything)
    else:
        assert len(f) == len(everything)


def filled(cls):
    f = cls(5000, 0.01)
    f.add_many(np.arange(0, 6000, 2, dtype=np.uint64))
    f.update(["a string key", b"bytes key"])
    return f


def same_answers(a, b):
    probe = np.arange(0, 12_000, dtype=np.uint64)
    assert type(a) is type(b) and len(a) == len(b)
    assert (a.contains_many(probe) == b.contains_many(probe)).all()
    assert b.contains_many(probe[::2][:3000]).all()
    assert "a string key" in b and b"bytes key" in b


@pytest.mark.parametrize("cls", BLOOM_CLASSES + [ccf.ScalableBloomFilter],
                         ids=lambda c: c.__name__)
def test_save_load_bytes_and_pickle_round_trips(cls, tmp_path):
    f = filled(cls)
    path = tmp_path / "f.bloom"
    f.save(str(path))
    assert path.read_bytes() == f.to_bytes()
    same_answers(f, cls.load(str(path)))
    same_answers(f, cls.from_bytes(f.to_bytes()))
    same_answers(f, cls.from_bytes(memoryview(f.to_bytes())))
    same_answers(f, pickle.loads(pickle.dumps(f)))


@pytest.mark.parametrize("sequential,concurrent", TWINS, ids=lambda c: c.__name__)
def test_sequential_and_concurrent_twins_share_files(sequential, concurrent, tmp_path):
    a, b = filled(sequential), filled(concurrent)
    assert a.to_bytes() == b.to_bytes()
    same_answers(b, concurrent.from_bytes(a.to_bytes()))
    same_answers(a, sequential.from_bytes(b.to_bytes()))
    path = tmp_path / "f.bloom"
    b.save(str(path))
    same_answers(a, ccf.open(str(path)))  # the sequential class of the file's kind


def test_open_picks_the_scalable_class(tmp_path):
    f = filled(ccf.ScalableBloomFilter)
    path = tmp_path / "s.bloom"
    f.save(str(path))
    same_answers(f, ccf.open(str(path)))


def bloom_corruptions():
    good = ccf.CountingBloomFilter(1000, 0.01).to_bytes()
    yield good, ccf.BloomFilter, "the file holds a counting Bloom filter"
    yield b"", ccf.CountingBloomFilter, "bad magic"
    yield good[:12], ccf.ScalableBloomFilter, "truncated Bloom filter header"
    yield good[:40], ccf.CountingBloomFilter, "truncated Bloom filter header"
    yield good[:-12], ccf.ConcurrentCountingBloomFilter, "truncated Bloom filter"
    flipped = bytearray(good)
    flipped[90] ^= 1
    yield bytes(flipped), ccf.CountingBloomFilter, "payload checksum mismatch"
    flipped = bytearray(good)
    flipped[20] ^= 1
    yield bytes(flipped), ccf.CountingBloomFilter, "header checksum mismatch"
    yield good[:8] + (9).to_bytes(4, "little") + good[12:], ccf.BloomFilter, "format version 9"
    scalable = ccf.ScalableBloomFilter(10).to_bytes()
    yield scalable[:30], ccf.ScalableBloomFilter, "truncated scalable Bloom filter header"
    yield scalable, ccf.BlockedBloomFilter, "the file holds a scalable Bloom filter"
    yield good, ccf.ScalableBloomFilter, "the file holds a counting Bloom filter"


@pytest.mark.parametrize("data,cls,message", list(bloom_corruptions()))
def test_corrupt_bloom_files_raise_format_error(tmp_path, data, cls, message):
    with pytest.raises(ccf.FormatError, match=message):
        cls.from_bytes(data)
    path = tmp_path / "bad.bloom"
    path.write_bytes(data)
    with pytest.raises(ccf.FormatError, match=message):
        cls.load(str(path))
    with pytest.raises(ccf.FormatError):
        pickle.loads(pickle.dumps(cls(10))[:-1].replace(b"CCFBLOOM", b"XXXXXXXX") + b".")


@pytest.mark.parametrize("name,make,count", [
    ("standard", lambda: ccf.BloomFilter(24, bits_per_item=8), 12),
    ("blocked", lambda: ccf.BlockedBloomFilter(24, bits_per_item=8), 12),
    ("counting", lambda: ccf.CountingBloomFilter(24, bits_per_item=16), 12),
    ("scalable", lambda: ccf.ScalableBloomFilter(4, 0.01, 2), 20),
])
def test_python_writes_the_bytes_cpp_writes(name, make, count):
    """fuzz/make_corpus.cpp fills each filter with the keys 1..count and saves it: Python's
    filter of the same shape and keys writes the same bytes, and ccf.open reads the C++ file."""
    path = CPP_CORPUS / f"{name}.bloom"
    if not path.exists():
        pytest.skip(f"no C++-written Bloom files in this tree ({path} is absent)")
    f = make()
    for key in range(1, count + 1):
        assert f.add(key)
    assert f.to_bytes() == path.read_bytes()
    loaded = ccf.open(str(path))
    assert type(loaded) is type(f) and len(loaded) == len(f)
    assert all(key in loaded for key in range(1, count + 1))
