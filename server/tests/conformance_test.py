#!/usr/bin/python3
"""Conformance suite for `ccf serve`, the RESP2/RESP3 server of RedisBloom's CF.* commands.

Every numbered conformance case of the CF.* command contract (RedisBloom 8's behaviour; see
docs/server.md) is one test, named test_case_NN_..., with the case's text as its docstring, so
a failure names the contract case it broke. Around
them: ccf's documented deviations (BUCKETSIZE 1, 2, 4 only; EXPANSION 0 or 1 only), a
concurrency test, a growth-and-delete test, protocol robustness, and smoke tests through
redis-py and redis-cli.

Usage: /usr/bin/python3 conformance_test.py PATH/TO/ccf [unittest options]
       /usr/bin/python3 conformance_test.py --redis-module PATH/TO/ccf-redis.so [...]

With --redis-module the CF.* cases (MODULE_CASES) run against Debian's redis-server with the
module loaded, on a free loopback port: the same contract through the other front end. Redis
answers the generic commands itself, and the module's type is named ccfCuckoo.

Each test class starts its own server (`ccf serve --bind 127.0.0.1 --port 0 --threads 2`),
reads its `listening 127.0.0.1:PORT` line, and stops it (SIGTERM, then SIGKILL after 5 s)
when the class is done, whatever happened. Every case begins with FLUSHALL on a fresh RESP2
connection. Replies are parsed by the small RESP client below, which keeps the RESP type
visible: compare them with assertReply, which checks types exactly (RESP3 `#t` is True,
never the integer 1; a simple string is never a bulk string).
"""

import atexit
import dataclasses
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BINARY = os.environ.get("CCF_BINARY", "")  # set from argv[1] in __main__
MODULE = ""  # --redis-module: test ccf-redis.so inside redis-server instead
TYPE_NAME = "MBbloomCF"  # what TYPE answers for a filter ("ccfCuckoo" in the module)

STARTUP_TIMEOUT_S = 10
STOP_TIMEOUT_S = 5
SOCKET_TIMEOUT_S = 5.0
# For a SAVE that writes, or a start that loads, a snapshot of tens of megabytes: under
# ThreadSanitizer on a loaded 2-core machine each has taken longer than the usual timeouts.
LARGE_SNAPSHOT_TIMEOUT_S = 60
MAX_LINE = 1 << 20         # longest reply header line the client accepts
MAX_BULK = 512 << 20       # longest bulk string the client accepts
MAX_DEPTH = 32             # deepest nesting of aggregate replies the client accepts


# ---------------------------------------------------------------------------------------------
# Reply values. Integers are int, bulk strings bytes, nulls None, arrays list, RESP3 booleans
# bool; everything else has its own type so that no two RESP types compare equal.

# Frozen dataclasses: equal only to their own type with equal fields, hashable, readable repr.

@dataclasses.dataclass(frozen=True)
class Simple:
    """A simple string (`+OK`)."""
    text: str


@dataclasses.dataclass(frozen=True)
class Err:
    """An error reply; text is everything after the '-' (or a RESP3 blob error's body)."""
    text: str


@dataclasses.dataclass(frozen=True)
class Verbatim:
    """A RESP3 verbatim string (`=15\\r\\ntxt:Some string`)."""
    fmt: bytes
    data: bytes


@dataclasses.dataclass(frozen=True)
class BigNumber:
    """A RESP3 big number (`(123`)."""
    value: int


@dataclasses.dataclass(frozen=True)
class Map:
    """A RESP3 map, kept as an ordered list of (key, value) pairs."""
    pairs: list

    def __post_init__(self):
        object.__setattr__(self, "pairs", list(self.pairs))

    def keys(self):
        return [k for k, _ in self.pairs]


@dataclasses.dataclass(frozen=True)
class RespSet:
    """A RESP3 set (`~`), kept in wire order."""
    items: list

    def __post_init__(self):
        object.__setattr__(self, "items", list(self.items))


@dataclasses.dataclass(frozen=True)
class Push:
    """A RESP3 push message (`>`)."""
    items: list

    def __post_init__(self):
        object.__setattr__(self, "items", list(self.items))


class Match:
    """An expected value given by a predicate instead of an exact value (e.g. Size > 0)."""

    def __init__(self, description, predicate):
        self.description, self.predicate = description, predicate

    def __repr__(self):
        return f"<{self.description}>"


OK = Simple("OK")
PONG = Simple("PONG")
POSITIVE_INT = Match("positive integer", lambda v: type(v) is int and v > 0)
ANY_INT = Match("integer", lambda v: type(v) is int)
ANY_BULK = Match("bulk string", lambda v: type(v) is bytes)


def as_text(value):
    """The text of a name-like reply element (bulk or simple string), else None."""
    if type(value) is bytes:
        return value.decode("utf-8", "replace")
    if type(value) is Simple:
        return value.text
    return None


# ---------------------------------------------------------------------------------------------
# Error texts of the contract (§1, §4) and of ccf's documented deviations.

E_EXISTS = Err("ERR item exists")
E_NOTFOUND = Err("ERR not found")
E_TYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
BAD_CAPACITY = Err("Bad capacity")
CAPACITY_RANGE = Err("Capacity must be in the range [2 * BUCKETSIZE, 1073741824]")
INSERT_CAPACITY_RANGE = Err("Capacity must be in the range [cf-bucket-size * 2, 1073741824]")
MAXIT_RANGE = Err("MAXITERATIONS: value must be in the range [1, 65535]")
MAXIT_PARSE = Err("Couldn't parse MAXITERATIONS")
BUCKETSIZE_RANGE = Err("BUCKETSIZE: value must be in the range [1, 255]")
BUCKETSIZE_PARSE = Err("Couldn't parse BUCKETSIZE")
EXPANSION_RANGE = Err("EXPANSION: value must be in the range [0, 32768]")
EXPANSION_PARSE = Err("Couldn't parse EXPANSION")
FILTER_FULL = Err("Filter is full")
MAX_EXPANSIONS = Err("Maximum expansions reached")
DEL_NOT_FOUND = Err("Not found")
UNKNOWN_ARGUMENT = Err("Unknown argument received")
INVALID_POSITION = Err("Invalid position")
INVALID_HEADER = Err("Invalid header")
CANNOT_CREATE = Err("Couldn't create filter!")
CANNOT_LOAD = Err("Couldn't load chunk!")
NOAUTH = Err("NOAUTH Authentication required.")
WRONGPASS = Err("WRONGPASS invalid username-password pair or user is disabled.")

# ccf serve refuses this after the contract's range checks (a documented deviation).
CCF_BUCKETSIZE_REFUSED = Err(
    "BUCKETSIZE: ccf supports 1, 2 or 4 slots per bucket (3 is rounded up to 4)")

SKIP_BUCKETSIZE = "BUCKETSIZE > 4 is not supported by ccf serve (1, 2 or 4 only)"


def arity(name):
    """E-ARITY for the lower-case command name."""
    return Err(f"ERR wrong number of arguments for '{name}' command")


INFO_FIELDS = ("Size", "Number of buckets", "Number of filters", "Number of items inserted",
               "Number of items deleted", "Bucket size", "Expansion rate", "Max iterations")


def info_reply(buckets, filters, items, deleted, bucket_size, expansion, max_iterations,
               size=POSITIVE_INT):
    """The exact RESP2 CF.INFO reply: 16 elements, names as simple strings, values integers."""
    values = (size, buckets, filters, items, deleted, bucket_size, expansion, max_iterations)
    reply = []
    for name, value in zip(INFO_FIELDS, values):
        reply += [Simple(name), value]
    return reply


def info_map(*args, **kwargs):
    """The exact RESP3 CF.INFO reply: the same pairs as a map, in the same order."""
    flat = info_reply(*args, **kwargs)
    return Map(zip(flat[0::2], flat[1::2]))


# ---------------------------------------------------------------------------------------------
# A raw RESP client.

class ConnectionClosed(Exception):
    """The server closed the connection (EOF or reset)."""


class ProtocolViolation(Exception):
    """The server sent bytes that are not a RESP reply."""


def encode_arg(arg):
    if isinstance(arg, bytes):
        return arg
    if isinstance(arg, str):
        return arg.encode("utf-8")
    if isinstance(arg, int) and not isinstance(arg, bool):
        return str(arg).encode("ascii")
    raise TypeError(f"cannot send {arg!r}")


