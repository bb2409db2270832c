"""Files: round trips Python <-> C++ (the ccf tool, the mapped view) for every file class,
to_bytes/from_bytes, pickling, and every kind of bad file raising ccf.FormatError."""

import pickle
import subprocess

import numpy as np
import pytest

import ccf
from conftest import FILE_CLASSES

MEMBERS = np.arange(0, 60_000, 2, dtype=np.uint64)
OTHERS = np.arange(1, 60_000, 2, dtype=np.uint64)


def filled(cls, **kwargs):
    f = cls(40_000, **kwargs)
    assert f.add_many(MEMBERS) == len(MEMBERS)
    f.add("a string key")
    return f


def same_answers(a, b):
    assert len(a) == len(b)
    assert a.contains_many(MEMBERS).all() and b.contains_many(MEMBERS).all()
    assert (a.contains_many(OTHERS) == b.contains_many(OTHERS)).all()
    assert "a string key" in b


@pytest.mark.parametrize("cls", FILE_CLASSES)
def test_save_load_bytes_and_pickle_round_trips(cls, tmp_path):
    f = filled(cls)
    path = tmp_path / "f.ccf"
    f.save(str(path))
    same_answers(f, cls.load(str(path)))
    same_answers(f, cls.from_bytes(f.to_bytes()))
    same_answers(f, cls.from_bytes(memoryview(f.to_bytes())))
    same_answers(f, pickle.loads(pickle.dumps(f)))
    assert path.read_bytes() == f.to_bytes()


def test_files_move_between_the_filter_classes(tmp_path):
    path = str(tmp_path / "f.ccf")
    filled(ccf.ConcurrentCuckooFilter).save(path)
    same_answers(ccf.ConcurrentCuckooFilter.load(path), ccf.CuckooFilter.load(path))
    same_answers(ccf.CuckooFilter.load(path), ccf.LockFreeCuckooFilter.load(path))
    assert isinstance(ccf.open(path), ccf.CuckooFilter)


def test_a_grown_lock_free_filter_opens_as_one(tmp_path):
    f = ccf.LockFreeCuckooFilter(1000)
    assert f.add_many(MEMBERS) == len(MEMBERS)  # 30x its capacity: it grew
    path = str(tmp_path / "grown.ccf")
    f.save(path)
    g = ccf.open(path)
    assert isinstance(g, ccf.LockFreeCuckooFilter)
    assert g.contains_many(MEMBERS).all()
    with pytest.raises(ccf.FormatError, match="load it with LockFreeCuckooFilter<12>"):
        ccf.CuckooFilter.load(path)


@pytest.mark.parametrize("kwargs", [dict(fp_bits=12), dict(fp_bits=16, bucket_size=8),
                                    dict(fp_bits=4, bucket_size=2)])
def test_mapped_view_answers_as_the_filter(tmp_path, kwargs):
    f = filled(ccf.CuckooFilter, **kwargs) if kwargs.get("fp_bits") != 4 else None
    if f is None:  # 4-bit fingerprints: a small filter that parks an item in its victim entry
        f = ccf.CuckooFilter(64, **kwargs)
        while f.add_many(np.arange(len(f), len(f) + 1, dtype=np.uint64)) == 1:
            pass
    path = str(tmp_path / "f.ccf")
    f.save(path)
    view = ccf.open(path, mmap=True)
    assert isinstance(view, ccf.MappedCuckooFilter)
    assert len(view) == len(f) and view.fp_bits == f.fp_bits and view.capacity == f.capacity
    keys = np.arange(0, 70_000, dtype=np.uint64)
    assert (view.contains_many(keys) == f.contains_many(keys)).all()
    assert [k in view for k in range(200)] == [k in f for k in range(200)]
    view.verify()


