"""Keys and batches: ints, bytes, str and NumPy arrays agree; bad input raises a clear error."""

import numpy as np
import pytest

import ccf


def test_int_keys_are_taken_modulo_2_64():
    f = ccf.CuckooFilter(1000)
    f.add(-1)
    assert 2**64 - 1 in f
    assert f.contains_many(np.array([-1], dtype=np.int64))[0]
    assert f.contains_many(np.array([2**64 - 1], dtype=np.uint64))[0]
    with pytest.raises(ValueError, match=r"\[-2\*\*63, 2\*\*64\)"):
        f.add(2**64)
    with pytest.raises(ValueError):
        f.add(-2**63 - 1)


def test_str_keys_are_their_utf8_bytes():
    f = ccf.CuckooFilter(1000)
    f.add("grüße")
    assert "grüße".encode() in f
    assert np.str_("grüße") in f


def test_batches_agree_with_single_keys():
    f = ccf.CuckooFilter(10_000)
    ints = np.arange(0, 3000, 3, dtype=np.uint64)
    assert f.add_many(ints) == len(ints)
    words = np.array([b"alpha", b"be", b"c"], dtype="S8")  # stored NUL-padded, keys without NULs
    assert f.add_many(words) == 3
    assert all(k in f for k in (b"alpha", b"be", "c"))
    assert f.contains_many(["alpha", "be", "c"]).all()
    assert f.contains_many(np.array(["alpha", "be"])).all()  # 'U' arrays: UTF-8
    assert f.contains_many(ints.astype(np.int32)).all()  # other integer types converted
    assert f.contains_many(ints[::-2]).all()  # a strided view (copied to contiguous)
    hits = f.contains_many(np.arange(1, 3000, 3, dtype=np.uint64))
    assert hits.dtype == np.bool_ and hits.shape == (1000,)
    assert hits.sum() < 100  # 12-bit fingerprints: a false positive rate of a few per mille


def test_add_many_stops_at_the_first_full():
    f = ccf.CuckooFilter(16, fp_bits=8)
    keys = np.arange(10_000, dtype=np.uint64)
    stored = f.add_many(keys)
    assert 0 < stored < len(keys)
    assert len(f) == stored
    assert f.contains_many(keys[:stored]).all()
    with pytest.raises(ccf.FullError):
        ccf.CuckooFilter(16, fp_bits=8).update(keys)


@pytest.mark.parametrize("bad", [1.5, None, object(), [1, "a"]])
def test_bad_keys_raise_type_error(bad):
    f = ccf.CuckooFilter(100)
    with pytest.raises(TypeError):
        f.add_many([bad]) if not isinstance(bad, list) else f.add_many(bad)


def test_bad_arrays_and_arguments_raise_value_error():
    f = ccf.CuckooFilter(100)
    with pytest.raises(TypeError, match="dtype"):
        f.contains_many(np.zeros(3, dtype=np.float64))
    with pytest.raises(ValueError, match="1-D"):
        f.contains_many(np.zeros((2, 2), dtype=np.uint64))
    with pytest.raises(ValueError, match="capacity must be at least 1"):
        ccf.CuckooFilter(0)
    with pytest.raises(ValueError, match="unsupported shape"):
        ccf.CuckooFilter(100, fp_bits=7)
    with pytest.raises(ValueError, match="fpr must be in"):
        ccf.CuckooFilter(100, 1.5)
    with pytest.raises(ValueError, match="not both"):
        ccf.CuckooFilter(100, 0.01, fp_bits=8)
    with pytest.raises(ValueError, match="bits_per_item"):
        ccf.BloomFilter(100, bits_per_item=0)
    with pytest.raises(ValueError, match="CuckooMap keys and values"):
        ccf.CuckooMap()[2**63] = 1


def test_fpr_picks_the_fingerprint_width():
    assert ccf.CuckooFilter(1000, 0.01).fp_bits == 12  # 8 / 2**12 = 0.002 <= 0.01 < 8 / 2**8
    assert ccf.ConcurrentCuckooFilter(1000, 2e-4).fp_bits == 16  # 8 / 2**16 = 1.2e-4
    with pytest.raises(ValueError, match="needs more fingerprint bits than 16"):
        ccf.ConcurrentCuckooFilter(1000, 1e-4)
    assert ccf.LockFreeCuckooFilter(1000, 0.05).fp_bits == 8
    assert ccf.BloomFilter(1000, 0.01).hash_count == 7


def test_the_stub_names_every_public_class_and_method():
    import ast
    import pathlib

    stub = ast.parse((pathlib.Path(ccf.__file__).with_name("__init__.pyi")).read_text())
    stubbed = {node.name: {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
               for node in stub.body if isinstance(node, ast.ClassDef)}
    bases = {node.name: [b.id for b in node.bases if isinstance(b, ast.Name)]
             for node in stub.body if isinstance(node, ast.ClassDef)}

    def methods(name):
        return stubbed.get(name, set()).union(*(methods(b) for b in bases.get(name, [])))

    for name in ccf.__all__:
        obj = getattr(ccf, name)
        if not isinstance(obj, type) or issubclass(obj, Exception):
            continue
        public = {m for m in dir(obj) if not m.startswith("_") or m in
                  ("__contains__", "__len__", "__getitem__", "__setitem__", "__delitem__")}
        assert public <= methods(name), (name, public - methods(name))
        for m in public:
            assert getattr(obj, m).__doc__, (name, m)  # every method has a docstring