def encode_command(args):
    """A command as a RESP array of bulk strings."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = encode_arg(arg)
        parts += [b"$%d\r\n" % len(data), data, b"\r\n"]
    return b"".join(parts)


def show_command(args):
    shown = []
    for arg in args:
        data = encode_arg(arg)
        text = data.decode("utf-8", "replace")
        shown.append(text if text and re.fullmatch(r"[\x21-\x7e]+", text) and len(text) <= 40
                     else repr(data[:40]))
    return " ".join(shown)


def info_fields(conn, *sections):
    """INFO [SECTION ...] as {field: value} (bytes), with the section headers it had."""
    reply = conn.call("INFO", *sections)
    text = reply.data if isinstance(reply, Verbatim) else reply
    fields, headers = {}, []
    for line in text.split(b"\r\n"):
        if line.startswith(b"# "):
            headers.append(line[2:].decode())
        elif b":" in line:
            name, value = line.split(b":", 1)
            fields[name.decode()] = value
    return fields, headers


class Conn:
    """One client connection: send commands, parse replies with their RESP types kept."""

    def __init__(self, port, timeout=SOCKET_TIMEOUT_S):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    # -- sending --
    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, *args):
        self.send_raw(encode_command(args))

    def call(self, *args):
        """Send one command and return its reply."""
        self.send(*args)
        return self.read_reply()

    def call_slow(self, *args):
        """`call`, waiting up to LARGE_SNAPSHOT_TIMEOUT_S for the reply."""
        self.sock.settimeout(LARGE_SNAPSHOT_TIMEOUT_S)
        try:
            return self.call(*args)
        finally:
            self.sock.settimeout(SOCKET_TIMEOUT_S)

    def pipeline(self, commands):
        """Send every command in one write, then read one reply per command, in order."""
        self.send_raw(b"".join(encode_command(tuple(c)) for c in commands))
        return [self.read_reply() for _ in commands]

    # -- receiving --
    def _fill(self):
        try:
            chunk = self.sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError) as e:
            raise ConnectionClosed(str(e)) from e
        if not chunk:
            raise ConnectionClosed("EOF")
        self.buf += chunk

    def _readline(self):
        for _ in range(MAX_LINE + 1):  # every _fill adds at least one byte
            end = self.buf.find(b"\r\n")
            if end >= 0:
                line = bytes(self.buf[:end])
                del self.buf[:end + 2]
                return line
            if len(self.buf) > MAX_LINE:
                raise ProtocolViolation(f"reply line longer than {MAX_LINE} bytes")
            self._fill()
        raise ProtocolViolation("reply line never ended")

    def _read_exact(self, n):
        for _ in range(n + 2):
            if len(self.buf) >= n:
                break
            self._fill()
        if len(self.buf) < n:
            raise ProtocolViolation("short read")
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def _read_blob(self, length_text):
        n = self._int(length_text)
        if n < 0 or n > MAX_BULK:
            raise ProtocolViolation(f"bad blob length {n}")
        data = self._read_exact(n + 2)
        if data[-2:] != b"\r\n":
            raise ProtocolViolation("blob not followed by CRLF")
        return data[:-2]

    @staticmethod
    def _int(text):
        if not re.fullmatch(rb"-?[0-9]+", text):
            raise ProtocolViolation(f"not an integer: {text!r}")
        return int(text)

    def _count(self, text):
        n = self._int(text)
        if n < -1 or n > (1 << 24):
            raise ProtocolViolation(f"bad aggregate length {n}")
        return n

    def read_reply(self, depth=0):
        if depth > MAX_DEPTH:
            raise ProtocolViolation("replies nested too deeply")
        line = self._readline()
        if not line:
            raise ProtocolViolation("empty reply line")
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return Simple(rest.decode("utf-8", "surrogateescape"))
        if kind == b"-":
            return Err(rest.decode("utf-8", "surrogateescape"))
        if kind == b":":
            return self._int(rest)
        if kind == b"$":
            if rest == b"-1":
                return None
            return self._read_blob(rest)
        if kind == b"*":
            n = self._count(rest)
            if n == -1:
                return None
            return [self.read_reply(depth + 1) for _ in range(n)]
        if kind == b"_":
            if rest:
                raise ProtocolViolation(f"bad null {line!r}")
            return None
        if kind == b"#":
            if rest not in (b"t", b"f"):
                raise ProtocolViolation(f"bad boolean {line!r}")
            return rest == b"t"
        if kind == b",":
            return float(rest.decode("ascii"))
        if kind == b"(":
            return BigNumber(self._int(rest))
        if kind == b"=":
            data = self._read_blob(rest)
            if len(data) < 4 or data[3:4] != b":":
                raise ProtocolViolation(f"bad verbatim string {data[:8]!r}")
            return Verbatim(data[:3].decode("ascii", "replace"), data[4:])
        if kind == b"!":
            return Err(self._read_blob(rest).decode("utf-8", "surrogateescape"))
        if kind == b"%":
            n = self._count(rest)
            return Map((self.read_reply(depth + 1), self.read_reply(depth + 1))
                       for _ in range(n))
        if kind == b"~":
            return RespSet(self.read_reply(depth + 1) for _ in range(self._count(rest)))
        if kind == b">":
            return Push(self.read_reply(depth + 1) for _ in range(self._count(rest)))
        if kind == b"|":  # attributes: read and drop, the reply follows
            for _ in range(self._count(rest)):
                self.read_reply(depth + 1)
                self.read_reply(depth + 1)
            return self.read_reply(depth)
        raise ProtocolViolation(f"unknown reply type in {line[:40]!r}")

    def closed_by_server(self, timeout=SOCKET_TIMEOUT_S):
        """True if the server closes the connection within `timeout` without sending more."""
        if self.buf:
            return False
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(4096)
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
        finally:
            self.sock.settimeout(SOCKET_TIMEOUT_S)
        if chunk:
            self.buf += chunk
            return False
        return True


# ---------------------------------------------------------------------------------------------
# The server under test.

_running_servers = set()


def _die_with_parent():
    """In the child before exec: SIGKILL it when this test process dies, even by SIGKILL
    (e.g. a ctest timeout), so no server outlives the test. Linux only; harmless elsewhere."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Server:
    """`ccf serve` as a subprocess on a loopback port chosen by the server (--port 0)."""

    def __init__(self, password=None, extra_args=(), startup_timeout_s=STARTUP_TIMEOUT_S):
        self.password = password
        self.extra_args = list(extra_args)
        self.startup_timeout_s = startup_timeout_s
        self.proc = None
        self.port = None

    def start(self):
        if MODULE:
            return self._start_redis()
        if not BINARY:
            raise RuntimeError("no ccf binary given (argv[1] or CCF_BINARY)")
        # The child writes its own descriptors; we read through separate ones, so no file
        # offset is shared between the two.
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ccf-serve-")
        self.out_path = os.path.join(self.tmpdir.name, "stdout")
        self.err_path = os.path.join(self.tmpdir.name, "stderr")
        args = [BINARY, "serve", "--bind", "127.0.0.1", "--port", "0", "--threads", "2"]
        if self.password is not None:
            args += ["--requirepass", self.password]
        args += self.extra_args
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                         preexec_fn=_die_with_parent)
        _running_servers.add(self)
        line = None
        deadline = time.monotonic() + self.startup_timeout_s
        for _ in range(self.startup_timeout_s * 100):  # 10 ms steps
            with open(self.out_path, "rb") as out:
                data = out.read()
            if b"\n" in data:
                line = data.split(b"\n", 1)[0]
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        if line is None:
            rc = self.proc.poll()
            why = f"exited with {rc}" if rc is not None else \
                f"printed no line within {self.startup_timeout_s} s"
            self.stop()
            message = f"{' '.join(args)} {why}; stderr: {self.stderr_tail()}"
            self.cleanup()
            raise RuntimeError(message)
        m = re.fullmatch(rb"listening 127\.0\.0\.1:([0-9]+)", line)
        if not m:
            self.cleanup()
            raise RuntimeError(f"first stdout line is {line!r}, want 'listening 127.0.0.1:PORT'")
        self.port = int(m.group(1))
        return self

    def _start_redis(self):
        """redis-server with the module, on a loopback port that was free a moment ago."""
        self.tmpdir = tempfile.TemporaryDirectory(prefix="ccf-redis-")
        self.err_path = os.path.join(self.tmpdir.name, "redis.log")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        args = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
                "--appendonly", "no", "--dir", self.tmpdir.name, "--logfile", self.err_path,
                "--loadmodule", MODULE]
        if self.password is not None:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        _running_servers.add(self)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(64).startswith((b"+PONG", b"-NOAUTH")):
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        message = f"redis-server with {MODULE} did not answer; log: {self.stderr_tail()}"
        self.cleanup()
        raise RuntimeError(message)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stderr_tail(self, limit=2000):
        try:
            with open(self.err_path, "rb") as err:
                return err.read()[-limit:].decode("utf-8", "replace")
        except (OSError, AttributeError):
            return "(unavailable)"

    def stop(self):
        """SIGTERM, then SIGKILL after 5 s. Returns the exit status (None if never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT_S)
        _running_servers.discard(self)
        return self.proc.returncode

    def cleanup(self):
        """stop(), then remove the captured output; fails if a sanitizer reported anything
        (the server runs under ASan and TSan in those builds' CI)."""
        self.stop()
        report = None
        if getattr(self, "tmpdir", None):
            try:
                with open(self.err_path, "rb") as err:
                    text = err.read().decode("utf-8", "replace")
            except OSError:
                text = ""
            match = re.search(r"(WARNING: ThreadSanitizer|ERROR: AddressSanitizer|"
                              r"ERROR: LeakSanitizer|runtime error:).*", text)
            if match:
                report = text[match.start():match.start() + 3000]
            self.tmpdir.cleanup()
            self.tmpdir = None
        if report:
            raise AssertionError(f"the server's sanitizer reported:\n{report}")


@atexit.register
def _kill_leftover_servers():
    for server in list(_running_servers):
        server.stop()


# ---------------------------------------------------------------------------------------------
# Test base classes.

class ServerTest(unittest.TestCase):
    """One server per class; every case starts with FLUSHALL on a fresh RESP2 connection."""

    password = None
    server_args = ()  # more `ccf serve` options for this class's server
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.server = Server(cls.password, extra_args=cls.server_args)
        cls.addClassCleanup(cls.server.cleanup)
        cls.server.start()

    def setUp(self):
        if not self.server.alive():  # a previous case crashed it: that case failed already
            self.server.cleanup()
            self.server.start()
        self._conns = []
        self.addCleanup(self._close_conns)
        self.c = self.connect()
        if self.password is not None:
            self.assertReply(self.c.call("AUTH", self.password), OK)
        self.assertReply(self.c.call("FLUSHALL"), OK)
        if self.password is not None:  # the case gets an unauthenticated connection
            self.c = self.connect()

    def tearDown(self):
        if not self.server.alive():
            self.fail(f"the server exited ({self.server.proc.returncode}) during this case; "
                      f"stderr: {self.server.stderr_tail()}")

    def _close_conns(self):
        for conn in self._conns:
            conn.close()

    def connect(self):
        conn = Conn(self.server.port)
        self._conns.append(conn)
        return conn

    # -- assertions --
    def assertReply(self, actual, expected, what=""):
        """Recursive comparison with exact RESP types (True is not 1, Simple is not bytes)."""
        problem = self._mismatch(actual, expected, "reply")
        if problem:
            prefix = f"{what}: " if what else ""
            self.fail(f"{prefix}{problem}\n  expected: {expected!r}\n  actual:   {actual!r}")

    def _mismatch(self, actual, expected, path):
        if isinstance(expected, Match):
            return None if expected.predicate(actual) else \
                f"{path} is {actual!r}, want a {expected.description}"
        if type(actual) is not type(expected):
            return f"{path} is {type(actual).__name__} {actual!r}, " \
                   f"want {type(expected).__name__} {expected!r}"
        if isinstance(expected, (list, RespSet, Push)):
            a = actual if isinstance(actual, list) else actual.items
            e = expected if isinstance(expected, list) else expected.items
            if len(a) != len(e):
                return f"{path} has {len(a)} elements, want {len(e)}"
            for i, (x, y) in enumerate(zip(a, e)):
                problem = self._mismatch(x, y, f"{path}[{i}]")
                if problem:
                    return problem
            return None
        if isinstance(expected, Map):
            if len(actual.pairs) != len(expected.pairs):
                return f"{path} has {len(actual.pairs)} pairs, want {len(expected.pairs)}"
            for i, ((ak, av), (ek, ev)) in enumerate(zip(actual.pairs, expected.pairs)):
                problem = (self._mismatch(ak, ek, f"{path} key #{i}")
                           or self._mismatch(av, ev, f"{path}[{ek!r}]"))
                if problem:
                    return problem
            return None
        return None if actual == expected else f"{path} is {actual!r}, want {expected!r}"

    def assertCmd(self, conn, expected, *args):
        """Send one command on conn and check its reply exactly."""
        self.assertReply(conn.call(*args), expected, show_command(args))

    def hello3(self, conn):
        """Switch conn to RESP3 ([R3] in the contract)."""
        reply = conn.call("HELLO", "3")
        self.assertIs(type(reply), Map, f"HELLO 3 gave {reply!r}")
        self.assertEqual(hello_fields(reply).get("proto"), 3, f"HELLO 3 gave {reply!r}")

    def info(self, conn, key):
        """CF.INFO (RESP2) checked for shape, names and order; returns {name: value}."""
        reply = conn.call("CF.INFO", key)
        self.assertIs(type(reply), list, f"CF.INFO {key}: {reply!r}")
        self.assertEqual(len(reply), 16, f"CF.INFO {key}: {reply!r}")
        self.assertEqual(reply[0::2], [Simple(n) for n in INFO_FIELDS], f"CF.INFO {key} names")
        for value in reply[1::2]:
            self.assertIs(type(value), int, f"CF.INFO {key}: {reply!r}")
        return dict(zip(INFO_FIELDS, reply[1::2]))

    def assertInfo(self, conn, key, **want):
        """CF.INFO fields by keyword: buckets=, filters=, items=, deleted=, bucket_size=,
        expansion=, max_iterations=, size= (Size is checked > 0 always)."""
        names = {"size": "Size", "buckets": "Number of buckets", "filters": "Number of filters",
                 "items": "Number of items inserted", "deleted": "Number of items deleted",
                 "bucket_size": "Bucket size", "expansion": "Expansion rate",
                 "max_iterations": "Max iterations"}
        got = self.info(conn, key)
        self.assertGreater(got["Size"], 0, "CF.INFO Size")
        for arg, value in want.items():
            self.assertEqual(got[names[arg]], value, f"CF.INFO {key} {names[arg]!r}: {got}")
        return got


def hello_fields(reply):
    """HELLO's reply (RESP3 map or RESP2 flat array) as {name: value}; names as text."""
    if type(reply) is Map:
        pairs = reply.pairs
    elif type(reply) is list and len(reply) % 2 == 0:
        pairs = list(zip(reply[0::2], reply[1::2]))
    else:
        return {}
    return {as_text(k): v for k, v in pairs}


# =============================================================================================
# §10 cases, grouped by command.

class ReserveTest(ServerTest):
    """CF.RESERVE: cases 1-15, and ccf's refusals of BUCKETSIZE > 4 and EXPANSION >= 2."""

    def test_case_01_reserve_and_info(self):
        """`CF.RESERVE f 1000` → OK; CF.INFO f → [Size, >0, Number of buckets, 512, Number of
        filters, 1, items inserted 0, items deleted 0, Bucket size 2, Expansion rate 1,
        Max iterations 20] ([layout]: Size = 1080, not checked)."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1000")
        self.assertCmd(self.c, info_reply(512, 1, 0, 0, 2, 1, 20), "CF.INFO", "f")

    def test_case_02_reserve_twice(self):
        """`CF.RESERVE f 1000` twice → OK, then `ERR item exists`."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1000")
        self.assertCmd(self.c, E_EXISTS, "CF.RESERVE", "f", "1000")

    def test_case_03_bad_capacity(self):
        """`CF.RESERVE f abc` → `Bad capacity`; `CF.RESERVE f 01000` → `Bad capacity`."""
        self.assertCmd(self.c, BAD_CAPACITY, "CF.RESERVE", "f", "abc")
        self.assertCmd(self.c, BAD_CAPACITY, "CF.RESERVE", "f", "01000")

    def test_case_04_capacity_range(self):
        """`CF.RESERVE f 3`, `f 0`, `f -5`, `f 1073741825` → each the capacity range error."""
        for capacity in ("3", "0", "-5", "1073741825"):
            self.assertCmd(self.c, CAPACITY_RANGE, "CF.RESERVE", "f", capacity)
        self.assertCmd(self.c, 0, "EXISTS", "f")

    def test_case_05_capacity_vs_bucketsize(self):
        """`CF.RESERVE f 10 BUCKETSIZE 8` → capacity range error; `CF.RESERVE g 4` → OK;
        `CF.RESERVE h 2 BUCKETSIZE 1` → OK."""
        self.assertCmd(self.c, CAPACITY_RANGE, "CF.RESERVE", "f", "10", "BUCKETSIZE", "8")
        self.assertCmd(self.c, OK, "CF.RESERVE", "g", "4")
        self.assertCmd(self.c, OK, "CF.RESERVE", "h", "2", "BUCKETSIZE", "1")

    def test_case_06_bucketsize_range(self):
        """`CF.RESERVE f 100 BUCKETSIZE 0` and `256` → BUCKETSIZE range error; `x` → parse
        error."""
        self.assertCmd(self.c, BUCKETSIZE_RANGE, "CF.RESERVE", "f", "100", "BUCKETSIZE", "0")
        self.assertCmd(self.c, BUCKETSIZE_RANGE, "CF.RESERVE", "f", "100", "BUCKETSIZE", "256")
        self.assertCmd(self.c, BUCKETSIZE_PARSE, "CF.RESERVE", "f", "100", "BUCKETSIZE", "x")

    def test_case_07_maxiterations_range(self):
        """`CF.RESERVE f 100 MAXITERATIONS 0` and `65536` → range error; `x` → parse error."""
        self.assertCmd(self.c, MAXIT_RANGE, "CF.RESERVE", "f", "100", "MAXITERATIONS", "0")
        self.assertCmd(self.c, MAXIT_RANGE, "CF.RESERVE", "f", "100", "MAXITERATIONS", "65536")
        self.assertCmd(self.c, MAXIT_PARSE, "CF.RESERVE", "f", "100", "MAXITERATIONS", "x")

    def test_case_08_expansion_range(self):
        """`CF.RESERVE f 100 EXPANSION -1` and `32769` → range error; `x` → parse error."""
        self.assertCmd(self.c, EXPANSION_RANGE, "CF.RESERVE", "f", "100", "EXPANSION", "-1")
        self.assertCmd(self.c, EXPANSION_RANGE, "CF.RESERVE", "f", "100", "EXPANSION", "32769")
        self.assertCmd(self.c, EXPANSION_PARSE, "CF.RESERVE", "f", "100", "EXPANSION", "x")

    def test_case_09_reserve_arity(self):
        """`CF.RESERVE f` and `CF.RESERVE f 100 BUCKETSIZE` → E-ARITY 'cf.reserve';
        `EXISTS f` → 0."""
        self.assertCmd(self.c, arity("cf.reserve"), "CF.RESERVE", "f")
        self.assertCmd(self.c, arity("cf.reserve"), "CF.RESERVE", "f", "100", "BUCKETSIZE")
        self.assertCmd(self.c, 0, "EXISTS", "f")

    def test_case_10_check_order(self):
        """`CF.RESERVE f abc BUCKETSIZE 0` → `Bad capacity` (capacity checked first);
        `CF.RESERVE f 1 MAXITERATIONS 0` → the MAXITERATIONS range error."""
        self.assertCmd(self.c, BAD_CAPACITY, "CF.RESERVE", "f", "abc", "BUCKETSIZE", "0")
        self.assertCmd(self.c, MAXIT_RANGE, "CF.RESERVE", "f", "1", "MAXITERATIONS", "0")

    def test_case_11_all_options(self):
        """`CF.RESERVE f 1000 EXPANSION 2 BUCKETSIZE 4 MAXITERATIONS 50` → OK; CF.INFO →
        buckets 256, bucket size 4, expansion rate 2, max iterations 50."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1000", "EXPANSION", "2",
                       "BUCKETSIZE", "4", "MAXITERATIONS", "50")
        self.assertInfo(self.c, "f", buckets=256, bucket_size=4, expansion=2,
                        max_iterations=50)

    def test_case_11_ccf_supported_variant(self):
        """ccf: case 11 with EXPANSION 1 → OK; buckets 256, bucket size 4, expansion 1,
        max iterations 50."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1000", "EXPANSION", "1",
                       "BUCKETSIZE", "4", "MAXITERATIONS", "50")
        self.assertCmd(self.c, info_reply(256, 1, 0, 0, 4, 1, 50), "CF.INFO", "f")

    def test_case_12_expansion_rounded(self):
        """`CF.RESERVE f 64 EXPANSION 3` → OK; CF.INFO `Expansion rate` → 4,
        `Number of buckets` → 32."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "64", "EXPANSION", "3")
        self.assertInfo(self.c, "f", expansion=4, buckets=32)

    @unittest.skip(SKIP_BUCKETSIZE)
    def test_case_13_option_maxima(self):
        """`CF.RESERVE f 1024 BUCKETSIZE 255 MAXITERATIONS 65535 EXPANSION 32768` → OK;
        CF.INFO → buckets 4, bucket size 255, expansion rate 32768, max iterations 65535."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1024", "BUCKETSIZE", "255",
                       "MAXITERATIONS", "65535", "EXPANSION", "32768")
        self.assertInfo(self.c, "f", buckets=4, bucket_size=255, expansion=32768,
                        max_iterations=65535)

    def test_case_13_ccf_refuses_option_maxima(self):
        """ccf: case 13's command → the BUCKETSIZE refusal; with BUCKETSIZE 4 → OK with
        expansion rate 32768 and max iterations 65535."""
        self.assertCmd(self.c, CCF_BUCKETSIZE_REFUSED, "CF.RESERVE", "f", "1024",
                       "BUCKETSIZE", "255", "MAXITERATIONS", "65535", "EXPANSION", "32768")
        self.assertCmd(self.c, 0, "EXISTS", "f")
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1024", "BUCKETSIZE", "4",
                       "MAXITERATIONS", "65535", "EXPANSION", "32768")
        self.assertCmd(self.c, info_reply(256, 1, 0, 0, 4, 32768, 65535), "CF.INFO", "f")

    def test_case_14_unknown_option_ignored(self):
        """`CF.RESERVE f 1000 FOO 1` → OK (unknown pair ignored)."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1000", "FOO", "1")
        self.assertCmd(self.c, info_reply(512, 1, 0, 0, 2, 1, 20), "CF.INFO", "f")

    def test_case_15_reserve_wrongtype(self):
        """`SET s v`; `CF.RESERVE s 100` → WRONGTYPE."""
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "CF.RESERVE", "s", "100")

    # -- beyond §10: ccf's documented deviations and §1 conventions --

    def test_ccf_bucketsize_layouts(self):
        """ccf: BUCKETSIZE 1, 2, 4 are real layouts (buckets per §2 sizing); 3 is reported
        as 4."""
        for key, bucket_size, buckets in (("b1", 1, 1024), ("b2", 2, 512), ("b4", 4, 256)):
            self.assertCmd(self.c, OK, "CF.RESERVE", key, "1000", "BUCKETSIZE", bucket_size)
            self.assertCmd(self.c, info_reply(buckets, 1, 0, 0, bucket_size, 1, 20),
                           "CF.INFO", key)
        self.assertCmd(self.c, OK, "CF.RESERVE", "b3", "1000", "BUCKETSIZE", "3")
        self.assertInfo(self.c, "b3", bucket_size=4, filters=1, items=0)
        self.assertCmd(self.c, 1, "CF.ADD", "b3", "x")
        self.assertCmd(self.c, 1, "CF.EXISTS", "b3", "x")

    def test_ccf_bucketsize_refusal_after_range_checks(self):
        """ccf: BUCKETSIZE 5..255 pass the range checks and are then refused; every error of
        steps 1-6 comes first."""
        for bucket_size in ("5", "8", "16", "255"):
            self.assertCmd(self.c, CCF_BUCKETSIZE_REFUSED, "CF.RESERVE", "f", "1000",
                           "BUCKETSIZE", bucket_size)
        self.assertCmd(self.c, 0, "EXISTS", "f")
        self.assertCmd(self.c, BAD_CAPACITY, "CF.RESERVE", "f", "x", "BUCKETSIZE", "8")
        self.assertCmd(self.c, MAXIT_RANGE, "CF.RESERVE", "f", "1000", "BUCKETSIZE", "8",
                       "MAXITERATIONS", "0")
        self.assertCmd(self.c, EXPANSION_RANGE, "CF.RESERVE", "f", "1000", "BUCKETSIZE", "8",
                       "EXPANSION", "32769")
        self.assertCmd(self.c, CAPACITY_RANGE, "CF.RESERVE", "f", "10", "BUCKETSIZE", "8")
        self.assertCmd(self.c, CAPACITY_RANGE, "CF.RESERVE", "f", "1073741825",
                       "BUCKETSIZE", "8", "EXPANSION", "2")
        self.assertCmd(self.c, CCF_BUCKETSIZE_REFUSED, "CF.RESERVE", "f", "1000",
                       "EXPANSION", "2", "BUCKETSIZE", "8")

    def test_strict_integers(self):
        """§1: optional '-', no '+', no spaces, no leading zeros, fits in 64 bits."""
        for capacity in ("+100", " 100", "100 ", "", "1e3", "0x10", "9223372036854775808",
                         "-9223372036854775809", "100.0"):
            self.assertCmd(self.c, BAD_CAPACITY, "CF.RESERVE", "f", capacity)
        self.assertCmd(self.c, CAPACITY_RANGE, "CF.RESERVE", "f", "9223372036854775807")
        self.assertCmd(self.c, CAPACITY_RANGE, "CF.RESERVE", "f", "-9223372036854775808")
        self.assertCmd(self.c, MAXIT_PARSE, "CF.RESERVE", "f", "100", "MAXITERATIONS", "020")
        self.assertCmd(self.c, BUCKETSIZE_PARSE, "CF.RESERVE", "f", "100", "BUCKETSIZE", "+2")
        self.assertCmd(self.c, EXPANSION_PARSE, "CF.RESERVE", "f", "100", "EXPANSION", "01")
        self.assertCmd(self.c, 0, "EXISTS", "f")

    def test_options_any_order_case_insensitive_first_wins(self):
        """Options in any order, keywords and command names case-insensitive, the first
        occurrence of a keyword wins, a keyword without a value is an arity error."""
        self.assertCmd(self.c, OK, "cf.reserve", "f", "1000", "expansion", "0",
                       "bucketsize", "4", "maxIterations", "30")
        self.assertCmd(self.c, info_reply(256, 1, 0, 0, 4, 0, 30), "Cf.Info", "f")
        self.assertCmd(self.c, OK, "CF.RESERVE", "g", "1000", "BUCKETSIZE", "4",
                       "BUCKETSIZE", "1", "MAXITERATIONS", "7", "MAXITERATIONS", "9")
        self.assertInfo(self.c, "g", bucket_size=4, buckets=256, max_iterations=7)
        self.assertCmd(self.c, arity("cf.reserve"), "CF.RESERVE", "h", "1000", "FOO")
        self.assertCmd(self.c, arity("cf.reserve"), "cf.RESERVE", "h")


class AddTest(ServerTest):
    """CF.ADD / CF.ADDNX: cases 16-27."""

    def test_case_16_add_autocreates(self):
        """`CF.ADD f a` → 1; `TYPE f` → MBbloomCF; CF.INFO f → buckets 512, filters 1,
        items inserted 1, bucket size 2, expansion 1, max iterations 20."""
        self.assertCmd(self.c, 1, "CF.ADD", "f", "a")
        self.assertCmd(self.c, Simple(TYPE_NAME), "TYPE", "f")
        self.assertCmd(self.c, info_reply(512, 1, 1, 0, 2, 1, 20), "CF.INFO", "f")

    def test_case_17_add_twice_counts_two(self):
        """`CF.ADD f a` ×2 → 1, 1; `CF.COUNT f a` → 2; `CF.EXISTS f a` → 1."""
        self.assertCmd(self.c, 1, "CF.ADD", "f", "a")
        self.assertCmd(self.c, 1, "CF.ADD", "f", "a")
        self.assertCmd(self.c, 2, "CF.COUNT", "f", "a")
        self.assertCmd(self.c, 1, "CF.EXISTS", "f", "a")

    def test_case_18_add_addnx_resp3(self):
        """[R3] `CF.ADD f a` → true; `CF.ADDNX f a` → false; `CF.ADDNX f b` → true."""
        self.hello3(self.c)
        self.assertCmd(self.c, True, "CF.ADD", "f", "a")
        self.assertCmd(self.c, False, "CF.ADDNX", "f", "a")
        self.assertCmd(self.c, True, "CF.ADDNX", "f", "b")

    def test_case_19_addnx(self):
        """`CF.ADDNX f a` → 1; again → 0; `CF.COUNT f a` → 1; `CF.ADD f a` → 1;
        `CF.COUNT f a` → 2."""
        self.assertCmd(self.c, 1, "CF.ADDNX", "f", "a")
        self.assertCmd(self.c, 0, "CF.ADDNX", "f", "a")
        self.assertCmd(self.c, 1, "CF.COUNT", "f", "a")
        self.assertCmd(self.c, 1, "CF.ADD", "f", "a")
        self.assertCmd(self.c, 2, "CF.COUNT", "f", "a")

    def test_case_20_add_arity(self):
        """`CF.ADD f`, `CF.ADD f a b` → E-ARITY 'cf.add'; `cf.addnx f` → E-ARITY 'cf.addnx'
        (the name is lower case whatever the client typed)."""
        self.assertCmd(self.c, arity("cf.add"), "CF.ADD", "f")
        self.assertCmd(self.c, arity("cf.add"), "CF.ADD", "f", "a", "b")
        self.assertCmd(self.c, arity("cf.addnx"), "cf.addnx", "f")
        self.assertCmd(self.c, arity("cf.add"), "cF.aDd", "f")
        self.assertCmd(self.c, arity("cf.addnx"), "CF.ADDNX", "f", "a", "b")
        self.assertCmd(self.c, 0, "EXISTS", "f")

    def test_case_21_add_wrongtype(self):
        """`SET s v`; `CF.ADD s a` and `CF.ADDNX s a` → WRONGTYPE."""
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "CF.ADD", "s", "a")
        self.assertCmd(self.c, E_TYPE, "CF.ADDNX", "s", "a")

    def test_case_22_filter_is_full(self):
        """`CF.RESERVE f 1024 BUCKETSIZE 1 EXPANSION 0`; `CF.ADD f x` ×2 → 1, 1; third →
        `Filter is full`; `CF.COUNT f x` → 2; CF.INFO → filters 1, items inserted 2."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1024", "BUCKETSIZE", "1",
                       "EXPANSION", "0")
        self.assertCmd(self.c, 1, "CF.ADD", "f", "x")
        self.assertCmd(self.c, 1, "CF.ADD", "f", "x")
        self.assertCmd(self.c, FILTER_FULL, "CF.ADD", "f", "x")
        self.assertCmd(self.c, 2, "CF.COUNT", "f", "x")
        self.assertCmd(self.c, info_reply(1024, 1, 2, 0, 1, 0, 20), "CF.INFO", "f")

    def test_case_25_growth_expansion_2(self):
        """`CF.RESERVE f 1024 BUCKETSIZE 1 EXPANSION 2`; `CF.ADD f x` ×3 → 1, 1, 1; CF.INFO →
        filters 2, buckets 1024, items inserted 3, expansion rate 2 ([layout]: Size 3144)."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1024", "BUCKETSIZE", "1",
                       "EXPANSION", "2")
        for _ in range(3):
            self.assertCmd(self.c, 1, "CF.ADD", "f", "x")
        self.assertInfo(self.c, "f", filters=2, buckets=1024, items=3, expansion=2)

    def test_case_25_ccf_variant_expansion_1(self):
        """ccf: case 25 with EXPANSION 1: the third copy of x opens a second sub-filter of
        the same size; CF.INFO → filters 2, buckets 1024, items 3, expansion 1."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1024", "BUCKETSIZE", "1",
                       "EXPANSION", "1")
        for _ in range(3):
            self.assertCmd(self.c, 1, "CF.ADD", "f", "x")
        self.assertCmd(self.c, info_reply(1024, 2, 3, 0, 1, 1, 20), "CF.INFO", "f")
        self.assertCmd(self.c, 3, "CF.COUNT", "f", "x")

    def test_case_26_delete_then_autocompact(self):
        """Continue 25: `CF.DEL f x` → 1; `CF.COUNT f x` → 2; CF.INFO → filters 1, items
        inserted 2, items deleted 0 (auto-compaction freed the empty newest sub-filter)."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1024", "BUCKETSIZE", "1",
                       "EXPANSION", "2")
        for _ in range(3):
            self.assertCmd(self.c, 1, "CF.ADD", "f", "x")
        self.assertCmd(self.c, 1, "CF.DEL", "f", "x")
        self.assertCmd(self.c, 2, "CF.COUNT", "f", "x")
        self.assertInfo(self.c, "f", filters=1, items=2, deleted=0)

    def test_case_26_ccf_variant_expansion_1(self):
        """ccf: case 26 from the EXPANSION 1 variant of 25: `CF.DEL f x` → 1; COUNT → 2;
        items inserted 2. Without auto-compaction: filters 2, items deleted 1; with it:
        filters 1, items deleted 0."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1024", "BUCKETSIZE", "1",
                       "EXPANSION", "1")
        for _ in range(3):
            self.assertCmd(self.c, 1, "CF.ADD", "f", "x")
        self.assertCmd(self.c, 1, "CF.DEL", "f", "x")
        self.assertCmd(self.c, 2, "CF.COUNT", "f", "x")
        got = self.assertInfo(self.c, "f", items=2, buckets=1024, expansion=1)
        self.assertIn((got["Number of filters"], got["Number of items deleted"]),
                      ((2, 1), (1, 0)), f"CF.INFO: {got}")

    def test_case_27_maximum_expansions(self):
        """`CF.RESERVE f 4`; `CF.ADD f <i>` for i = 0, 1, 2, …: every reply is 1 until one
        is `Maximum expansions reached`; then filters → 32, `CF.ADDNX f 0` and
        `CF.INSERTNX f ITEMS 0` → `Maximum expansions reached`."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "4")
        added, last = 0, None
        for i in range(10000):  # 32 sub-filters of 2 buckets × 2 slots hold at most 128
            last = self.c.call("CF.ADD", "f", str(i))
            if last != 1 or type(last) is not int:
                break
            added += 1
        self.assertReply(last, MAX_EXPANSIONS, f"CF.ADD f {added}")
        self.assertTrue(32 <= added <= 128, f"{added} adds before the 32nd sub-filter filled")
        self.assertInfo(self.c, "f", filters=32, items=added, buckets=2, expansion=1)
        self.assertCmd(self.c, MAX_EXPANSIONS, "CF.ADDNX", "f", "0")
        self.assertCmd(self.c, MAX_EXPANSIONS, "CF.INSERTNX", "f", "ITEMS", "0")
        # §2: the whole command fails for every insert once 32 sub-filters exist.
        self.assertCmd(self.c, MAX_EXPANSIONS, "CF.ADD", "f", "0")
        self.assertCmd(self.c, MAX_EXPANSIONS, "CF.INSERT", "f", "ITEMS", "0", "new")
        self.assertInfo(self.c, "f", filters=32, items=added)
        for i in range(added):
            self.assertCmd(self.c, 1, "CF.EXISTS", "f", str(i))

    def test_binary_safe_items(self):
        """§1: keys and items are binary-safe; the empty string is a valid item."""
        key = b"k\x00\r\n\xff"
        for item in (b"", b"\x00", b"\r\n", b"a\x00b", bytes(range(256)), b"x" * 100000):
            self.assertCmd(self.c, 1, "CF.ADD", key, item)
            self.assertCmd(self.c, 1, "CF.EXISTS", key, item)
        self.assertCmd(self.c, 0, "CF.ADDNX", key, b"")
        self.assertCmd(self.c, Simple(TYPE_NAME), "TYPE", key)
        self.assertCmd(self.c, 1, "CF.DEL", key, b"")
        self.assertInfo(self.c, key, items=5)


class InsertTest(ServerTest):
    """CF.INSERT / CF.INSERTNX: cases 23, 24, 34-42."""

    def test_case_23_insert_into_full_filter(self):
        """Same filter as 22, fresh: `CF.INSERT f ITEMS x x x x` → [1, 1, -1, -1]; [R3] the
        same (on a fresh filter) → [true, true, false, false]."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1024", "BUCKETSIZE", "1",
                       "EXPANSION", "0")
        self.assertCmd(self.c, [1, 1, -1, -1], "CF.INSERT", "f", "ITEMS", "x", "x", "x", "x")
        self.assertCmd(self.c, 2, "CF.COUNT", "f", "x")
        self.hello3(self.c)
        self.assertCmd(self.c, OK, "CF.RESERVE", "g", "1024", "BUCKETSIZE", "1",
                       "EXPANSION", "0")
        self.assertCmd(self.c, [True, True, False, False],
                       "CF.INSERT", "g", "ITEMS", "x", "x", "x", "x")

    def _check_tiny_insertnx(self, reply, what):
        self.assertIs(type(reply), list, what)
        self.assertEqual(len(reply), 10, what)
        for value in reply:
            self.assertIs(type(value), int, f"{what}: {reply!r}")
            self.assertIn(value, (1, 0, -1), f"{what}: {reply!r}")
        self.assertLessEqual(reply.count(1), 2, f"{what}: {reply!r}")
        self.assertGreaterEqual(reply.count(-1), 1, f"{what}: {reply!r}")

    def test_case_24_insertnx_tiny_filter(self):
        """`CF.RESERVE f 2 BUCKETSIZE 1 EXPANSION 0`; `CF.INSERTNX f ITEMS i0 … i9` → 10
        integers, each 1, 0 or -1, at most two 1, at least one -1; [R3] still integers."""
        items = [f"i{i}" for i in range(10)]
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "2", "BUCKETSIZE", "1", "EXPANSION", "0")
        self._check_tiny_insertnx(self.c.call("CF.INSERTNX", "f", "ITEMS", *items),
                                  "CF.INSERTNX f")
        self.hello3(self.c)
        self.assertCmd(self.c, OK, "CF.RESERVE", "g", "2", "BUCKETSIZE", "1", "EXPANSION", "0")
        self._check_tiny_insertnx(self.c.call("CF.INSERTNX", "g", "ITEMS", *items),
                                  "[R3] CF.INSERTNX g")

    def test_case_34_insert_default_capacity(self):
        """`CF.INSERT f ITEMS a b` → [1, 1]; CF.INFO → buckets 512 (default capacity)."""
        self.assertCmd(self.c, [1, 1], "CF.INSERT", "f", "ITEMS", "a", "b")
        self.assertCmd(self.c, info_reply(512, 1, 2, 0, 2, 1, 20), "CF.INFO", "f")

    def test_case_35_insert_capacity(self):
        """`CF.INSERT f CAPACITY 10000 ITEMS foo` → [1]; buckets → 8192;
        `CF.INSERT f CAPACITY 100 ITEMS bar` → [1], buckets still 8192."""
        self.assertCmd(self.c, [1], "CF.INSERT", "f", "CAPACITY", "10000", "ITEMS", "foo")
        self.assertInfo(self.c, "f", buckets=8192)
        self.assertCmd(self.c, [1], "CF.INSERT", "f", "CAPACITY", "100", "ITEMS", "bar")
        self.assertInfo(self.c, "f", buckets=8192, items=2)

    def test_case_36_nocreate(self):
        """`CF.INSERT f NOCREATE ITEMS a` → `ERR not found`; `EXISTS f` → 0;
        `CF.INSERT f CAPACITY 1000 NOCREATE ITEMS a` → `ERR not found`; after `CF.ADD f z`,
        `CF.INSERT f NOCREATE ITEMS a` → [1]."""
        self.assertCmd(self.c, E_NOTFOUND, "CF.INSERT", "f", "NOCREATE", "ITEMS", "a")
        self.assertCmd(self.c, 0, "EXISTS", "f")
        self.assertCmd(self.c, E_NOTFOUND, "CF.INSERT", "f", "CAPACITY", "1000", "NOCREATE",
                       "ITEMS", "a")
        self.assertCmd(self.c, E_NOTFOUND, "CF.INSERTNX", "f", "NOCREATE", "ITEMS", "a")
        self.assertCmd(self.c, 0, "EXISTS", "f")
        self.assertCmd(self.c, 1, "CF.ADD", "f", "z")
        self.assertCmd(self.c, [1], "CF.INSERT", "f", "NOCREATE", "ITEMS", "a")

    def test_case_37_insert_capacity_errors(self):
        """`CF.INSERT f CAPACITY abc ITEMS a` → `Bad capacity`; `CAPACITY 3` and `-1` →
        `Capacity must be in the range [cf-bucket-size * 2, 1073741824]`; `CF.INSERTNX f
        CAPACITY 3 ITEMS a` → same; `CF.INSERT f CAPACITY 4 ITEMS a` → [1]."""
        self.assertCmd(self.c, BAD_CAPACITY, "CF.INSERT", "f", "CAPACITY", "abc", "ITEMS", "a")
        self.assertCmd(self.c, INSERT_CAPACITY_RANGE, "CF.INSERT", "f", "CAPACITY", "3",
                       "ITEMS", "a")
        self.assertCmd(self.c, INSERT_CAPACITY_RANGE, "CF.INSERT", "f", "CAPACITY", "-1",
                       "ITEMS", "a")
        self.assertCmd(self.c, INSERT_CAPACITY_RANGE, "CF.INSERTNX", "f", "CAPACITY", "3",
                       "ITEMS", "a")
        self.assertCmd(self.c, INSERT_CAPACITY_RANGE, "CF.INSERT", "f", "CAPACITY",
                       "1073741825", "ITEMS", "a")
        self.assertCmd(self.c, 0, "EXISTS", "f")
        self.assertCmd(self.c, [1], "CF.INSERT", "f", "CAPACITY", "4", "ITEMS", "a")
        self.assertInfo(self.c, "f", buckets=2, items=1)

    def test_case_38_unknown_argument(self):
        """`CF.INSERT f FOO ITEMS a` and `CF.INSERT f NOCREATE DONTEXIST` →
        `Unknown argument received`."""
        self.assertCmd(self.c, UNKNOWN_ARGUMENT, "CF.INSERT", "f", "FOO", "ITEMS", "a")
        self.assertCmd(self.c, UNKNOWN_ARGUMENT, "CF.INSERT", "f", "NOCREATE", "DONTEXIST")
        self.assertCmd(self.c, 0, "EXISTS", "f")

    def test_case_39_insert_arity(self):
        """`CF.INSERT f ITEMS`, `CF.INSERT f a`, `CF.INSERT f CAPACITY 100 ITEMS`,
        `CF.INSERT f NOCREATE CAPACITY`, `CF.INSERT f NOCREATE ITEMS` → E-ARITY 'cf.insert'."""
        for args in (("ITEMS",), ("a",), ("CAPACITY", "100", "ITEMS"),
                     ("NOCREATE", "CAPACITY"), ("NOCREATE", "ITEMS")):
            self.assertCmd(self.c, arity("cf.insert"), "CF.INSERT", "f", *args)
        self.assertCmd(self.c, arity("cf.insertnx"), "CF.INSERTNX", "f", "ITEMS")
        self.assertCmd(self.c, arity("cf.insertnx"), "cf.insertNX", "f", "NOCREATE", "ITEMS")
        self.assertCmd(self.c, 0, "EXISTS", "f")

    def test_case_40_keywords_after_items_are_items(self):
        """`CF.INSERT f ITEMS NOCREATE CAPACITY` → [1, 1]; `CF.EXISTS f NOCREATE` → 1."""
        self.assertCmd(self.c, [1, 1], "CF.INSERT", "f", "ITEMS", "NOCREATE", "CAPACITY")
        self.assertCmd(self.c, 1, "CF.EXISTS", "f", "NOCREATE")
        self.assertCmd(self.c, 1, "CF.EXISTS", "f", "CAPACITY")

    def test_case_41_insert_wrongtype(self):
        """`SET s v`; `CF.INSERT s ITEMS a` and `CF.INSERTNX s NOCREATE ITEMS a` →
        WRONGTYPE."""
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "CF.INSERT", "s", "ITEMS", "a")
        self.assertCmd(self.c, E_TYPE, "CF.INSERTNX", "s", "NOCREATE", "ITEMS", "a")

    def test_case_42_insertnx(self):
        """`CF.INSERTNX f ITEMS a a b` → [1, 0, 1]; [R3] `CF.INSERTNX g ITEMS a a` → [1, 0]
        (integers); [R3] `CF.INSERT h ITEMS a b` → [true, true]."""
        self.assertCmd(self.c, [1, 0, 1], "CF.INSERTNX", "f", "ITEMS", "a", "a", "b")
        self.hello3(self.c)
        self.assertCmd(self.c, [1, 0], "CF.INSERTNX", "g", "ITEMS", "a", "a")
        self.assertCmd(self.c, [True, True], "CF.INSERT", "h", "ITEMS", "a", "b")

    def test_insert_keywords_case_insensitive(self):
        """§1: keywords are case-insensitive (tests use full keywords)."""
        self.assertCmd(self.c, [1], "cf.insert", "f", "capacity", "10000", "items", "a")
        self.assertInfo(self.c, "f", buckets=8192)
        self.assertCmd(self.c, [0], "cf.insertnx", "f", "nocreate", "Items", "a")