def test_mapped_view_refuses_semi_sorted_files_and_finds_corruption(tmp_path):
    path = tmp_path / "semi.ccf"
    ccf.CuckooFilter(100, semi_sorted=True).save(str(path))
    with pytest.raises(ccf.FormatError, match="packed layouts only"):
        ccf.open(str(path), mmap=True)
    data = bytearray(filled(ccf.CuckooFilter).to_bytes())
    data[200] ^= 0xFF  # inside the payload: the header still holds
    path.write_bytes(bytes(data))
    view = ccf.open(str(path), mmap=True)
    view.contains_many(OTHERS)  # answers may change; reads stay inside the file
    with pytest.raises(ccf.FormatError, match="payload checksum mismatch"):
        view.verify()
    with pytest.raises(ccf.FormatError, match="payload checksum mismatch"):
        ccf.CuckooFilter.from_bytes(bytes(data))


def corruptions():
    good = ccf.CuckooFilter(1000).to_bytes()
    yield b"", "bad magic"
    yield b"PK\x03\x04 a zip file, not a filter", "bad magic"
    yield good[:50], "truncated cuckoo filter header"
    yield good[:-1], "truncated cuckoo filter"
    flipped = bytearray(good)
    flipped[30] ^= 1
    yield bytes(flipped), "header checksum mismatch"
    yield good[:8] + (9).to_bytes(4, "little") + good[12:], "format version 9"


@pytest.mark.parametrize("data,message", list(corruptions()))
@pytest.mark.parametrize("cls", FILE_CLASSES)
def test_corrupt_files_raise_format_error(tmp_path, cls, data, message):
    with pytest.raises(ccf.FormatError, match=message):
        cls.from_bytes(data)
    path = tmp_path / "bad.ccf"
    path.write_bytes(data)
    with pytest.raises(ccf.FormatError, match=message):
        cls.load(str(path))
    with pytest.raises(ccf.FormatError, match=message):
        ccf.open(str(path), mmap=True)
    assert issubclass(ccf.FormatError, ValueError)
    with pytest.raises(ccf.FormatError):
        pickle.loads(pickle.dumps(cls(10))[:-1].replace(b"CCFCUCKO", b"XXXXXXXX") + b".")


def test_missing_files_raise_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        ccf.CuckooFilter.load(str(tmp_path / "missing.ccf"))
    with pytest.raises(OSError):
        ccf.open(str(tmp_path / "missing.ccf"), mmap=True)
    with pytest.raises(OSError):
        ccf.CuckooFilter(10).save(str(tmp_path / "no" / "dir" / "f.ccf"))


def run(cli, *args, stdin=None):
    return subprocess.run([cli, *args], input=stdin, capture_output=True, check=False)


def test_the_cli_reads_what_python_writes(cli, tmp_path):
    f = ccf.ConcurrentCuckooFilter(1000)
    words = [f"user:{i}" for i in range(500)]
    f.update(words)
    path = str(tmp_path / "py.ccf")
    f.save(path)
    info = run(cli, "info", path)
    assert info.returncode == 0 and b"500" in info.stdout, info
    query = run(cli, "query", path, "--count", stdin="\n".join(words).encode())
    assert query.returncode == 0 and query.stdout.strip() == b"500", query
    ints = np.arange(1000, 1500, dtype=np.uint64)
    g = ccf.CuckooFilter(1000)
    g.add_many(ints)
    g.save(path)
    query = run(cli, "query", path, "--count", "--binary-u64", stdin=ints.astype("<u8").tobytes())
    assert query.stdout.strip() == b"500", query


def test_python_reads_what_the_cli_writes(cli, tmp_path):
    keys = tmp_path / "keys.txt"
    words = [f"w{i}" for i in range(2000)]
    keys.write_text("\n".join(words) + "\n")
    path = str(tmp_path / "cli.ccf")
    built = run(cli, "build", str(keys), "-o", path, "--fp-bits", "16", "--threads", "2")
    assert built.returncode == 0, built
    for f in (ccf.open(path), ccf.ConcurrentCuckooFilter.load(path), ccf.open(path, mmap=True)):
        assert len(f) == 2000 and f.fp_bits == 16
        assert f.contains_many(words).all()
        assert f.contains_many(np.array(words, dtype="S")).all()
