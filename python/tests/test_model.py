"""Every class against a Python model: random adds, discards and lookups on tiny tables with
small fingerprints. A filter may answer "maybe" for anything, but never "no" for a key it holds."""

import collections

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ccf
from conftest import TINY_FILTERS, filter_id

keys = st.one_of(st.integers(0, 40), st.binary(max_size=3), st.text(max_size=2))
operations = st.lists(st.tuples(st.sampled_from(["add", "discard", "batch"]), keys), max_size=300)


@pytest.mark.parametrize("case", TINY_FILTERS, ids=filter_id)
@settings(max_examples=40, deadline=None)
@given(ops=operations, capacity=st.integers(1, 64))
def test_no_false_negative_against_a_counter(case, ops, capacity):
    cls, kwargs = case
    f = cls(capacity, **kwargs)
    model = collections.Counter()
    deletes = hasattr(f, "discard")
    for op, key in ops:
        if op == "add":
            if f.add(key):
                model[key] += 1
        elif op == "discard" and deletes and model[key] > 0:
            f.remove(key)  # held, so never KeyError
            model[key] -= 1
        elif op == "batch":
            held = [k for k, n in model.items() if n > 0 and isinstance(k, int)]
            if held:
                assert f.contains_many(held).all()
        for k, n in model.items():
            if n > 0:
                assert k in f, (k, n)
    assert len(f) == sum(model.values())


@pytest.mark.parametrize("case", TINY_FILTERS, ids=filter_id)
def test_a_full_filter_refuses_without_losing_an_item(case):
    cls, kwargs = case
    f = cls(8, **kwargs)
    stored = [k for k in range(5000) if f.add(k)]
    assert f.contains_many(stored).all()
    assert len(f) == len(stored)


def test_discard_and_remove_follow_set_semantics():
    f = ccf.CuckooFilter(100)
    f.add("k")
    f.discard("k")
    f.discard("k")  # absent: nothing happens
    with pytest.raises(KeyError):
        f.remove("k")
    assert "k" not in f


def test_bloom_filters_without_deletion_have_no_discard():
    assert not hasattr(ccf.BloomFilter(10), "discard")
    assert not hasattr(ccf.BlockedBloomFilter(10), "remove")
    assert hasattr(ccf.CountingBloomFilter(10), "discard")


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["set", "insert", "del", "get"]),
                              st.integers(-5, 5), st.integers(-2**63, 2**63 - 1)), max_size=200))
@pytest.mark.parametrize("growth", [2.0, 1.125])
def test_cuckoo_map_against_a_dict(ops, growth):
    m = ccf.CuckooMap(4, growth=growth)
    model = {}
    for op, key, value in ops:
        if op == "set":
            m[key] = value
            model[key] = value
        elif op == "insert":
            assert m.insert(key, value) == (key not in model)
            model.setdefault(key, value)
        elif op == "del":
            if key in model:
                del m[key]
                del model[key]
            else:
                with pytest.raises(KeyError):
                    del m[key]
        else:
            assert m.get(key) == model.get(key)
            assert (key in m) == (key in model)
    assert len(m) == len(model)
    for key, value in model.items():
        assert m[key] == value


def test_cuckoo_map_refuses_a_growth_factor_outside_its_range():
    for growth in (1.0, 2.5, float("nan")):
        with pytest.raises(ValueError, match="growth factor must lie in"):
            ccf.CuckooMap(16, growth=growth)