class ExistsCountDelTest(ServerTest):
    """CF.EXISTS / CF.MEXISTS / CF.COUNT / CF.DEL: cases 28-33."""

    def test_case_28_delete_one_copy(self):
        """`CF.INSERT f ITEMS item1 item2 item2` → [1, 1, 1]; `CF.DEL f item1` → 1, again 0;
        `CF.DEL f item2` → 1, 1, then 0 [hash]."""
        self.assertCmd(self.c, [1, 1, 1], "CF.INSERT", "f", "ITEMS", "item1", "item2", "item2")
        self.assertCmd(self.c, 1, "CF.DEL", "f", "item1")
        self.assertCmd(self.c, 0, "CF.DEL", "f", "item1")
        self.assertCmd(self.c, 1, "CF.DEL", "f", "item2")
        self.assertCmd(self.c, 1, "CF.DEL", "f", "item2")
        self.assertCmd(self.c, 0, "CF.DEL", "f", "item2")
        self.assertInfo(self.c, "f", items=0)

    def test_case_29_del_errors(self):
        """`CF.DEL nokey a` → `Not found`; `SET s v`; `CF.DEL s a` → `Not found`;
        `CF.DEL f` → E-ARITY 'cf.del'."""
        self.assertCmd(self.c, DEL_NOT_FOUND, "CF.DEL", "nokey", "a")
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, DEL_NOT_FOUND, "CF.DEL", "s", "a")
        self.assertCmd(self.c, arity("cf.del"), "CF.DEL", "f")
        self.assertCmd(self.c, arity("cf.del"), "CF.DEL", "f", "a", "b")

    def test_case_30_missing_key(self):
        """`CF.EXISTS nokey a` → 0; `CF.MEXISTS nokey a b` → [0, 0]; `CF.COUNT nokey a` → 0;
        [R3] `CF.EXISTS nokey a` → false, `CF.COUNT nokey a` → (int) 0."""
        self.assertCmd(self.c, 0, "CF.EXISTS", "nokey", "a")
        self.assertCmd(self.c, [0, 0], "CF.MEXISTS", "nokey", "a", "b")
        self.assertCmd(self.c, 0, "CF.COUNT", "nokey", "a")
        self.hello3(self.c)
        self.assertCmd(self.c, False, "CF.EXISTS", "nokey", "a")
        self.assertCmd(self.c, [False, False], "CF.MEXISTS", "nokey", "a", "b")
        self.assertCmd(self.c, 0, "CF.COUNT", "nokey", "a")
        self.assertCmd(self.c, 0, "EXISTS", "nokey")

    def test_case_31_mexists(self):
        """`CF.INSERT f ITEMS foo bar baz` → [1, 1, 1]; `CF.MEXISTS f foo bar baz nope` →
        [1, 1, 1, 0] [hash]; [R3] → [true, true, true, false]."""
        self.assertCmd(self.c, [1, 1, 1], "CF.INSERT", "f", "ITEMS", "foo", "bar", "baz")
        self.assertCmd(self.c, [1, 1, 1, 0], "CF.MEXISTS", "f", "foo", "bar", "baz", "nope")
        self.hello3(self.c)
        self.assertCmd(self.c, [True, True, True, False],
                       "CF.MEXISTS", "f", "foo", "bar", "baz", "nope")

    def test_case_32_other_type_reads_as_empty(self):
        """`SET s v`; `CF.EXISTS s a` → 0; `CF.MEXISTS s a` → [0]; `CF.COUNT s a` → 0
        (no WRONGTYPE)."""
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, 0, "CF.EXISTS", "s", "a")
        self.assertCmd(self.c, [0], "CF.MEXISTS", "s", "a")
        self.assertCmd(self.c, 0, "CF.COUNT", "s", "a")

    def test_case_33_read_arity(self):
        """`CF.EXISTS f`, `CF.EXISTS f a b`, `CF.MEXISTS f`, `CF.COUNT f` → E-ARITY with
        'cf.exists', 'cf.exists', 'cf.mexists', 'cf.count'."""
        self.assertCmd(self.c, arity("cf.exists"), "CF.EXISTS", "f")
        self.assertCmd(self.c, arity("cf.exists"), "CF.EXISTS", "f", "a", "b")
        self.assertCmd(self.c, arity("cf.mexists"), "CF.MEXISTS", "f")
        self.assertCmd(self.c, arity("cf.count"), "CF.COUNT", "f")
        self.assertCmd(self.c, arity("cf.count"), "CF.COUNT", "f", "a", "b")

    def test_resp3_del(self):
        """§4 CF.DEL: RESP3 true removed / false not found."""
        self.hello3(self.c)
        self.assertCmd(self.c, True, "CF.ADD", "f", "a")
        self.assertCmd(self.c, True, "CF.DEL", "f", "a")
        self.assertCmd(self.c, False, "CF.DEL", "f", "a")
        self.assertCmd(self.c, DEL_NOT_FOUND, "CF.DEL", "nokey", "a")

    def test_growth_then_delete_half_no_false_negatives(self):
        """§2 "delete removes one copy": a filter grown to many sub-filters
        (`CF.RESERVE g 128 BUCKETSIZE 2 EXPANSION 1`, 2,000 distinct items need at least 16
        sub-filters of 128 slots); deleting every other item (each → 1) leaves every other
        item found (no false negatives) and items inserted = 1,000."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "g", "128", "BUCKETSIZE", "2",
                       "EXPANSION", "1")
        items = [f"item-{i}" for i in range(2000)]
        for start in range(0, len(items), 100):
            batch = items[start:start + 100]
            replies = self.c.pipeline([("CF.ADD", "g", it) for it in batch])
            for it, reply in zip(batch, replies):
                self.assertReply(reply, 1, f"CF.ADD g {it}")
        got = self.assertInfo(self.c, "g", items=2000, buckets=64, expansion=1)
        self.assertTrue(16 <= got["Number of filters"] <= 32, f"CF.INFO: {got}")
        deleted, kept = items[0::2], items[1::2]
        for start in range(0, len(deleted), 100):
            batch = deleted[start:start + 100]
            replies = self.c.pipeline([("CF.DEL", "g", it) for it in batch])
            for it, reply in zip(batch, replies):
                self.assertReply(reply, 1, f"CF.DEL g {it}")
        missing = []
        for start in range(0, len(kept), 100):
            batch = kept[start:start + 100]
            replies = self.c.pipeline([("CF.EXISTS", "g", it) for it in batch])
            missing += [it for it, reply in zip(batch, replies) if reply != 1]
            for reply in replies:
                self.assertIs(type(reply), int)
        self.assertEqual(missing, [], f"{len(missing)} kept items are no longer found")
        got = self.assertInfo(self.c, "g", items=1000)
        self.assertLessEqual(got["Number of items deleted"], 1000)


class InfoTest(ServerTest):
    """CF.INFO: cases 43, 44."""

    def test_case_43_info_errors(self):
        """`CF.INFO nokey` → `ERR not found`; `SET s v`; `CF.INFO s` → WRONGTYPE;
        `CF.INFO` and `CF.INFO a b` → E-ARITY 'cf.info'."""
        self.assertCmd(self.c, E_NOTFOUND, "CF.INFO", "nokey")
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "CF.INFO", "s")
        self.assertCmd(self.c, arity("cf.info"), "CF.INFO")
        self.assertCmd(self.c, arity("cf.info"), "CF.INFO", "a", "b")

    def test_case_44_resp3_sequence(self):
        """[R3] `CF.RESERVE f 9 EXPANSION 0`; ADD 3 → true; ADD 4 → true; ADDNX 4 → false;
        ADDNX 9 → true; `CF.INSERT f ITEMS 4 5` → [true, true]; `CF.INSERTNX f ITEMS 4 6` →
        [0, 1]; `CF.DEL f 3` → true, again false; `CF.COUNT f 4` → 2; `CF.INFO f` → map
        {Size: >0, buckets 4, filters 1, items inserted 5, items deleted 1, bucket size 2,
        expansion 0, max iterations 20} in that order [hash]."""
        self.hello3(self.c)
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "9", "EXPANSION", "0")
        self.assertCmd(self.c, True, "CF.ADD", "f", "3")
        self.assertCmd(self.c, True, "CF.ADD", "f", "4")
        self.assertCmd(self.c, False, "CF.ADDNX", "f", "4")
        self.assertCmd(self.c, True, "CF.ADDNX", "f", "9")
        self.assertCmd(self.c, [True, True], "CF.INSERT", "f", "ITEMS", "4", "5")
        self.assertCmd(self.c, [0, 1], "CF.INSERTNX", "f", "ITEMS", "4", "6")
        self.assertCmd(self.c, True, "CF.DEL", "f", "3")
        self.assertCmd(self.c, False, "CF.DEL", "f", "3")
        self.assertCmd(self.c, 2, "CF.COUNT", "f", "4")
        self.assertCmd(self.c, info_map(4, 1, 5, 1, 2, 0, 20), "CF.INFO", "f")

    def test_debug(self):
        """§4 CF.DEBUG: one bulk line of the filter's parameters and counters; E-ARITY,
        E-NOTFOUND, E-TYPE."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1000")
        self.assertCmd(self.c, b"bktsize:2 buckets:512 items:0 deletes:0 filters:1 "
                       b"max_iterations:20 expansion:1", "CF.DEBUG", "f")
        self.assertCmd(self.c, OK, "CF.RESERVE", "g", "100", "BUCKETSIZE", "4",
                       "MAXITERATIONS", "7", "EXPANSION", "2")
        self.assertCmd(self.c, [1, 1], "CF.INSERT", "g", "ITEMS", "a", "b")
        self.assertCmd(self.c, 1, "CF.DEL", "g", "a")
        self.assertCmd(self.c, b"bktsize:4 buckets:32 items:1 deletes:1 filters:1 "
                       b"max_iterations:7 expansion:2", "CF.DEBUG", "g")
        self.assertCmd(self.c, E_NOTFOUND, "CF.DEBUG", "nokey")
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "CF.DEBUG", "s")
        self.assertCmd(self.c, arity("cf.debug"), "CF.DEBUG")
        self.assertCmd(self.c, arity("cf.debug"), "CF.DEBUG", "f", "g")

    def test_info_resp3_errors(self):
        """CF.INFO errors are the same in RESP3."""
        self.hello3(self.c)
        self.assertCmd(self.c, E_NOTFOUND, "CF.INFO", "nokey")
        self.assertCmd(self.c, arity("cf.info"), "CF.INFO")


