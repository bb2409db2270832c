"""Shared fixtures: every filter class with a small and a tiny shape."""

import os
import tempfile

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

import ccf

# (class, keyword arguments) for tiny tables with small fingerprints: fills, kicks, the victim
# entry and (lock-free) growth all happen within a few hundred operations.
TINY_FILTERS = [
    (ccf.CuckooFilter, dict(fp_bits=4, bucket_size=2)),
    (ccf.CuckooFilter, dict(fp_bits=8, bucket_size=4)),
    (ccf.CuckooFilter, dict(fp_bits=8, bucket_size=4, semi_sorted=True)),
    (ccf.ConcurrentCuckooFilter, dict(fp_bits=8)),
    (ccf.LockFreeCuckooFilter, dict(fp_bits=4)),
    (ccf.BloomFilter, dict(bits_per_item=4)),
    (ccf.BlockedBloomFilter, dict(bits_per_item=4)),
    (ccf.CountingBloomFilter, dict(bits_per_item=8)),
    (ccf.ConcurrentBloomFilter, dict(bits_per_item=4)),
    (ccf.ConcurrentBlockedBloomFilter, dict(bits_per_item=4)),
    (ccf.ConcurrentCountingBloomFilter, dict(bits_per_item=8)),
]

FILE_CLASSES = [ccf.CuckooFilter, ccf.ConcurrentCuckooFilter, ccf.LockFreeCuckooFilter]


def filter_id(case):
    cls, kwargs = case
    return cls.__name__ + "".join(f"-{k}={v}" for k, v in kwargs.items())


@pytest.fixture
def cli():
    """The ccf tool (CCF_TOOL, set by the ctest test), or skip."""
    tool = os.environ.get("CCF_TOOL", "")
    if not tool or not os.path.exists(tool):
        pytest.skip("the ccf tool is not built (CCF_TOOL unset)")
    return tool

# Hypothesis keeps no example database (it would write into the source tree) and sets no
# per-example deadline: a busy CI machine must not fail a correct test by its clock.
settings.register_profile("ccf", database=None, deadline=None)
settings.load_profile("ccf")
# Its other files (a Unicode table cache) go to the temporary directory, not .hypothesis/ in the
# directory pytest runs from, unless HYPOTHESIS_STORAGE_DIRECTORY says where.
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "ccf-hypothesis"))
