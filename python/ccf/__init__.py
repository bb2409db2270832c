"""ccf: concurrent cuckoo filters, Bloom filters and a concurrent hash map, from the C++ library.

Keys are ``int`` (taken modulo 2**64, so int64 and uint64 arrays agree with ints), ``bytes``
and ``str`` (hashed as UTF-8). Batch calls take NumPy arrays of integers or fixed-width bytes
without copying and release the GIL. docs/python.md has the whole guide.
"""

from ._ccf import (
    BlockedBloomFilter,
    BloomFilter,
    ConcurrentBlockedBloomFilter,
    ConcurrentBloomFilter,
    ConcurrentCountingBloomFilter,
    ConcurrentCuckooFilter,
    CountingBloomFilter,
    CuckooFilter,
    CuckooMap,
    FormatError,
    FullError,
    LockFreeCuckooFilter,
    MappedCuckooFilter,
    ScalableBloomFilter,
)

__all__ = [
    "BlockedBloomFilter",
    "BloomFilter",
    "ConcurrentBlockedBloomFilter",
    "ConcurrentBloomFilter",
    "ConcurrentCountingBloomFilter",
    "ConcurrentCuckooFilter",
    "CountingBloomFilter",
    "CuckooFilter",
    "CuckooMap",
    "FormatError",
    "FullError",
    "LockFreeCuckooFilter",
    "MappedCuckooFilter",
    "ScalableBloomFilter",
    "open",
]

_LEVELS_FORMAT_VERSION = 2  # a grown lock-free filter (docs/file-format.md)
# The Bloom format's kind field (offset 12) -> the class that loads it (docs/file-format.md).
_BLOOM_KINDS = {1: BloomFilter, 2: BlockedBloomFilter, 3: CountingBloomFilter,
                4: ScalableBloomFilter}


def open(path, mmap=False):  # noqa: A001 -- the name the API promises, as io.open
    """Opens a filter file written by Python, C++ or the ccf tool.

    With ``mmap=True``: a read-only :class:`MappedCuckooFilter` served from the file mapped into
    memory (only the header is read and checked now; pages fault in as lookups touch them;
    cuckoo filter files only). Otherwise the whole file is loaded: a :class:`LockFreeCuckooFilter`
    for a grown lock-free filter's file (format version 2), the sequential Bloom class of a
    Bloom filter's file (:class:`BloomFilter`, :class:`BlockedBloomFilter`,
    :class:`CountingBloomFilter`; load it with the Concurrent* class for many threads), a
    :class:`ScalableBloomFilter` for a scalable one's, else a :class:`CuckooFilter`. Raises
    ccf.FormatError for a file that is not a filter, naming what is wrong.
    """
    if mmap:
        return MappedCuckooFilter(path)
    with builtins_open(path, "rb") as f:
        header = f.read(16)
    if len(header) == 16 and header[:8] == b"CCFBLOOM":
        cls = _BLOOM_KINDS.get(int.from_bytes(header[12:16], "little"), BloomFilter)
        return cls.load(path)  # an unknown kind: BloomFilter's load names it
    if len(header) >= 12 and header[:8] == b"CCFCUCKO" and \
            int.from_bytes(header[8:12], "little") == _LEVELS_FORMAT_VERSION:
        return LockFreeCuckooFilter.load(path)
    return CuckooFilter.load(path)


def builtins_open(*args, **kwargs):
    """The built-in open(), which this module's open() shadows."""
    import builtins

    return builtins.open(*args, **kwargs)