class ScanDumpLoadChunkTest(ServerTest):
    """CF.SCANDUMP / CF.LOADCHUNK / CF.COMPACT: cases 45-54. ccf's dump layout is its own
    (docs/server.md): a 64-byte header for one sub-filter, then one chunk per sub-filter (the
    library's checksummed filter file); the [layout] sizes of the contract do not apply."""

    def dump(self, key):
        """Every (iterator, data) pair CF.SCANDUMP returns, until the iterator is 0."""
        pairs, iterator = [], 0
        for _ in range(100000):
            reply = self.c.call("CF.SCANDUMP", key, iterator)
            self.assertIs(type(reply), list, f"CF.SCANDUMP {key} {iterator}: {reply!r}")
            self.assertEqual(len(reply), 2, f"CF.SCANDUMP {key} {iterator}: {reply!r}")
            nxt, data = reply
            self.assertIs(type(nxt), int, f"CF.SCANDUMP {key} {iterator}: {reply!r}")
            if nxt == 0:
                self.assertIsNone(data)
                return pairs
            self.assertIs(type(data), bytes, f"CF.SCANDUMP {key} {iterator}: {reply!r}")
            pairs.append((nxt, data))
            iterator = nxt
        self.fail(f"CF.SCANDUMP {key} never returned iterator 0")

    def header_and_data(self):
        """Case 47's setup: `CF.RESERVE f 8`; `CF.ADD f item1`; returns (H, D, next iterator)."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "8")
        self.assertCmd(self.c, 1, "CF.ADD", "f", "item1")
        first = self.c.call("CF.SCANDUMP", "f", 0)
        self.assertReply(first, [1, ANY_BULK], "CF.SCANDUMP f 0")
        second = self.c.call("CF.SCANDUMP", "f", 1)
        self.assertReply(second, [ANY_INT, ANY_BULK], "CF.SCANDUMP f 1")
        self.assertEqual(second[0], 1 + len(second[1]), "the iterator counts the data's bytes")
        return first[1], second[1], second[0]

    def test_case_45_scandump_empty_filter(self):
        """`CF.RESERVE f 1000`; `CF.SCANDUMP f 0` → [0, nil]; `CF.SCANDUMP f 5` → [0, nil]."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1000")
        self.assertCmd(self.c, [0, None], "CF.SCANDUMP", "f", "0")
        self.assertCmd(self.c, [0, None], "CF.SCANDUMP", "f", "5")

    def test_case_46_scandump_errors(self):
        """`CF.SCANDUMP nokey 0` → `ERR not found`; `CF.RESERVE f 8`; `CF.ADD f a`;
        `CF.SCANDUMP f -1` and `f x` → `Invalid position`; `SET s v`; `CF.SCANDUMP s 0` →
        WRONGTYPE; `CF.SCANDUMP f` → E-ARITY 'cf.scandump'."""
        self.assertCmd(self.c, E_NOTFOUND, "CF.SCANDUMP", "nokey", "0")
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "8")
        self.assertCmd(self.c, 1, "CF.ADD", "f", "a")
        self.assertCmd(self.c, INVALID_POSITION, "CF.SCANDUMP", "f", "-1")
        self.assertCmd(self.c, INVALID_POSITION, "CF.SCANDUMP", "f", "x")
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "CF.SCANDUMP", "s", "0")
        self.assertCmd(self.c, arity("cf.scandump"), "CF.SCANDUMP", "f")

    def test_case_47_scandump_chunks(self):
        """`CF.RESERVE f 8`; `CF.ADD f item1`; `CF.SCANDUMP f 0` → [1, H];
        `CF.SCANDUMP f 1` → [1 + len(D), D]; then [0, nil] ([layout]: ccf's H is 64 bytes for
        one sub-filter and D is the sub-filter's file, not RedisBloom's 38 and 8 bytes)."""
        header, data, following = self.header_and_data()
        self.assertEqual(len(header), 64)
        self.assertGreater(len(data), 0)
        self.assertCmd(self.c, [0, None], "CF.SCANDUMP", "f", following)

    def _round_trip(self, expansion):
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "50", "EXPANSION", expansion)
        items = [f"rt-{i}" for i in range(500)]
        for it in items:
            self.assertCmd(self.c, 1, "CF.ADD", "f", it)
        info_f = self.c.call("CF.INFO", "f")
        pairs = self.dump("f")
        for target in ("g", "f"):
            if target == "f":
                self.assertCmd(self.c, 1, "DEL", "f")
            for iterator, data in pairs:
                self.assertCmd(self.c, OK, "CF.LOADCHUNK", target, iterator, data)
            replies = self.c.pipeline([("CF.EXISTS", target, it) for it in items])
            self.assertEqual([it for it, r in zip(items, replies) if r != 1], [],
                             f"items not found after loading into {target}")
            self.assertReply(self.c.call("CF.INFO", target), info_f, f"CF.INFO {target}")

    def test_case_48_round_trip(self):
        """Round trip: `CF.RESERVE f 50 EXPANSION 2`; add 500 distinct items; dump all pairs;
        `CF.LOADCHUNK g <it> <data>` for each → OK; all 500 items `CF.EXISTS g` → 1;
        `CF.INFO g` equals `CF.INFO f`. Repeat with `DEL f` and loading back into f."""
        self._round_trip("2")

    def test_case_48_ccf_variant_expansion_1(self):
        """ccf: case 48 with EXPANSION 1 (many sub-filters of 32 buckets)."""
        self._round_trip("1")

    def test_case_49_loadchunk_existing_key(self):
        """From 47: `CF.LOADCHUNK f 1 H` (f still exists) → `ERR item exists`; `SET s v`;
        `CF.LOADCHUNK s 1 H` → WRONGTYPE."""
        header, _, _ = self.header_and_data()
        self.assertCmd(self.c, E_EXISTS, "CF.LOADCHUNK", "f", "1", header)
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, E_TYPE, "CF.LOADCHUNK", "s", "1", header)

    def test_case_50_loadchunk_position_errors(self):
        """`CF.LOADCHUNK g 0 x` and `g abc x` → `Invalid position`; `CF.LOADCHUNK g 1 short`
        → `Invalid header`; `CF.LOADCHUNK g 9 D` (g missing) → `ERR not found`."""
        _, data, following = self.header_and_data()
        self.assertCmd(self.c, INVALID_POSITION, "CF.LOADCHUNK", "g", "0", "x")
        self.assertCmd(self.c, INVALID_POSITION, "CF.LOADCHUNK", "g", "abc", "x")
        self.assertCmd(self.c, INVALID_HEADER, "CF.LOADCHUNK", "g", "1", "short")
        self.assertCmd(self.c, E_NOTFOUND, "CF.LOADCHUNK", "g", following, data)
        self.assertCmd(self.c, 0, "EXISTS", "g")

    def test_case_51_loadchunk_zeroed_header(self):
        """From 47, H with every byte 0: `CF.LOADCHUNK g 1 <zeroed H>` →
        `Couldn't create filter!`; `EXISTS g` → 0."""
        header, _, _ = self.header_and_data()
        self.assertCmd(self.c, CANNOT_CREATE, "CF.LOADCHUNK", "g", "1", bytes(len(header)))
        self.assertCmd(self.c, 0, "EXISTS", "g")

    def test_case_52_loadchunk_bad_range(self):
        """`CF.RESERVE f 4`; `CF.LOADCHUNK f 4 abcd`, `f 922337203685477588 1`, `f -5 ab` →
        `Couldn't load chunk!`."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "4")
        self.assertCmd(self.c, CANNOT_LOAD, "CF.LOADCHUNK", "f", "4", "abcd")
        self.assertCmd(self.c, CANNOT_LOAD, "CF.LOADCHUNK", "f", "922337203685477588", "1")
        self.assertCmd(self.c, CANNOT_LOAD, "CF.LOADCHUNK", "f", "-5", "ab")

    def test_case_53_loadchunk_arity(self):
        """`CF.LOADCHUNK f` and `CF.LOADCHUNK f 1` → E-ARITY 'cf.loadchunk'."""
        self.assertCmd(self.c, arity("cf.loadchunk"), "CF.LOADCHUNK", "f")
        self.assertCmd(self.c, arity("cf.loadchunk"), "CF.LOADCHUNK", "f", "1")

    def test_ccf_damaged_chunk_is_refused(self):
        """ccf: a data chunk with one byte changed fails its checksum → `Couldn't load chunk!`;
        the key keeps its header's counters and empty sub-filters, and the good chunk loads."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "1000")
        for i in range(100):
            self.assertCmd(self.c, 1, "CF.ADD", "f", f"d-{i}")
        pairs = self.dump("f")
        self.assertEqual(len(pairs), 2, "header and one sub-filter")
        (header_it, header), (data_it, data) = pairs
        self.assertCmd(self.c, OK, "CF.LOADCHUNK", "g", header_it, header)
        damaged = bytearray(data)
        damaged[len(damaged) // 2] ^= 0x40
        self.assertCmd(self.c, CANNOT_LOAD, "CF.LOADCHUNK", "g", data_it, bytes(damaged))
        self.assertCmd(self.c, 0, "CF.EXISTS", "g", "d-1")
        self.assertCmd(self.c, OK, "CF.LOADCHUNK", "g", data_it, data)
        self.assertCmd(self.c, 1, "CF.EXISTS", "g", "d-1")

    def test_case_54_compact(self):
        """`CF.COMPACT nokey` → `Cuckoo filter was not found`; `CF.ADD f a`; `CF.COMPACT f` →
        OK; `CF.COMPACT f x` → E-ARITY 'cf.compact'."""
        self.assertCmd(self.c, Err("Cuckoo filter was not found"), "CF.COMPACT", "nokey")
        self.assertCmd(self.c, 1, "CF.ADD", "f", "a")
        self.assertCmd(self.c, OK, "CF.COMPACT", "f")
        self.assertCmd(self.c, arity("cf.compact"), "CF.COMPACT", "f", "x")


class GenericCommandTest(ServerTest):
    """Generic commands (§6): cases 55-62, 64-66."""

    def test_case_55_ping_echo(self):
        """`PING` → PONG; `PING hi` → "hi"; `PING a b` → E-ARITY 'ping'; `ECHO hi` → "hi";
        `ECHO` → E-ARITY 'echo'."""
        self.assertCmd(self.c, PONG, "PING")
        self.assertCmd(self.c, b"hi", "PING", "hi")
        self.assertCmd(self.c, arity("ping"), "PING", "a", "b")
        self.assertCmd(self.c, b"hi", "ECHO", "hi")
        self.assertCmd(self.c, arity("echo"), "ECHO")
        self.assertCmd(self.c, PONG, "ping")

    def _check_hello(self, reply, proto):
        fields = hello_fields(reply)
        self.assertEqual(set(fields), {"server", "version", "proto", "id", "mode", "role",
                                       "modules"}, f"HELLO {proto}: {reply!r}")
        for key, value in (type(reply) is Map and reply.pairs or []):
            self.assertIn(type(key), (bytes, Simple), f"HELLO {proto} key {key!r}")
        self.assertReply(fields["server"], b"redis", "HELLO server")
        self.assertReply(fields["version"], ANY_BULK, "HELLO version")
        self.assertReply(fields["proto"], proto, "HELLO proto")
        self.assertReply(fields["id"], ANY_INT, "HELLO id")
        self.assertReply(fields["mode"], b"standalone", "HELLO mode")
        self.assertReply(fields["role"], b"master", "HELLO role")
        self.assertReply(fields["modules"], [], "HELLO modules")

    def test_case_56_hello(self):
        """`HELLO 3` → map with proto 3, server, version, id, mode "standalone", role
        "master", modules []; then `CF.EXISTS nokey a` → false; `HELLO 2` → 14-element array
        with proto 2; then `CF.EXISTS nokey a` → 0."""
        reply = self.c.call("HELLO", "3")
        self.assertIs(type(reply), Map, f"HELLO 3: {reply!r}")
        self.assertEqual(len(reply.pairs), 7, f"HELLO 3: {reply!r}")
        self._check_hello(reply, 3)
        self.assertCmd(self.c, False, "CF.EXISTS", "nokey", "a")
        reply = self.c.call("HELLO", "2")
        self.assertIs(type(reply), list, f"HELLO 2: {reply!r}")
        self.assertEqual(len(reply), 14, f"HELLO 2: {reply!r}")
        self._check_hello(reply, 2)
        self.assertCmd(self.c, 0, "CF.EXISTS", "nokey", "a")

    def test_case_57_hello_errors(self):
        """`HELLO 4` → `NOPROTO unsupported protocol version`; `HELLO x` → `ERR Protocol
        version is not an integer or out of range`; `HELLO 3 FOO` → `ERR Syntax error in
        HELLO option 'FOO'` (and the connection stays on RESP2)."""
        self.assertCmd(self.c, Err("NOPROTO unsupported protocol version"), "HELLO", "4")
        self.assertCmd(self.c, Err("ERR Protocol version is not an integer or out of range"),
                       "HELLO", "x")
        self.assertCmd(self.c, Err("ERR Syntax error in HELLO option 'FOO'"),
                       "HELLO", "3", "FOO")
        self.assertCmd(self.c, 0, "CF.EXISTS", "nokey", "a")

    def test_hello_without_version_and_setname(self):
        """§6: `HELLO` with no argument reports the current protocol without switching;
        `HELLO 3 SETNAME n` names the connection."""
        reply = self.c.call("HELLO")
        self.assertIs(type(reply), list, f"HELLO: {reply!r}")
        self._check_hello(reply, 2)
        reply = self.c.call("HELLO", "3", "SETNAME", "app3")
        self.assertIs(type(reply), Map, f"HELLO 3 SETNAME: {reply!r}")
        self.assertCmd(self.c, b"app3", "CLIENT", "GETNAME")
        reply = self.c.call("HELLO")
        self.assertIs(type(reply), Map, f"HELLO on RESP3: {reply!r}")
        self._check_hello(reply, 3)

    def test_case_58_unknown_command(self):
        """`NOSUCH a b` → `ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' `;
        `TOPK.ADD k v` → `ERR unknown command 'TOPK.ADD', with args beginning with: 'k' 'v' `."""
        self.assertCmd(self.c, Err("ERR unknown command 'NOSUCH', with args beginning with: "
                                   "'a' 'b' "), "NOSUCH", "a", "b")
        self.assertCmd(self.c, Err("ERR unknown command 'TOPK.ADD', with args beginning with: "
                                   "'k' 'v' "), "TOPK.ADD", "k", "v")
        self.assertCmd(self.c, Err("ERR unknown command 'nosuch', with args beginning with: "),
                       "nosuch")

    def test_case_59_select(self):
        """`SELECT 0` → OK; `SELECT 1` → `ERR DB index is out of range`; `SELECT x` →
        `ERR value is not an integer or out of range`."""
        self.assertCmd(self.c, OK, "SELECT", "0")
        self.assertCmd(self.c, Err("ERR DB index is out of range"), "SELECT", "1")
        self.assertCmd(self.c, Err("ERR value is not an integer or out of range"),
                       "SELECT", "x")

    def scan(self, *options):
        """SCAN from "0" until the cursor is "0"; returns the set of keys seen."""
        keys, cursor = set(), b"0"
        for _ in range(10000):
            reply = self.c.call("SCAN", cursor, *options)
            self.assertIs(type(reply), list, f"SCAN {cursor!r}: {reply!r}")
            self.assertEqual(len(reply), 2, f"SCAN {cursor!r}: {reply!r}")
            cursor, batch = reply
            self.assertIs(type(cursor), bytes, f"SCAN cursor: {reply!r}")
            self.assertIs(type(batch), list, f"SCAN keys: {reply!r}")
            for key in batch:
                self.assertIs(type(key), bytes, f"SCAN key: {reply!r}")
            keys.update(batch)
            if cursor == b"0":
                return keys
        self.fail("SCAN never returned cursor 0")

    def test_case_60_keyspace(self):
        """`CF.ADD f a`; `CF.ADD g a`; `DBSIZE` → 2; `EXISTS f f nokey` → 2; `KEYS f*` →
        ["f"]; SCAN → {f, g} (also MATCH *, COUNT 100, TYPE MBbloomCF); `TYPE nokey` → none;
        `DEL f nokey` → 1; `FLUSHALL` → OK; `DBSIZE` → 0."""
        self.assertCmd(self.c, 1, "CF.ADD", "f", "a")
        self.assertCmd(self.c, 1, "CF.ADD", "g", "a")
        self.assertCmd(self.c, 2, "DBSIZE")
        self.assertCmd(self.c, 2, "EXISTS", "f", "f", "nokey")
        self.assertCmd(self.c, [b"f"], "KEYS", "f*")
        self.assertEqual(self.scan(), {b"f", b"g"})
        self.assertEqual(self.scan("MATCH", "*"), {b"f", b"g"})
        self.assertEqual(self.scan("COUNT", "100"), {b"f", b"g"})
        self.assertEqual(self.scan("TYPE", "MBbloomCF"), {b"f", b"g"})
        self.assertEqual(self.scan("MATCH", "*", "COUNT", "100", "TYPE", "MBbloomCF"),
                         {b"f", b"g"})
        self.assertCmd(self.c, Simple("none"), "TYPE", "nokey")
        self.assertCmd(self.c, 1, "DEL", "f", "nokey")
        self.assertCmd(self.c, OK, "FLUSHALL")
        self.assertCmd(self.c, 0, "DBSIZE")

    def test_keyspace_more(self):
        """§6 details: KEYS globs, SCAN TYPE selects, bad SCAN cursor/option, FLUSHALL
        ASYNC|SYNC, FLUSHDB, TYPE string."""
        self.assertCmd(self.c, 1, "CF.ADD", "f1", "a")
        self.assertCmd(self.c, 1, "CF.ADD", "f2", "a")
        self.assertCmd(self.c, OK, "SET", "s", "v")
        self.assertCmd(self.c, Simple("string"), "TYPE", "s")
        self.assertEqual(sorted(self.c.call("KEYS", "*")), [b"f1", b"f2", b"s"])
        self.assertEqual(sorted(self.c.call("KEYS", "f?")), [b"f1", b"f2"])
        self.assertEqual(sorted(self.c.call("KEYS", "f[23]")), [b"f2"])
        self.assertEqual(self.c.call("KEYS", "nomatch*"), [])
        self.assertEqual(self.scan("TYPE", "MBbloomCF"), {b"f1", b"f2"})
        self.assertEqual(self.scan("TYPE", "string"), {b"s"})
        self.assertEqual(self.scan("MATCH", "f*"), {b"f1", b"f2"})
        self.assertCmd(self.c, Err("ERR invalid cursor"), "SCAN", "x")
        self.assertCmd(self.c, Err("ERR syntax error"), "SCAN", "0", "FOO")
        self.assertCmd(self.c, 2, "DEL", "f1", "s", "nokey")
        self.assertCmd(self.c, OK, "FLUSHALL", "ASYNC")
        self.assertCmd(self.c, 0, "DBSIZE")
        self.assertCmd(self.c, 1, "CF.ADD", "f", "a")
        self.assertCmd(self.c, OK, "FLUSHALL", "SYNC")
        self.assertCmd(self.c, Err("ERR syntax error"), "FLUSHALL", "FOO")
        self.assertCmd(self.c, 1, "CF.ADD", "f", "a")
        self.assertCmd(self.c, OK, "FLUSHDB")
        self.assertCmd(self.c, 0, "DBSIZE")

    def test_scan_count_is_how_many_keys_a_call_looks_at(self):
        """200 keys: `SCAN 0 COUNT 1000` returns them all and cursor 0 in one call; with the
        default COUNT (10) a call returns part of them and a cursor to go on from, and the
        iteration still sees every key once. COUNT 0, x or missing: errors."""
        keys = {f"k{i}".encode() for i in range(200)}
        self.c.pipeline([("SET", key, "v") for key in keys])
        cursor, batch = self.c.call("SCAN", "0", "COUNT", "1000")
        self.assertEqual((cursor, len(batch), set(batch)), (b"0", 200, keys))
        cursor, batch = self.c.call("SCAN", "0")
        self.assertNotEqual(cursor, b"0")
        self.assertGreaterEqual(len(batch), 10)
        self.assertLess(len(batch), 200)
        self.assertEqual(self.scan(), keys)
        self.assertEqual(self.scan("COUNT", "1"), keys)
        self.assertCmd(self.c, Err("ERR syntax error"), "SCAN", "0", "COUNT", "0")
        self.assertCmd(self.c, Err("ERR value is not an integer or out of range"),
                       "SCAN", "0", "COUNT", "x")
        self.assertCmd(self.c, Err("ERR syntax error"), "SCAN", "0", "COUNT")

    def test_case_61_client_name(self):
        """`CLIENT GETNAME` → nil; `CLIENT SETNAME app` → OK; `CLIENT GETNAME` → "app";
        `CLIENT SETNAME "a b"` → `ERR Client names cannot contain spaces, newlines or special
        characters.`; `CLIENT SETINFO LIB-NAME x` → OK."""
        self.assertCmd(self.c, None, "CLIENT", "GETNAME")
        self.assertCmd(self.c, OK, "CLIENT", "SETNAME", "app")
        self.assertCmd(self.c, b"app", "CLIENT", "GETNAME")
        self.assertCmd(self.c, Err("ERR Client names cannot contain spaces, newlines or "
                                   "special characters."), "CLIENT", "SETNAME", "a b")
        self.assertCmd(self.c, OK, "CLIENT", "SETINFO", "LIB-NAME", "x")

    def test_client_more(self):
        """§6: CLIENT ID, SETINFO LIB-VER, empty SETNAME clears, unknown subcommand and
        subcommand arity errors."""
        self.assertReply(self.c.call("CLIENT", "ID"), ANY_INT, "CLIENT ID")
        self.assertCmd(self.c, OK, "CLIENT", "SETINFO", "LIB-VER", "1.0")
        self.assertCmd(self.c, OK, "CLIENT", "SETNAME", "app")
        self.assertCmd(self.c, OK, "CLIENT", "SETNAME", "")
        self.assertCmd(self.c, None, "CLIENT", "GETNAME")
        self.assertCmd(self.c, Err("ERR Client names cannot contain spaces, newlines or "
                                   "special characters."), "CLIENT", "SETNAME", "a\nb")
        self.assertCmd(self.c, Err("ERR unknown subcommand 'foo'. Try CLIENT HELP."),
                       "CLIENT", "foo")
        self.assertCmd(self.c, arity("client|setname"), "CLIENT", "SETNAME")

    def test_case_62_auth_without_password(self):
        """No password configured: `AUTH x` → `ERR AUTH <password> called without any
        password configured for the default user. Are you sure your configuration is
        correct?`."""
        self.assertCmd(self.c, Err("ERR AUTH <password> called without any password "
                                   "configured for the default user. Are you sure your "
                                   "configuration is correct?"), "AUTH", "x")

    def test_case_64_command_docs_and_info(self):
        """`COMMAND DOCS` → an array (RESP2) or map (RESP3), possibly empty, whose keys are
        bulk strings; `COMMAND COUNT` → an integer; `INFO` → a bulk string containing
        `redis_version:`; `INFO server` likewise."""
        docs = self.c.call("COMMAND", "DOCS")
        self.assertIs(type(docs), list, f"COMMAND DOCS: {docs!r:.200}")
        self.assertEqual(len(docs) % 2, 0, "COMMAND DOCS is a flat map")
        for name in docs[0::2]:
            self.assertIs(type(name), bytes, f"COMMAND DOCS key {name!r}")
        self.assertReply(self.c.call("COMMAND", "COUNT"), ANY_INT, "COMMAND COUNT")
        for args in (("INFO",), ("INFO", "server")):
            info = self.c.call(*args)
            self.assertIs(type(info), bytes, f"{show_command(args)}: {info!r:.200}")
            self.assertIn(b"redis_version:", info)
        self.hello3(self.c)
        docs = self.c.call("COMMAND", "DOCS")
        self.assertIs(type(docs), Map, f"[R3] COMMAND DOCS: {docs!r:.200}")
        for name in docs.keys():
            self.assertIs(type(name), bytes, f"[R3] COMMAND DOCS key {name!r}")

    def test_info_contents(self):
        """§6 INFO: `# Server`, `redis_version:`, `redis_mode:standalone` lines joined by
        CRLF; `# Keyspace` with `db0:keys=N,expires=0,avg_ttl=0` when non-empty; RESP3: a
        verbatim string `txt`; COMMAND INFO gives one entry per name (nil if unknown)."""
        self.assertCmd(self.c, 1, "CF.ADD", "f", "a")
        info = self.c.call("INFO")
        self.assertIs(type(info), bytes)
        lines = info.split(b"\r\n")
        self.assertIn(b"# Server", lines)
        self.assertIn(b"redis_mode:standalone", lines)
        self.assertTrue(any(line.startswith(b"redis_version:") for line in lines), info)
        self.assertIn(b"db0:keys=1,expires=0,avg_ttl=0", lines)
        self.hello3(self.c)
        info = self.c.call("INFO", "server")
        self.assertIs(type(info), Verbatim, f"[R3] INFO server: {info!r:.200}")
        self.assertEqual(info.fmt, "txt")
        self.assertIn(b"redis_version:", info.data)
        reply = self.c.call("COMMAND", "INFO", "nosuchcommand")
        self.assertReply(reply, [None], "COMMAND INFO nosuchcommand")
        reply = self.c.call("COMMAND", "INFO", "cf.add", "nosuchcommand")
        self.assertIs(type(reply), list, f"COMMAND INFO: {reply!r}")
        self.assertEqual(len(reply), 2, f"COMMAND INFO: {reply!r}")
        self.assertIs(type(reply[0]), list, f"COMMAND INFO cf.add: {reply!r}")
        self.assertIsNone(reply[1])

    def test_case_65_quit(self):
        """`QUIT` → OK, then the connection is closed by the server."""
        self.assertCmd(self.c, OK, "QUIT")
        self.assertTrue(self.c.closed_by_server(), "the connection stayed open after QUIT")
        other = self.connect()
        self.assertCmd(other, PONG, "PING")

    def test_case_66_pipelining(self):
        """Pipelining: `CF.ADD f a`, `CF.EXISTS f a`, `CF.COUNT f a` in one write → 1, 1, 1
        in order."""
        replies = self.c.pipeline([("CF.ADD", "f", "a"), ("CF.EXISTS", "f", "a"),
                                   ("CF.COUNT", "f", "a")])
        self.assertReply(replies, [1, 1, 1], "pipeline")

    def test_long_pipeline_in_order(self):
        """Pipelined commands are answered in order: 3,000 commands of mixed kinds in one
        write."""
        commands, expected = [], []
        for i in range(1000):
            commands += [("CF.ADD", "f", f"p{i}"), ("ECHO", f"e{i}"), ("CF.COUNT", "f", "zz")]
            expected += [1, f"e{i}".encode(), 0]
        self.assertReply(self.c.pipeline(commands), expected, "3,000 pipelined commands")
        self.assertInfo(self.c, "f", items=1000)

    def test_pipelined_commands_see_the_key_dropped_and_replaced_in_between(self):
        """One write: commands on `f` around `DEL f`, `SET f`, `FLUSHALL` each see the key as
        those left it (the server remembers the key a client last found, and must forget it)."""
        replies = self.c.pipeline([
            ("CF.ADD", "f", "a"), ("CF.EXISTS", "f", "a"),
            ("DEL", "f"), ("CF.EXISTS", "f", "a"), ("CF.ADD", "f", "b"), ("CF.EXISTS", "f", "a"),
            ("SET", "f", "text"), ("CF.ADD", "f", "a"), ("CF.EXISTS", "f", "b"),
            ("FLUSHALL",), ("CF.ADD", "f", "c"), ("CF.EXISTS", "f", "b"),
            ("CF.COUNT", "f", "c")])
        self.assertReply(replies, [1, 1, 1, 0, 1, 0, OK, E_TYPE, 0, OK, 1, 0, 1])


class AuthTest(ServerTest):
    """Case 63: a server started with `--requirepass pw`."""

    password = "pw"

    def test_case_63_requirepass(self):
        """Password `pw` configured: `CF.ADD f a` → `NOAUTH Authentication required.`;
        `AUTH bad` → `WRONGPASS …`; `AUTH pw` → OK; `CF.ADD f a` → 1. New connection:
        `HELLO 3 AUTH default pw` → map with proto 3."""
        self.assertCmd(self.c, NOAUTH, "CF.ADD", "f", "a")
        self.assertCmd(self.c, WRONGPASS, "AUTH", "bad")
        self.assertCmd(self.c, OK, "AUTH", "pw")
        self.assertCmd(self.c, 1, "CF.ADD", "f", "a")
        other = self.connect()
        reply = other.call("HELLO", "3", "AUTH", "default", "pw")
        self.assertIs(type(reply), Map, f"HELLO 3 AUTH: {reply!r}")
        self.assertEqual(hello_fields(reply).get("proto"), 3, f"HELLO 3 AUTH: {reply!r}")
        self.assertCmd(other, True, "CF.EXISTS", "f", "a")

    def test_auth_more(self):
        """§6: every command but AUTH, HELLO and QUIT needs authentication; HELLO without
        AUTH gets its own NOAUTH text; `AUTH default pw` works; more than 2 arguments →
        `ERR syntax error`; a wrong HELLO AUTH is WRONGPASS."""
        self.assertCmd(self.c, NOAUTH, "PING")
        self.assertCmd(self.c, NOAUTH, "CF.EXISTS", "f", "a")
        self.assertCmd(self.c, NOAUTH, "FLUSHALL")
        self.assertCmd(self.c, Err(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
            "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client "
            "and select the RESP protocol version at the same time"), "HELLO", "3")
        self.assertCmd(self.c, WRONGPASS, "HELLO", "3", "AUTH", "default", "bad")
        self.assertCmd(self.c, Err("ERR syntax error"), "AUTH", "a", "b", "c")
        self.assertCmd(self.c, OK, "AUTH", "default", "pw")
        self.assertCmd(self.c, PONG, "PING")
        other = self.connect()
        self.assertCmd(other, OK, "QUIT")
        self.assertTrue(other.closed_by_server(), "QUIT before AUTH did not close")


# =============================================================================================
# Beyond §10: protocol robustness, concurrency, server lifecycle.

class ProtocolRobustnessTest(ServerTest):
    """A malformed request gets `ERR Protocol error…` and its connection is closed; other
    connections are unaffected."""

    def _check_rejected(self, raw):
        bystander = self.connect()
        self.assertCmd(bystander, PONG, "PING")
        bad = self.connect()
        bad.send_raw(raw)
        try:
            reply = bad.read_reply()
        except socket.timeout:
            self.fail(f"no reply to {raw!r} within {SOCKET_TIMEOUT_S} s")
        except ConnectionClosed:
            self.fail(f"the connection was closed after {raw!r} without an error reply")
        self.assertIs(type(reply), Err, f"{raw!r} gave {reply!r}")
        self.assertTrue(reply.text.startswith("ERR Protocol error"), f"{raw!r} gave {reply!r}")
        self.assertTrue(bad.closed_by_server(), f"the connection stayed open after {raw!r}")
        self.assertCmd(bystander, PONG, "PING")

    def test_negative_bulk_length(self):
        """`*1\\r\\n$-5\\r\\n` → protocol error, connection closed, others still served."""
        self._check_rejected(b"*1\r\n$-5\r\n")

    def test_non_numeric_multibulk_length(self):
        """`*abc\\r\\n` → protocol error, connection closed, others still served."""
        self._check_rejected(b"*abc\r\n")

    def test_huge_bulk_length(self):
        """`*1\\r\\n$999999999999\\r\\n` is refused at once (no hang waiting for the data)."""
        self._check_rejected(b"*1\r\n$999999999999\r\n")

    def test_huge_multibulk_length(self):
        """`*9999999999999\\r\\n` is refused at once."""
        self._check_rejected(b"*9999999999999\r\n")

    def test_non_bulk_argument(self):
        """An array element that is not a bulk string (`*1\\r\\n:1\\r\\n`) is refused."""
        self._check_rejected(b"*1\r\n:1\r\n")

    def test_byte_by_byte_request(self):
        """A request arriving one byte at a time is assembled (incremental parser)."""
        raw = encode_command(("ECHO", "hi")) + encode_command(("CF.ADD", "f", "a"))
        for i in range(len(raw)):
            self.c.send_raw(raw[i:i + 1])
            time.sleep(0.002)
        self.assertReply(self.c.read_reply(), b"hi", "ECHO hi sent byte by byte")
        self.assertReply(self.c.read_reply(), 1, "CF.ADD f a sent byte by byte")



class ConcurrencyTest(ServerTest):
    """Many clients on the 2-thread server: no acknowledged add is ever missing."""

    WRITERS, READERS, PER_WRITER, BATCH = 8, 2, 2000, 100
    TIME_LIMIT_S = 120

    def test_concurrent_adds_and_mexists(self):
        """8 writers each CF.ADD 2,000 own items (pipelined by 100) while 2 readers CF.MEXISTS
        items already acknowledged: every acknowledged item is found then and afterwards,
        and `Number of items inserted` equals the acknowledged adds."""
        self.assertCmd(self.c, OK, "CF.RESERVE", "c", "100000")
        port = self.server.port
        acked, lock = [], threading.Lock()
        errors = []
        writers_done = threading.Event()
        barrier = threading.Barrier(self.WRITERS + self.READERS, timeout=30)
        reads = [0] * self.READERS
        deadline = time.monotonic() + self.TIME_LIMIT_S

        def writer(t):
            conn = None
            try:
                conn = Conn(port)
                barrier.wait()
                for start in range(0, self.PER_WRITER, self.BATCH):
                    items = [f"w{t}-{i}".encode() for i in range(start, start + self.BATCH)]
                    replies = conn.pipeline([("CF.ADD", "c", it) for it in items])
                    ok = [it for it, r in zip(items, replies) if type(r) is int and r == 1]
                    if len(ok) != len(items):
                        bad = [(it, r) for it, r in zip(items, replies) if r != 1][:3]
                        errors.append(f"writer {t}: CF.ADD replies {bad}")
                    with lock:
                        acked.extend(ok)
            except Exception as e:  # reported through errors, checked below
                errors.append(f"writer {t}: {e!r}")
            finally:
                if conn:
                    conn.close()

        def reader(r):
            conn, rng = None, random.Random(r)
            try:
                conn = Conn(port)
                barrier.wait()
                for _ in range(1000000):
                    last_round = writers_done.is_set()
                    with lock:
                        n = len(acked)
                        sample = [acked[rng.randrange(n)] for _ in range(min(n, 50))]
                    if sample:
                        reply = conn.call("CF.MEXISTS", "c", *sample)
                        if type(reply) is not list or len(reply) != len(sample) or \
                                any(type(v) is not int or v != 1 for v in reply):
                            missing = [it for it, v in zip(sample, reply or []) if v != 1]
                            errors.append(f"reader {r}: acknowledged items not found: "
                                          f"{missing[:5]} (reply {str(reply)[:200]})")
                            return
                        reads[r] += 1
                    if last_round or time.monotonic() > deadline:
                        return
            except Exception as e:  # reported through errors, checked below
                errors.append(f"reader {r}: {e!r}")
            finally:
                if conn:
                    conn.close()

        writer_threads = [threading.Thread(target=writer, args=(t,), daemon=True)
                          for t in range(self.WRITERS)]
        reader_threads = [threading.Thread(target=reader, args=(r,), daemon=True)
                          for r in range(self.READERS)]
        for thread in writer_threads + reader_threads:
            thread.start()
        for thread in writer_threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        writers_done.set()
        for thread in reader_threads:
            thread.join(max(0.0, deadline - time.monotonic()) + 10)
        stuck = [t.name for t in writer_threads + reader_threads if t.is_alive()]
        self.assertEqual(stuck, [], f"threads still running after {self.TIME_LIMIT_S} s")
        self.assertEqual(errors, [])
        self.assertEqual(len(acked), self.WRITERS * self.PER_WRITER)
        self.assertTrue(all(reads), f"every reader ran CF.MEXISTS at least once: {reads}")
        missing = []
        for start in range(0, len(acked), 500):
            batch = acked[start:start + 500]
            replies = self.c.pipeline([("CF.EXISTS", "c", it) for it in batch])
            missing += [it for it, r in zip(batch, replies) if type(r) is not int or r != 1]
        self.assertEqual(missing[:10], [], f"{len(missing)} acknowledged items missing")
        self.assertInfo(self.c, "c", items=len(acked), filters=1)


class BusyPollConcurrencyTest(ConcurrencyTest):
    """The same writers and readers on a server whose I/O threads poll before they sleep."""

    server_args = ("--busy-poll", "200")


class LifecycleTest(unittest.TestCase):
    """The server's start-up line, its options' ranges, and its reaction to SIGTERM."""

    def test_out_of_range_options_are_refused(self):
        """An option out of its range: exit status 2, the option and the range named, nothing
        served."""
        for option, value, allowed in (("--busy-poll", "1000001", "0 to 1000000"),
                                       ("--threads", "0", "1 to 1024")):
            with self.subTest(option=option):
                run = subprocess.run([BINARY, "serve", "--port", "0", option, value],
                                     capture_output=True, timeout=STOP_TIMEOUT_S, text=True)
                self.assertEqual(run.returncode, 2)
                self.assertEqual(run.stdout, "")
                self.assertIn(f"{option}: Value {value} not in range {allowed}", run.stderr)

    def test_sigterm_stops_a_busy_polling_server(self):
        """With --busy-poll the I/O threads spin between requests; SIGTERM still stops the
        server, with open connections, within 5 s, and a client's replies come in order."""
        server = Server(extra_args=["--busy-poll", "1000000"]).start()
        self.addCleanup(server.cleanup)
        conn = Conn(server.port)
        self.addCleanup(conn.close)
        replies = conn.pipeline([("ECHO", str(i)) for i in range(100)])
        self.assertEqual(replies, [str(i).encode() for i in range(100)])
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.fail(f"the busy-polling server ignored SIGTERM for {STOP_TIMEOUT_S} s")

    def test_sigterm_stops_the_server(self):
        """SIGTERM stops a server with open connections within 5 s."""
        server = Server().start()
        self.addCleanup(server.cleanup)
        conn = Conn(server.port)
        self.addCleanup(conn.close)
        self.assertEqual(conn.call("PING"), PONG)
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.fail(f"the server ignored SIGTERM for {STOP_TIMEOUT_S} s")

    def test_two_servers_get_different_ports(self):
        """`--port 0` lets the system choose: two servers listen on different ports."""
        a = Server().start()
        self.addCleanup(a.cleanup)
        b = Server().start()
        self.addCleanup(b.cleanup)
        self.assertNotEqual(a.port, b.port)
        for server in (a, b):
            conn = Conn(server.port)
            self.addCleanup(conn.close)
            self.assertEqual(conn.call("PING"), PONG)


# =============================================================================================
# Smoke tests through real clients: redis-py 4.3.4 (Debian) and redis-cli.

class RedisPyTest(ServerTest):
    """redis-py's CF helpers against the server (RESP2)."""

    def setUp(self):
        super().setUp()
        try:
            import redis  # Debian's python3-redis
        except ImportError:
            self.skipTest("redis-py (python3-redis) is not installed")
        self.redis = redis
        kwargs = dict(host="127.0.0.1", port=self.server.port, socket_timeout=SOCKET_TIMEOUT_S,
                      socket_connect_timeout=SOCKET_TIMEOUT_S, client_name="conformance")
        try:  # redis-py >= 5 takes protocol=; 4.3.4 speaks RESP2 only
            self.r = redis.Redis(protocol=2, **kwargs)
        except TypeError:
            self.r = redis.Redis(**kwargs)
        self.addCleanup(self.r.close)

    def reserve(self, *args, **kwargs):
        cf = self.r.cf()
        return getattr(cf, "reserve", cf.create)(*args, **kwargs)

    def test_cf_helpers(self):
        """reserve/add/addnx/insert/insertnx/exists/mexists/count/delete/info via r.cf()."""
        cf = self.r.cf()
        # redis-py sends EXPANSION, BUCKETSIZE, MAXITERATIONS in that order.
        self.assertTrue(self.reserve("f", 1000, expansion=1, bucket_size=4, max_iterations=30))
        self.assertEqual(cf.add("f", "a"), 1)
        self.assertEqual(cf.addnx("f", "a"), 0)
        self.assertEqual(cf.insert("f", ["b", "c"]), [1, 1])
        self.assertEqual(cf.insertnx("f", ["b", "d"]), [0, 1])
        self.assertEqual(cf.insert("f", ["e"], capacity=10, nocreate=True), [1])
        self.assertEqual(cf.exists("f", "a"), 1)
        self.assertEqual(cf.exists("f", "zzz"), 0)
        self.assertEqual(cf.mexists("f", "a", "b", "zzz"), [1, 1, 0])
        self.assertEqual(cf.count("f", "a"), 1)
        self.assertEqual(cf.delete("f", "a"), 1)
        self.assertEqual(cf.delete("f", "a"), 0)
        info = cf.info("f")
        self.assertGreater(info.size, 0)
        self.assertEqual((info.bucketNum, info.filterNum, info.insertedNum, info.deletedNum,
                          info.bucketSize, info.expansionRate, info.maxIteration),
                         (256, 1, 4, 1, 4, 1, 30))
        self.assertEqual(self.r.type("f"), TYPE_NAME.encode())

    def test_errors_and_generic(self):
        """Error replies become ResponseError; generic commands the client relies on."""
        cf = self.r.cf()
        self.assertTrue(self.r.ping())
        self.assertEqual(self.r.client_getname(), "conformance")
        self.assertTrue(self.reserve("f", 100))
        with self.assertRaisesRegex(self.redis.ResponseError, "item exists"):
            self.reserve("f", 100)
        with self.assertRaisesRegex(self.redis.ResponseError, "Bad capacity"):
            self.r.execute_command("CF.RESERVE", "g", "abc")
        with self.assertRaisesRegex(self.redis.ResponseError, "Not found"):
            cf.delete("nokey", "a")
        with self.assertRaisesRegex(self.redis.ResponseError, "not found"):
            cf.insert("nokey", ["a"], nocreate=True)
        self.assertEqual(self.r.dbsize(), 1)
        self.assertEqual(self.r.exists("f", "nokey"), 1)
        self.assertEqual(sorted(self.r.scan_iter(match="*", count=100)), [b"f"])
        info = self.r.info("server")
        self.assertIn("redis_version", info)
        self.assertTrue(self.r.flushall())
        self.assertEqual(self.r.dbsize(), 0)

    def test_pipeline(self):
        """A non-transactional redis-py pipeline sends everything in one write."""
        pipe = self.r.pipeline(transaction=False)
        pipe.execute_command("CF.ADD", "f", "a")
        pipe.execute_command("CF.EXISTS", "f", "a")
        pipe.execute_command("CF.COUNT", "f", "a")
        pipe.execute_command("CF.MEXISTS", "f", "a", "b")
        self.assertEqual(pipe.execute(), [1, 1, 1, [1, 0]])


class RedisCliTest(ServerTest):
    """redis-cli (Debian's redis-tools) against the server."""

    def cli(self, *args, resp3=False):
        argv = ["redis-cli", "-h", "127.0.0.1", "-p", str(self.server.port), "--no-raw"]
        if resp3:
            argv.append("-3")
        try:
            done = subprocess.run(argv + list(args), stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=10)
        except FileNotFoundError:
            self.skipTest("redis-cli is not installed")
        return done.stdout.decode("utf-8", "replace")

    def test_cf_commands(self):
        """`redis-cli … CF.ADD f a` prints `(integer) 1`; simple strings print bare, bulk
        strings quoted, errors as `(error) …`."""
        self.assertEqual(self.cli("PING"), "PONG\n")
        self.assertEqual(self.cli("CF.RESERVE", "f", "1000"), "OK\n")
        self.assertEqual(self.cli("CF.ADD", "f", "a"), "(integer) 1\n")
        self.assertEqual(self.cli("CF.EXISTS", "f", "a"), "(integer) 1\n")
        self.assertEqual(self.cli("CF.MEXISTS", "f", "a", "b"),
                         "1) (integer) 1\n2) (integer) 0\n")
        self.assertEqual(self.cli("CF.RESERVE", "f", "1000"), "(error) ERR item exists\n")
        self.assertEqual(self.cli("CF.DEL", "nokey", "a"), "(error) Not found\n")
        self.assertEqual(self.cli("ECHO", "hi"), '"hi"\n')
        self.assertEqual(self.cli("TYPE", "f"), "MBbloomCF\n")
        out = self.cli("CF.INFO", "f").splitlines()
        self.assertEqual(len(out), 16, out)
        self.assertRegex(out[1], r"^ 2\) \(integer\) [1-9][0-9]*$")
        self.assertEqual(out[:1] + out[2:], [
            " 1) Size", " 3) Number of buckets", " 4) (integer) 512",
            " 5) Number of filters", " 6) (integer) 1", " 7) Number of items inserted",
            " 8) (integer) 1", " 9) Number of items deleted", "10) (integer) 0",
            "11) Bucket size", "12) (integer) 2", "13) Expansion rate", "14) (integer) 1",
            "15) Max iterations", "16) (integer) 20"])

    def test_resp3(self):
        """`redis-cli -3` (HELLO 3 first): booleans print as (true)/(false)."""
        self.assertEqual(self.cli("CF.ADD", "f", "a", resp3=True), "(true)\n")
        self.assertEqual(self.cli("CF.EXISTS", "f", "b", resp3=True), "(false)\n")
        self.assertEqual(self.cli("CF.COUNT", "f", "a", resp3=True), "(integer) 1\n")
        out = self.cli("CF.INFO", "f", resp3=True).splitlines()
        self.assertEqual(len(out), 8, out)
        self.assertEqual(out[1], "2# Number of buckets => (integer) 512")


class RedisBenchmarkTest(ServerTest):
    """redis-benchmark (Debian's redis-tools) runs its pipelined load without an error."""

    def test_pipelined_cf_add_and_exists(self):
        for command in (["CF.ADD", "bench", "__rand_int__"], ["CF.EXISTS", "bench", "__rand_int__"]):
            argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(self.server.port), "-c", "8",
                    "-P", "16", "-n", "20000", "-r", "100000", "--csv", *command]
            try:
                done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                      timeout=60)
            except FileNotFoundError:
                self.skipTest("redis-benchmark is not installed")
            out = done.stdout.decode("utf-8", "replace")
            self.assertEqual(done.returncode, 0, out + done.stderr.decode("utf-8", "replace"))
            self.assertNotIn("ERR", out)
            rps = float(out.strip().splitlines()[-1].split(",")[1].strip('"'))
            self.assertGreater(rps, 0, out)
        info = self.info(self.c, "bench")
        self.assertGreater(info["Number of items inserted"], 0)


class FillTest(ServerTest):
    """A filter without expansion accepts at least 95% of its slots (BUCKETSIZE 4) or 84%
    (BUCKETSIZE 2) before it answers `Filter is full`: a BFS cuckoo path, not 20 kicks."""

    def fill_ratio(self, bucket_size):
        self.assertCmd(self.c, OK, "CF.RESERVE", "f", "65536", "BUCKETSIZE", str(bucket_size),
                       "EXPANSION", "0")
        slots = self.info(self.c, "f")["Number of buckets"] * bucket_size
        added = 0
        for start in range(0, 2 * slots, 1000):  # bounded: twice the slots at most
            replies = self.c.pipeline([("CF.ADD", "f", f"fill-{i}")
                                       for i in range(start, start + 1000)])
            full = [r for r in replies if r != 1]
            added += len(replies) - len(full)
            if full:
                self.assertEqual(full[0], Err("Filter is full"))
                break
        self.assertEqual(self.info(self.c, "f")["Number of items inserted"], added)
        return added / slots

    def test_bucketsize_4_fills_to_95_percent(self):
        self.assertGreaterEqual(self.fill_ratio(4), 0.95)

    def test_bucketsize_2_fills_to_84_percent(self):
        self.assertGreaterEqual(self.fill_ratio(2), 0.84)


class LimitsTest(unittest.TestCase):
    """--timeout closes an idle client; --max-clients refuses one client too many."""

    def start(self, *extra):
        server = Server(extra_args=list(extra))
        self.addCleanup(server.cleanup)
        server.start()
        return server

    def test_idle_client_is_closed_after_the_timeout(self):
        server = self.start("--timeout", "1")
        idle, busy = Conn(server.port), Conn(server.port)
        self.addCleanup(idle.close)
        self.addCleanup(busy.close)
        self.assertEqual(idle.call("PING"), Simple("PONG"))
        for _ in range(5):  # busy keeps talking for 2.5 s
            self.assertEqual(busy.call("PING"), Simple("PONG"))
            time.sleep(0.5)
        with self.assertRaises((ConnectionClosed, OSError)):
            idle.call("PING")

    def test_a_client_that_does_not_read_cannot_grow_the_server(self):
        """400 pipelined CF.SCANDUMP replies of 1 MB each, never read: the server writes what
        the socket takes and stops running that client's commands, so its memory stays flat."""
        server = self.start()
        conn = Conn(server.port)
        self.addCleanup(conn.close)
        self.assertEqual(conn.call("CF.RESERVE", "f", "500000"), Simple("OK"))  # 1 MB table
        self.assertEqual(conn.call("CF.ADD", "f", "a"), 1)

        def rss_kib():
            with open(f"/proc/{server.proc.pid}/status") as status:
                return int(next(l for l in status if l.startswith("VmRSS:")).split()[1])

        before = rss_kib()
        request = encode_command(["CF.SCANDUMP", "f", "1"])
        conn.sock.sendall(request * 400)
        time.sleep(1.5)
        grown_mib = (rss_kib() - before) / 1024
        self.assertLess(grown_mib, 64, f"the server grew by {grown_mib:.0f} MiB")
        self.assertTrue(server.alive())

    def test_clients_buffers_are_bounded_together(self):
        """Ten clients each send 20 MB of a 60 MB argument and stop: each is within its own
        bound, but together they pass --max-client-memory 64 MiB. The server closes the largest
        until the sum is back under it, says so in INFO, and keeps serving a small client."""
        server = self.start("--max-client-memory", str(64 << 20))

        def rss_bytes():
            with open(f"/proc/{server.proc.pid}/status") as status:
                return 1024 * int(next(l for l in status if l.startswith("VmRSS:")).split()[1])

        before = rss_bytes()
        small = Conn(server.port)
        self.addCleanup(small.close)
        self.assertEqual(small.call("PING"), Simple("PONG"))
        header = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$60000000\r\n"
        big = []
        for _ in range(10):
            conn = Conn(server.port)
            self.addCleanup(conn.close)
            try:
                conn.send_raw(header + b"x" * 20_000_000)
            except OSError:
                pass  # closed by the server while sending: what the bound is for
            big.append(conn)
        for _ in range(100):  # up to 10 s for the server to read what was sent
            fields, _ = info_fields(small, "memory", "stats")
            if int(fields["evicted_clients"]) >= 8:
                break
            time.sleep(0.1)
        self.assertGreaterEqual(int(fields["evicted_clients"]), 8, fields)
        self.assertLessEqual(int(fields["mem_clients_normal"]), 64 << 20, fields)
        self.assertEqual(int(fields["maxmemory_clients"]), 64 << 20, fields)
        # Without the bound these clients took the server's RSS up by over 600 MB. Under ASan,
        # its quarantine keeps up to 256 MB of the evicted clients' freed buffers resident.
        grown = rss_bytes() - before
        self.assertLess(grown, 384 << 20, f"RSS grew by {grown >> 20} MiB; {fields}")
        self.assertEqual(small.call("PING"), Simple("PONG"))
        self.assertIn("more than --max-client-memory", server.stderr_tail())
        # The defaults are reported too.
        other = self.start()
        conn = Conn(other.port)
        self.addCleanup(conn.close)
        fields, headers = info_fields(conn, "memory")
        self.assertEqual(headers, ["Memory"])
        self.assertEqual(int(fields["maxmemory_clients"]), 512 << 20)

    def test_clients_growing_at_once_are_bounded_together(self):
        """Sixteen clients (more threads than cores, on both I/O threads of the server) each
        send a 4 MB SET in 256 KB pieces at once, under --max-client-memory 16 MiB: every client
        either gets +OK or is closed, the server closed at least as many as lost their
        connection, the sum ends under the bound and falls back once the values are stored,
        and the key holds one client's whole value."""
        server = self.start("--max-client-memory", str(16 << 20))
        value = 4 << 20
        outcomes, lock = [], threading.Lock()

        def client(index):
            conn = Conn(server.port)
            try:
                data = encode_command(["SET", "k", bytes([65 + index % 26]) * value])
                for at in range(0, len(data), 256 << 10):
                    conn.send_raw(data[at:at + (256 << 10)])
                outcome = "ok" if conn.read_reply() == Simple("OK") else "other"
            except (ConnectionClosed, OSError):
                outcome = "closed"
            finally:
                conn.close()
            with lock:
                outcomes.append(outcome)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual(len(outcomes), 16, "a client thread did not finish within 60 s")
        self.assertNotIn("other", outcomes)
        closed = outcomes.count("closed")
        self.assertGreaterEqual(closed, 1, outcomes)
        small = Conn(server.port)
        self.addCleanup(small.close)
        fields, _ = info_fields(small, "memory", "stats")
        self.assertGreaterEqual(int(fields["evicted_clients"]), closed, fields)
        self.assertLessEqual(int(fields["mem_clients_normal"]), 2 << 20, fields)
        if outcomes.count("ok"):
            stored = small.call("GET", "k")
            self.assertEqual(len(stored), value)
            self.assertEqual(stored, stored[:1] * value, "a value mixed from two clients")
        self.assertTrue(server.alive())

    def test_one_client_too_many_is_refused(self):
        server = self.start("--max-clients", "2")
        first, second, third = (Conn(server.port) for _ in range(3))
        for conn in (first, second, third):
            self.addCleanup(conn.close)
        self.assertEqual(first.call("PING"), Simple("PONG"))
        self.assertEqual(second.call("PING"), Simple("PONG"))
        reply = third.read_reply()
        self.assertEqual(reply, Err("ERR max number of clients reached"))
        first.close()
        time.sleep(0.2)
        fourth = Conn(server.port)
        self.addCleanup(fourth.close)
        self.assertEqual(fourth.call("PING"), Simple("PONG"))


# ---------------------------------------------------------------------------------------------
# Snapshots: SAVE, BGSAVE, --save, the load at start-up, and crashes in the middle of them.

class PersistenceTest(unittest.TestCase):
    """Each test has its own snapshot directory and starts and stops its own servers."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="ccf-snapshots-")
        self.addCleanup(self.dir.cleanup)
        self.snapshot = os.path.join(self.dir.name, "ccf.snapshot")

    def start(self, *extra, startup_timeout_s=STARTUP_TIMEOUT_S):
        server = Server(extra_args=["--dir", self.dir.name, *extra],
                        startup_timeout_s=startup_timeout_s)
        self.addCleanup(server.cleanup)
        server.start()
        conn = Conn(server.port)
        self.addCleanup(conn.close)
        return server, conn

    def kill(self, server):
        server.proc.kill()
        server.proc.wait(STOP_TIMEOUT_S)

    def fill(self, conn, key, count, prefix):
        """Adds `count` distinct items, pipelined in batches of 1000; all must answer 1."""
        for start in range(0, count, 1000):
            replies = conn.pipeline([("CF.ADD", key, f"{prefix}{i}")
                                     for i in range(start, min(count, start + 1000))])
            self.assertEqual([r for r in replies if r != 1], [], f"adds to {key}")

    def missing(self, conn, key, count, prefix):
        """The items of fill() that CF.EXISTS does not find."""
        gone = []
        for start in range(0, count, 1000):
            batch = [f"{prefix}{i}" for i in range(start, min(count, start + 1000))]
            replies = conn.pipeline([("CF.EXISTS", key, item) for item in batch])
            gone += [item for item, r in zip(batch, replies) if r != 1]
        return gone

    def test_save_then_restart_restores_every_key(self):
        server, conn = self.start()
        self.assertReply(conn.call("CF.RESERVE", "f", "100000", "BUCKETSIZE", "4"), OK)
        self.fill(conn, "f", 20000, "a-")
        self.assertReply(conn.call("SET", "s", "v"), OK)
        info = conn.call("CF.INFO", "f")
        self.assertReply(conn.call("SAVE"), OK)
        self.assertIs(type(conn.call("LASTSAVE")), int)
        conn.close()
        server.stop()
        server, conn = self.start()
        self.assertEqual(self.missing(conn, "f", 20000, "a-"), [])
        self.assertReply(conn.call("CF.INFO", "f"), info)
        self.assertReply(conn.call("GET", "s"), b"v")
        self.assertReply(conn.call("DBSIZE"), 2)

    def test_sigkill_during_bgsave_keeps_the_last_complete_snapshot(self):
        server, conn = self.start()
        self.assertReply(conn.call("CF.RESERVE", "f", "4000000"), OK)  # a snapshot of 8 MB
        self.fill(conn, "f", 5000, "base-")
        self.assertReply(conn.call("SAVE"), OK)
        self.fill(conn, "f", 5000, "later-")
        for delay in (0.0, 0.001, 0.003, 0.01):
            self.assertReply(conn.call("BGSAVE"), Simple("Background saving started"))
            time.sleep(delay)
            self.kill(server)
            conn.close()
            server, conn = self.start()  # starts: the snapshot on disk is complete
            self.assertEqual(self.missing(conn, "f", 5000, "base-"), [], f"delay {delay}")
            # Either the first snapshot or the one the BGSAVE finished; nothing in between (a
            # few of 5000 absent items may answer 1: false positives, ~2b/65536 each).
            later = len(self.missing(conn, "f", 5000, "later-"))
            self.assertTrue(later == 0 or later >= 4950,
                            f"delay {delay}: {later} of 5000 missing: a mix of two states")
            if later:
                self.fill(conn, "f", 5000, "later-")

    def test_a_damaged_snapshot_is_refused_and_nothing_is_served(self):
        server, conn = self.start()
        self.fill(conn, "f", 1000, "x-")
        self.assertReply(conn.call("SAVE"), OK)
        conn.close()
        server.stop()
        with open(self.snapshot, "r+b") as snapshot:
            snapshot.seek(os.path.getsize(self.snapshot) // 2)
            byte = snapshot.read(1)
            snapshot.seek(-1, os.SEEK_CUR)
            snapshot.write(bytes([byte[0] ^ 0x01]))
        broken = Server(extra_args=["--dir", self.dir.name])
        self.addCleanup(broken.cleanup)
        with self.assertRaises(RuntimeError) as refused:
            broken.start()
        self.assertIn("exited with 3", str(refused.exception))
        self.assertIn("checksum mismatch", str(refused.exception))

    def test_sigkill_during_load_then_restart_loads(self):
        server, conn = self.start()
        self.assertReply(conn.call("CF.RESERVE", "big", "40000000"), OK)  # an 80 MB snapshot
        self.fill(conn, "big", 3000, "b-")
        self.assertReply(conn.call_slow("SAVE"), OK)
        conn.close()
        server.stop()
        args = [BINARY, "serve", "--bind", "127.0.0.1", "--port", "0", "--dir", self.dir.name]
        loading = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        time.sleep(0.05)
        loading.kill()
        loading.wait(STOP_TIMEOUT_S)
        server, conn = self.start(startup_timeout_s=LARGE_SNAPSHOT_TIMEOUT_S)
        self.assertEqual(self.missing(conn, "big", 3000, "b-"), [])

    def test_periodic_snapshot_survives_sigkill(self):
        server, conn = self.start("--save", "1", "1")
        self.fill(conn, "f", 2000, "p-")
        for _ in range(100):  # up to 10 s for the periodic save
            if conn.call("LASTSAVE") > 0:
                break
            time.sleep(0.1)
        self.assertGreater(conn.call("LASTSAVE"), 0, "no periodic snapshot within 10 s")
        self.kill(server)
        conn.close()
        server, conn = self.start()
        self.assertEqual(self.missing(conn, "f", 2000, "p-"), [])

    def test_failed_writes_do_not_count_toward_save_points(self):
        """`--save 1 1`: writes answered with an error change nothing and start no snapshot;
        one write that succeeds does."""
        server, conn = self.start("--save", "1", "1")
        self.assertReply(conn.call("CF.DEL", "nokey", "x"), Match("an error", lambda reply: isinstance(reply, Err)))
        self.assertReply(conn.call("CF.RESERVE", "f", "0"), Match("an error", lambda reply: isinstance(reply, Err)))
        self.assertReply(conn.call("CF.ADD", "f"), Match("an error", lambda reply: isinstance(reply, Err)))
        time.sleep(2.5)  # two periods of the saver
        self.assertEqual(conn.call("LASTSAVE"), 0, "a snapshot after only failed writes")
        self.assertReply(conn.call("CF.ADD", "f", "a"), 1)
        for _ in range(100):  # up to 10 s for the periodic save
            if conn.call("LASTSAVE") > 0:
                break
            time.sleep(0.1)
        self.assertGreater(conn.call("LASTSAVE"), 0, "no snapshot after a successful write")

    def test_shutdown_with_save_points_writes_a_snapshot(self):
        server, conn = self.start("--save", "3600", "1")
        self.fill(conn, "f", 1000, "q-")
        conn.close()
        self.assertEqual(server.stop(), 0)
        server, conn = self.start()
        self.assertEqual(self.missing(conn, "f", 1000, "q-"), [])

    def test_dump_of_one_server_loads_into_another(self):
        source, src = self.start()
        self.assertReply(src.call("CF.RESERVE", "f", "1000", "EXPANSION", "2"), OK)
        self.fill(src, "f", 8000, "m-")  # grows to several sub-filters
        info = src.call("CF.INFO", "f")
        pairs, iterator = [], 0
        for _ in range(10000):
            nxt, data = src.call("CF.SCANDUMP", "f", iterator)
            if nxt == 0:
                break
            pairs.append((nxt, data))
            iterator = nxt
        other = Server()
        self.addCleanup(other.cleanup)
        other.start()
        dst = Conn(other.port)
        self.addCleanup(dst.close)
        for iterator, data in pairs:
            self.assertReply(dst.call("CF.LOADCHUNK", "copy", iterator, data), OK)
        self.assertEqual(self.missing(dst, "copy", 8000, "m-"), [])
        self.assertReply(dst.call("CF.INFO", "copy"), info)

    def test_a_failed_background_save_is_reported(self):
        """BGSAVE into a directory that is gone: INFO persistence says err and why, LASTSAVE
        stays 0, SAVE answers the reason; once the directory is back, both succeed and INFO
        says ok."""
        server, conn = self.start()
        self.assertReply(conn.call("CF.ADD", "f", "a"), 1)
        fields, headers = info_fields(conn, "persistence")
        self.assertEqual(headers, ["Persistence"])
        self.assertEqual(fields["rdb_last_bgsave_status"], b"ok")
        self.assertEqual(int(fields["rdb_changes_since_last_save"]), 1)
        os.rmdir(self.dir.name)
        self.assertReply(conn.call("BGSAVE"), Simple("Background saving started"))
        for _ in range(100):  # up to 10 s for the background save to end
            fields, _ = info_fields(conn, "persistence")
            if fields["rdb_bgsave_in_progress"] == b"0":
                break
            time.sleep(0.1)
        self.assertEqual(fields["rdb_last_bgsave_status"], b"err", fields)
        self.assertIn(b"No such file or directory", fields["ccf_last_save_error"])
        self.assertEqual(int(fields["rdb_changes_since_last_save"]), 1)
        self.assertEqual(conn.call("LASTSAVE"), 0)
        reply = conn.call("SAVE")
        self.assertIs(type(reply), Err, repr(reply))
        self.assertIn("No such file or directory", reply.text)
        os.mkdir(self.dir.name)
        self.assertReply(conn.call("SAVE"), OK)
        fields, _ = info_fields(conn, "persistence")
        self.assertEqual(fields["rdb_last_bgsave_status"], b"ok", fields)
        self.assertEqual(fields["ccf_last_save_error"], b"")
        self.assertEqual(int(fields["rdb_changes_since_last_save"]), 0)
        self.assertGreater(int(fields["rdb_last_save_time"]), 0)

    def test_a_link_planted_at_the_temporary_name_is_not_followed(self):
        server, conn = self.start()
        victim = os.path.join(self.dir.name, "victim")
        with open(victim, "w") as f:
            f.write("secret")
        os.symlink(victim, self.snapshot + ".tmp")
        self.assertReply(conn.call("CF.ADD", "f", "a"), 1)
        self.assertReply(conn.call("SAVE"), OK)
        with open(victim) as f:
            self.assertEqual(f.read(), "secret")
        self.assertFalse(os.path.islink(self.snapshot))
        self.assertFalse(os.path.lexists(self.snapshot + ".tmp"))

    def test_save_without_a_directory_is_refused(self):
        server = Server()
        self.addCleanup(server.cleanup)
        server.start()
        conn = Conn(server.port)
        self.addCleanup(conn.close)
        for command in ("SAVE", "BGSAVE"):
            reply = conn.call(command)
            self.assertIs(type(reply), Err, f"{command}: {reply!r}")
            self.assertIn("--dir", reply.text)

    assertReply = ServerTest.assertReply
    _mismatch = ServerTest._mismatch


# The classes of CF.* cases, which run against the Redis module too.
MODULE_CASES = ["ReserveTest", "AddTest", "InsertTest", "ExistsCountDelTest", "InfoTest",
                "ScanDumpLoadChunkTest", "RedisPyTest", "FillTest"]


def main():
    global BINARY, MODULE, TYPE_NAME
    if len(sys.argv) >= 3 and sys.argv[1] == "--redis-module":
        MODULE, TYPE_NAME = os.path.abspath(sys.argv[2]), "ccfCuckoo"
        if not os.path.isfile(MODULE):
            print(f"{MODULE}: no such file", file=sys.stderr)
            return 2
        program = unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2, exit=False,
                                defaultTest=MODULE_CASES)
        return 0 if program.result.wasSuccessful() else 1
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(f"usage: {sys.argv[0]} PATH/TO/ccf [unittest options]", file=sys.stderr)
        return 2
    BINARY = os.path.abspath(sys.argv[1])
    if not os.access(BINARY, os.X_OK):
        print(f"{BINARY}: not an executable file", file=sys.stderr)
        return 2
    program = unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2, exit=False)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
