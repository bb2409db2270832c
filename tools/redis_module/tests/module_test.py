#!/usr/bin/python3
"""ccf-redis.so inside Debian's redis-server: persistence, replication, Redis Cluster.

Usage: /usr/bin/python3 module_test.py PATH/TO/ccf-redis.so PATH/TO/decoy-module.so
                                       [unittest options]

Every server is a redis-server child of this process on a loopback port (127.0.0.1 only), in
a temporary directory, started and stopped by the test that needs it (SIGKILL on this
process's death too). Every wait is bounded. The items are checked exactly: an item whose
add was acknowledged must be found (a filter has no false negatives); CF.EXISTS of items
never added is checked against the false-positive bound instead. Bloom filters (BF.*, type
ccfBloom-) get the same checks (BloomLoadTest, BloomPersistenceTest, BloomReplicationTest); a
Bloom filter may answer 0 for a new item (a false positive), so an item counts as acknowledged
once BF.MADD answered 1 or 0.

CCF_MODULE_CLUSTER_ITEMS sets the cluster test's item count (default 1,000,000).
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import redis  # Debian's python3-redis (4.3.4 on Debian 12)
from redis.cluster import RedisCluster

MODULE = ""
DECOY = ""
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
START_TIMEOUT_S = 15
CLUSTER_ITEMS = int(os.environ.get("CCF_MODULE_CLUSTER_ITEMS", "1000000"))
TYPE_NAME = b"ccfCuckoo"
BF_TYPE_NAME = b"ccfBloom-"  # the module's own Bloom type: RedisBloom's is MBbloom--


def _die_with_parent():
    """In the child before exec: SIGKILL it when this test process dies."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port():
    """A loopback port that is free, and whose cluster bus port (+10000) is free too."""
    for _ in range(200):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            if port + 10000 > 65535:
                continue
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free loopback port pair found")


def wait_until(what, predicate, timeout_s):
    """Polls predicate every 50 ms until it is true; fails after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (redis.ConnectionError, redis.ResponseError, redis.TimeoutError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


class RedisServer:
    """One redis-server with the module loaded, in `directory`, on a free loopback port."""

    def __init__(self, directory, *options, port=None, modules=None):
        self.directory = directory
        self.options = list(options)
        self.port = port or free_port()
        self.modules = [MODULE] if modules is None else modules
        self.proc = None
        self.log = os.path.join(directory, f"redis-{self.port}.log")

    def start(self, expect_running=True):
        args = [REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(self.port),
                "--dir", self.directory, "--dbfilename", f"dump-{self.port}.rdb",
                "--appenddirname", f"aof-{self.port}", "--save", "", "--daemonize", "no",
                "--enable-debug-command", "local", "--logfile", self.log]
        for module in self.modules:
            args += ["--loadmodule", module]
        args += self.options
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        if not expect_running:
            try:
                self.proc.wait(START_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass
            return self
        client = self.client()
        try:
            wait_until(f"redis-server on port {self.port} to load",
                       lambda: self.proc.poll() is None and client.ping(), START_TIMEOUT_S)
            wait_until("the data set to load",
                       lambda: client.info("persistence")["loading"] == 0, START_TIMEOUT_S)
        except AssertionError as error:
            raise AssertionError(f"{error}; log: {self.log_tail()}") from None
        finally:
            client.close()
        return self

    def client(self, **kwargs):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=30,
                           socket_connect_timeout=5, **kwargs)

    def log_tail(self, limit=3000):
        try:
            with open(self.log, "rb") as f:
                return f.read()[-limit:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self):
        """SHUTDOWN (persisting as configured); SIGKILL if it does not exit in 10 s."""
        if not self.proc or self.proc.poll() is not None:
            return
        try:
            self.client().shutdown()
        except (redis.ConnectionError, redis.ResponseError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()


def items(prefix, count):
    return [f"{prefix}:{i}".encode() for i in range(count)]


class ModuleTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ccf-redis-")
        self.addCleanup(self.tmp.cleanup)
        self.servers = []

    def tearDown(self):
        for server in self.servers:
            server.kill()

    def server(self, *options, **kwargs):
        server = RedisServer(self.tmp.name, *options, **kwargs)
        self.servers.append(server)
        return server.start()

    def fill(self, client, key, values, batch=1000):
        """CF.INSERT in batches; every item must be acknowledged with 1."""
        pipe = client.pipeline(transaction=False)
        for start in range(0, len(values), batch):
            pipe.execute_command("CF.INSERT", key, "ITEMS", *values[start:start + batch])
        for reply in pipe.execute():
            self.assertEqual(set(reply), {1}, f"CF.INSERT {key}")

    def assertAllFound(self, client, key, values, batch=1000):
        missing = []
        for start in range(0, len(values), batch):
            chunk = values[start:start + batch]
            found = client.execute_command("CF.MEXISTS", key, *chunk)
            missing += [v for v, f in zip(chunk, found) if f != 1]
        self.assertEqual(missing[:10], [], f"{len(missing)} acknowledged items of {key} lost")

    def digest(self, client, key):
        return client.execute_command("DEBUG", "DIGEST-VALUE", key)


class LoadTest(ModuleTestCase):
    def test_loads_and_answers(self):
        """The module loads, registers the CF.* commands with their flags and key positions,
        and keys of its type behave as ordinary Redis keys."""
        c = self.server().client()
        self.assertTrue(c.execute_command("CF.RESERVE", "f", 1000))
        self.assertEqual(c.execute_command("CF.ADD", "f", "a"), 1)
        self.assertEqual(c.type("f"), TYPE_NAME)
        # Unparsed (redis-py turns COMMAND replies into dictionaries of its own).
        conn = c.connection_pool.get_connection("COMMAND")
        self.addCleanup(c.connection_pool.release, conn)
        conn.send_command("COMMAND", "INFO", "cf.add", "cf.exists", "cf.compact")
        by_name = {entry[0]: entry for entry in conn.read_response()}
        self.assertEqual(by_name[b"cf.add"][1], -1)  # arity is the module's own check
        self.assertIn(b"write", by_name[b"cf.add"][2])
        self.assertIn(b"denyoom", by_name[b"cf.add"][2])
        self.assertIn(b"readonly", by_name[b"cf.exists"][2])
        self.assertIn(b"fast", by_name[b"cf.exists"][2])
        self.assertIn(b"write", by_name[b"cf.compact"][2])
        self.assertEqual(by_name[b"cf.add"][3:6], [1, 1, 1])
        self.assertTrue(c.rename("f", "g"))
        self.assertEqual(c.execute_command("CF.EXISTS", "g", "a"), 1)
        self.assertTrue(c.copy("g", "h"))
        self.assertEqual(self.digest(c, "g"), self.digest(c, "h"))
        self.assertEqual(c.execute_command("CF.ADD", "h", "b"), 1)
        self.assertEqual(c.execute_command("CF.EXISTS", "g", "b"), 0)  # a copy, not shared
        self.assertTrue(c.expire("h", 100))
        self.assertGreater(c.ttl("h"), 0)
        self.assertEqual(c.object("encoding", "g"), b"raw")
        self.assertEqual(sorted(c.scan_iter(_type=TYPE_NAME.decode())), [b"g", b"h"])
        self.assertGreater(c.memory_usage("g"), 0)
        self.assertEqual(c.delete("g", "h"), 2)
        c.set("s", "v")
        with self.assertRaisesRegex(redis.ResponseError, "WRONGTYPE"):
            c.execute_command("CF.ADD", "s", "a")

    def assertRefused(self, modules, why):
        """A server with these modules stops at start-up, and ccf's log line says why."""
        server = RedisServer(self.tmp.name, modules=modules)
        self.servers.append(server)
        server.start(expect_running=False)
        self.assertIsNotNone(server.proc.poll(), "the server kept running")
        self.assertIn(f"ccf: not loaded: {why}", server.log_tail())

    def test_refuses_a_second_copy(self):
        """Loaded twice: the second copy refuses with a log line, and the server stops."""
        self.assertRefused([MODULE, MODULE], 'a module named "ccf" is loaded already')

    def test_refuses_beside_other_cf_commands(self):
        """Beside another module that registered CF.* commands (the decoy stands in for
        RedisBloom), the module refuses to load and names the command."""
        self.assertRefused([DECOY, MODULE], "the command CF.RESERVE exists already")


class PersistenceTest(ModuleTestCase):
    def populate(self, c):
        """Three filters: plain, grown to several sub-filters, and one with deletes."""
        plain, grown, deleted = items("p", 5000), items("g", 6000), items("d", 3000)
        self.assertTrue(c.execute_command("CF.RESERVE", "plain", 8192, "BUCKETSIZE", 4))
        self.fill(c, "plain", plain)
        self.assertTrue(c.execute_command("CF.RESERVE", "grown", 1000, "EXPANSION", 2))
        self.fill(c, "grown", grown)
        self.fill(c, "deleted", deleted)
        for value in deleted[:1000]:
            self.assertEqual(c.execute_command("CF.DEL", "deleted", value), 1)
        self.assertGreater(c.execute_command("CF.INFO", "grown")[5], 1)  # sub-filters
        return {"plain": plain, "grown": grown, "deleted": deleted[1000:]}

    def assertSame(self, c, kept, digests, infos):
        for key, values in kept.items():
            self.assertAllFound(c, key, values)
            self.assertEqual(self.digest(c, key), digests[key], f"DEBUG DIGEST-VALUE {key}")
            self.assertEqual(self.counters(c, key), infos[key], f"CF.INFO {key}")

    def snapshot(self, c, kept):
        return ({k: self.digest(c, k) for k in kept},
                {k: self.counters(c, k) for k in kept})

    def counters(self, c, key):
        """CF.INFO without Size: a filter's memory may shrink when it is reloaded (a
        sub-filter emptied by compaction keeps its memory until then)."""
        return c.execute_command("CF.INFO", key)[2:]

    def test_rdb_restart(self):
        """SAVE, restart: every item found, the same bytes (digest) and counters."""
        server = self.server()
        c = server.client()
        kept = self.populate(c)
        digests, infos = self.snapshot(c, kept)
        self.assertTrue(c.save())
        server.kill()
        c = server.start().client()
        self.assertSame(c, kept, digests, infos)

    def test_damaged_rdb_is_refused(self):
        """A filter whose bytes changed in the RDB file (Redis's own checksum and compression
        off, so that only ccf's checksums can notice) stops the load with ccf's log line."""
        server = self.server("--rdbchecksum", "no", "--rdbcompression", "no")
        c = server.client()
        self.fill(c, "f", items("x", 20000))
        self.assertTrue(c.save())
        server.kill()
        path = os.path.join(self.tmp.name, f"dump-{server.port}.rdb")
        with open(path, "r+b") as f:
            data = bytearray(f.read())
            data[len(data) * 3 // 5] ^= 0x10  # inside the sub-filter's fingerprints
            f.seek(0)
            f.write(data)
        server.start(expect_running=False)
        self.assertIsNotNone(server.proc.poll(), "the server started with the damaged file")
        self.assertIn("ccf: a filter's data is damaged", server.log_tail())

    def rewrite_add_restart(self, *options):
        """An AOF server: populate, BGREWRITEAOF, more adds after the rewrite (appended to the
        AOF as commands), SIGKILL, restart from the AOF: everything as it was."""
        server = self.server("--appendonly", "yes", "--appendfsync", "always", *options)
        c = server.client()
        kept = self.populate(c)
        c.bgrewriteaof()
        wait_until("the AOF rewrite",
                   lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0 and
                   c.info("persistence")["aof_rewrite_scheduled"] == 0, 30)
        self.assertEqual(c.info("persistence")["aof_last_bgrewrite_status"], "ok")
        more = items("after", 2000)
        self.fill(c, "grown", more)
        kept["grown"] = kept["grown"] + more
        digests, infos = self.snapshot(c, kept)
        server.kill()
        c = server.start().client()
        self.assertSame(c, kept, digests, infos)

    def test_aof_restart(self):
        """A rewrite without the RDB preamble: CF.LOADCHUNK commands rebuild the filters."""
        self.rewrite_add_restart("--aof-use-rdb-preamble", "no")

    def test_aof_with_rdb_preamble(self):
        """The default AOF: an RDB base plus the commands appended after the rewrite."""
        self.rewrite_add_restart()


class ReplicationTest(ModuleTestCase):
    def test_replica_and_failover(self):
        """Items added on the master are found on the replica (the same bytes), and after
        FAILOVER the former replica serves them and takes writes."""
        master = self.server()
        replica = self.server("--replicaof", "127.0.0.1", str(master.port))
        m, r = master.client(), replica.client()
        wait_until("the replica to sync",
                   lambda: r.info("replication")["master_link_status"] == "up", 20)
        kept = items("r", 20000)
        self.fill(m, "f", kept)
        self.assertEqual(m.execute_command("CF.DEL", "f", kept[0]), 1)
        kept = kept[1:]
        self.assertTrue(m.execute_command("CF.COMPACT", "f"))
        self.assertEqual(m.wait(1, 10000), 1)
        self.assertAllFound(r, "f", kept)
        self.assertEqual(self.digest(r, "f"), self.digest(m, "f"))
        with self.assertRaises(redis.exceptions.ReadOnlyError):
            r.execute_command("CF.ADD", "f", "x")
        # A filter restored through CF.LOADCHUNK on the master reaches the replica whole.
        position, chunks = 0, []
        for _ in range(1000):
            position, data = m.execute_command("CF.SCANDUMP", "f", position)
            if position == 0:
                break
            chunks.append((position, data))
        for position, data in chunks:
            self.assertTrue(m.execute_command("CF.LOADCHUNK", "restored", position, data))
        self.assertEqual(m.wait(1, 10000), 1)
        self.assertAllFound(r, "restored", kept)

        self.assertTrue(m.execute_command("FAILOVER", "TIMEOUT", "10000"))
        wait_until("the replica to become master",
                   lambda: r.info("replication")["role"] == "master", 20)
        self.assertAllFound(r, "f", kept)
        self.assertEqual(r.execute_command("CF.ADD", "f", "new"), 1)
        wait_until("the old master to follow",
                   lambda: m.info("replication")["role"] == "slave" and
                   m.info("replication")["master_link_status"] == "up", 20)
        self.assertEqual(r.wait(1, 10000), 1)
        self.assertEqual(m.execute_command("CF.EXISTS", "f", "new"), 1)


class ClusterTest(ModuleTestCase):
    FILTERS = 1000

    def test_cluster_failover_keeps_acknowledged_items(self):
        """3 masters + 3 replicas made with `redis-cli --cluster create`; 1,000 filters over
        the slots, CLUSTER_ITEMS items added through redis-py's cluster client with WAIT 1;
        one master killed; after the failover every acknowledged item is found."""
        nodes = [self.server("--cluster-enabled", "yes", "--cluster-node-timeout", "1000",
                             "--cluster-config-file", f"nodes-{i}.conf",
                             "--appendonly", "no")
                 for i in range(6)]
        create = subprocess.run(
            [REDIS_CLI, "--cluster", "create", *[f"127.0.0.1:{n.port}" for n in nodes],
             "--cluster-replicas", "1", "--cluster-yes"],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        self.assertEqual(create.returncode, 0, create.stdout.decode()[-2000:])
        for node in nodes:
            client = node.client()
            wait_until(f"cluster_state:ok on {node.port}",
                       lambda: client.cluster("info")["cluster_state"] == "ok", 30)
            client.close()

        rc = RedisCluster(host="127.0.0.1", port=nodes[0].port, socket_timeout=30)
        self.addCleanup(rc.close)
        keys = [f"filter:{i}" for i in range(self.FILTERS)]
        per_filter = CLUSTER_ITEMS // self.FILTERS
        masters_used = {rc.get_node_from_key(key).port for key in keys}
        self.assertEqual(len(masters_used), 3, "the filters do not cover every master")
        acknowledged = {}
        for key in keys:
            values = items(key, per_filter)
            node = rc.get_node_from_key(key)
            reply = rc.execute_command("CF.INSERT", key, "CAPACITY", 2 * per_filter + 4,
                                       "ITEMS", *values)
            self.assertEqual(set(reply), {1}, f"CF.INSERT {key}")
            # WAIT on the connection that carried the write: redis-py's pool hands a
            # single-threaded caller the same connection again.
            if rc.execute_command("WAIT", 1, 10000, target_nodes=node) >= 1:
                acknowledged[key] = values
        self.assertEqual(len(acknowledged), self.FILTERS, "writes not acknowledged by WAIT 1")

        victim = next(n for n in nodes if n.port == rc.get_node_from_key(keys[0]).port)
        victim.kill()
        survivors = [n for n in nodes if n is not victim]

        def failed_over(client):
            """The cluster is ok and no slot is served by the killed master any more."""
            if client.cluster("info")["cluster_state"] != "ok":
                return False
            slots = client.execute_command("CLUSTER", "SLOTS")
            return all(entry[2][1] != victim.port for entry in slots)

        for node in survivors:
            client = node.client()
            wait_until(f"the failover, seen from {node.port}", lambda: failed_over(client), 60)
            client.close()
        rc.close()
        rc = RedisCluster(host="127.0.0.1", port=survivors[0].port, socket_timeout=30)
        self.addCleanup(rc.close)
        self.assertNotEqual(rc.get_node_from_key(keys[0]).port, victim.port)
        lost = 0
        for key, values in acknowledged.items():
            found = rc.execute_command("CF.MEXISTS", key, *values)
            lost += sum(1 for f in found if f != 1)
        self.assertEqual(lost, 0, "acknowledged items lost in the failover")
        self.assertEqual(rc.execute_command("CF.ADD", keys[0], "after-failover"), 1)


# ---------------------------------------------------------------------------------------------
# Bloom filters (BF.*): the same guarantees for keys of the module's ccfBloom- type.

class BloomTestCase(ModuleTestCase):
    """Helpers for BF.* keys. A Bloom filter may answer 0 for a new item (a false positive):
    an item is acknowledged once BF.MADD answered 1 or 0, and must be found from then on."""

    def bf_fill(self, client, key, values, batch=1000):
        """BF.MADD in batches; every reply 1 or 0, at most 2 % of them 0. Returns the 1s."""
        pipe = client.pipeline(transaction=False)
        for start in range(0, len(values), batch):
            pipe.execute_command("BF.MADD", key, *values[start:start + batch])
        ones = 0
        for reply in pipe.execute():
            self.assertLessEqual(set(reply), {0, 1}, f"BF.MADD {key}")
            ones += sum(reply)
        self.assertGreaterEqual(ones, 0.98 * len(values), f"BF.MADD {key}: too many 0s")
        return ones

    def bf_all_found(self, client, key, values, batch=1000):
        missing = []
        for start in range(0, len(values), batch):
            chunk = values[start:start + batch]
            found = client.execute_command("BF.MEXISTS", key, *chunk)
            missing += [v for v, f in zip(chunk, found) if f != 1]
        self.assertEqual(missing[:10], [], f"{len(missing)} acknowledged items of {key} lost")

    def bf_dump(self, client, key):
        """BF.SCANDUMP's (iterator, data) pairs until iterator 0."""
        pairs, iterator = [], 0
        for _ in range(10000):
            iterator, data = client.execute_command("BF.SCANDUMP", key, iterator)
            if iterator == 0:
                return pairs
            pairs.append((iterator, data))
        self.fail(f"BF.SCANDUMP {key} never ended")

    def bf_populate(self, c):
        """Bloom filters of every shape: grown to several sub-filters, non-scaling, expansion
        3 with a capped error rate, empty, and one restored through BF.LOADCHUNK; plus a
        cuckoo filter beside them."""
        grown, flat, three = items("bg", 6000), items("bn", 4000), items("b3", 1500)
        self.assertTrue(c.execute_command("BF.RESERVE", "grown", "0.01", 100))
        self.bf_fill(c, "grown", grown)
        self.assertTrue(c.execute_command("BF.RESERVE", "flat", "0.001", 5000, "NONSCALING"))
        self.bf_fill(c, "flat", flat)
        self.assertEqual(c.execute_command("BF.INSERT", "three", "CAPACITY", 10, "ERROR", "0.5",
                                           "EXPANSION", 3, "ITEMS", "x"), [1])
        self.bf_fill(c, "three", three)
        self.assertTrue(c.execute_command("BF.RESERVE", "empty", "0.02", 1000))
        for iterator, data in self.bf_dump(c, "grown"):
            self.assertTrue(c.execute_command("BF.LOADCHUNK", "loaded", iterator, data))
        self.assertGreater(c.execute_command("BF.INFO", "grown", "FILTERS")[0], 4)
        self.fill(c, "cuckoo", items("c", 1000))
        return {"grown": grown, "flat": flat, "three": three + [b"x"], "empty": [],
                "loaded": grown}

    def bf_state(self, c, kept):
        """Per key: DEBUG DIGEST-VALUE, BF.INFO (Size included) and BF.DEBUG."""
        return {k: (self.digest(c, k), c.execute_command("BF.INFO", k),
                    c.execute_command("BF.DEBUG", k)) for k in kept}

    def assertBloomSame(self, c, kept, state):
        self.assertEqual(self.bf_state(c, kept), state)
        for key, values in kept.items():
            self.bf_all_found(c, key, values)
            self.assertEqual(c.type(key), BF_TYPE_NAME, key)
        self.assertAllFound(c, "cuckoo", items("c", 1000))


class BloomLoadTest(BloomTestCase):
    def test_bloom_keys_behave_as_redis_keys(self):
        """BF.* commands registered with their flags and key positions; a Bloom key is of
        type ccfBloom- (never RedisBloom's MBbloom--), renames, copies (an independent
        value), expires, is found by SCAN TYPE, has a MEMORY USAGE of at least its Size, and
        is deleted; BF and CF keys refuse each other's writes."""
        c = self.server().client()
        self.assertTrue(c.execute_command("BF.RESERVE", "f", "0.01", 1000))
        self.assertEqual(c.execute_command("BF.ADD", "f", "a"), 1)
        self.assertEqual(c.type("f"), BF_TYPE_NAME)
        self.assertEqual(len(BF_TYPE_NAME), 9)
        conn = c.connection_pool.get_connection("COMMAND")
        self.addCleanup(c.connection_pool.release, conn)
        conn.send_command("COMMAND", "INFO", "bf.add", "bf.exists", "bf.loadchunk",
                          "bf.scandump", "bf.reserve")
        by_name = {entry[0]: entry for entry in conn.read_response()}
        for name in (b"bf.add", b"bf.loadchunk", b"bf.reserve"):
            self.assertIn(b"write", by_name[name][2], name)
            self.assertIn(b"denyoom", by_name[name][2], name)
        for name in (b"bf.exists", b"bf.scandump"):
            self.assertIn(b"readonly", by_name[name][2], name)
        for name, entry in by_name.items():
            self.assertEqual(entry[3:6], [1, 1, 1], name)
        self.assertTrue(c.rename("f", "g"))
        self.assertEqual(c.execute_command("BF.EXISTS", "g", "a"), 1)
        self.assertTrue(c.copy("g", "h"))
        self.assertEqual(self.digest(c, "g"), self.digest(c, "h"))
        self.assertEqual(c.execute_command("BF.INFO", "g"), c.execute_command("BF.INFO", "h"))
        self.assertEqual(c.execute_command("BF.ADD", "h", "b"), 1)
        self.assertEqual(c.execute_command("BF.EXISTS", "g", "b"), 0)  # a copy, not shared
        self.assertEqual(c.execute_command("BF.CARD", "g"), 1)
        self.assertNotEqual(self.digest(c, "g"), self.digest(c, "h"))
        self.assertTrue(c.expire("h", 100))
        self.assertGreater(c.ttl("h"), 0)
        self.assertTrue(c.execute_command("CF.RESERVE", "cf", 1000))
        self.assertEqual(sorted(c.scan_iter(_type=BF_TYPE_NAME.decode())), [b"g", b"h"])
        self.assertEqual(sorted(c.scan_iter(_type=TYPE_NAME.decode())), [b"cf"])
        self.assertEqual(list(c.scan_iter(_type="MBbloom--")), [])
        size = c.execute_command("BF.INFO", "g", "SIZE")[0]
        usage = c.memory_usage("g")
        self.assertGreaterEqual(usage, size)
        self.assertLessEqual(usage, 2 * size + 4096, f"MEMORY USAGE {usage}, Size {size}")
        with self.assertRaisesRegex(redis.ResponseError, "WRONGTYPE"):
            c.execute_command("CF.ADD", "g", "a")
        with self.assertRaisesRegex(redis.ResponseError, "WRONGTYPE"):
            c.execute_command("BF.ADD", "cf", "a")
        self.assertEqual(c.execute_command("BF.EXISTS", "cf", "a"), 0)
        self.assertEqual(c.delete("g", "h"), 2)
        self.assertIsNone(c.memory_usage("g"))
        self.assertEqual(c.execute_command("BF.CARD", "g"), 0)

    def test_del_frees_the_filter(self):
        """Four rounds of: a filter of about 30 MB reserved, 200,000 items added (every page of
        it touched), DEL. The server's RSS grows by about one filter in the first round and
        not by four: DEL gave the memory back."""
        server = self.server()
        c = server.client()

        def rss():
            with open(f"/proc/{server.proc.pid}/status") as status:
                return 1024 * int(next(l for l in status if l.startswith("VmRSS:")).split()[1])

        before, size, peak = rss(), 0, 0
        for round_ in range(4):
            self.assertTrue(c.execute_command("BF.RESERVE", "big", "0.01", 20_000_000))
            size = c.execute_command("BF.INFO", "big", "SIZE")[0]
            self.bf_fill(c, "big", items(f"r{round_}", 200_000))
            peak = max(peak, rss())
            self.assertEqual(c.delete("big"), 1)
        self.assertGreater(peak - before, size // 2, "the filter's pages were not touched: "
                           "the measurement would not see a leak")
        grown = rss() - before
        self.assertLess(grown, 2 * size, f"RSS grew by {grown >> 20} MiB over four rounds of a "
                        f"{size >> 20} MiB filter")


class BloomPersistenceTest(BloomTestCase):
    def test_rdb_restart(self):
        """SAVE, SIGKILL, restart: every Bloom key back with the same digest, BF.INFO and
        BF.DEBUG, every item found, the type still ccfBloom-."""
        server = self.server()
        c = server.client()
        kept = self.bf_populate(c)
        state = self.bf_state(c, kept)
        self.assertTrue(c.save())
        server.kill()
        c = server.start().client()
        self.assertBloomSame(c, kept, state)
        # The restored filters go on growing.
        more = items("more", 3000)
        self.bf_fill(c, "grown", more)
        self.bf_all_found(c, "grown", kept["grown"] + more)

    def test_debug_reload(self):
        """DEBUG RELOAD (save and load in place): the same."""
        c = self.server().client()
        kept = self.bf_populate(c)
        state = self.bf_state(c, kept)
        self.assertTrue(c.execute_command("DEBUG", "RELOAD"))
        self.assertBloomSame(c, kept, state)

    def bloom_rewrite_add_restart(self, *options):
        """An AOF server: populate, BGREWRITEAOF, more adds after the rewrite (appended as
        commands), SIGKILL, restart from the AOF: everything as it was."""
        server = self.server("--appendonly", "yes", "--appendfsync", "always", *options)
        c = server.client()
        kept = self.bf_populate(c)
        c.bgrewriteaof()

        def rewritten():
            fields = c.info("persistence")
            return not (fields["aof_rewrite_in_progress"] or fields["aof_rewrite_scheduled"])

        wait_until("the BGREWRITEAOF of the Bloom filters", rewritten, 30)
        self.assertEqual(c.info("persistence")["aof_last_bgrewrite_status"], "ok")
        more = items("after", 2000)
        self.bf_fill(c, "grown", more)
        kept["grown"] = kept["grown"] + more
        self.assertEqual(c.execute_command("BF.ADD", "newkey", "a"), 1)
        kept["newkey"] = [b"a"]
        state = self.bf_state(c, kept)
        server.kill()
        c = server.start().client()
        self.assertBloomSame(c, kept, state)

    def test_aof_restart(self):
        """A rewrite without the RDB preamble: BF.LOADCHUNK commands rebuild the filters."""
        self.bloom_rewrite_add_restart("--aof-use-rdb-preamble", "no")

    def test_aof_with_rdb_preamble(self):
        """The default AOF: an RDB base plus the commands appended after the rewrite."""
        self.bloom_rewrite_add_restart()


class BloomReplicationTest(BloomTestCase):
    def test_replica_gets_the_same_filters(self):
        """A replica that syncs after the filters exist (full sync through the RDB) and then
        follows BF.RESERVE/ADD/MADD/INSERT/LOADCHUNK (a BF.INSERT stopped by a full filter
        included): the same digests, BF.INFO and BF.DEBUG, every item found; the replica
        refuses writes and answers reads."""
        master = self.server()
        m = master.client()
        kept = self.bf_populate(m)
        replica = self.server("--replicaof", "127.0.0.1", str(master.port))
        r = replica.client()
        wait_until("the replica to sync",
                   lambda: r.info("replication")["master_link_status"] == "up", 20)
        self.assertEqual(m.wait(1, 10000), 1)
        self.assertBloomSame(r, kept, self.bf_state(m, kept))
        # Commands after the sync.
        more = items("live", 5000)
        self.bf_fill(m, "grown", more)
        kept["grown"] = kept["grown"] + more
        self.assertTrue(m.execute_command("BF.RESERVE", "tiny", "0.01", 3, "NONSCALING"))
        reply = m.execute_command("BF.INSERT", "tiny", "ITEMS", "a", "b", "c", "d", "e")
        self.assertEqual(reply[:3], [1, 1, 1])
        self.assertIsInstance(reply[3], redis.ResponseError)
        self.assertEqual(m.execute_command("BF.ADD", "auto", "x"), 1)
        for iterator, data in self.bf_dump(m, "grown"):
            self.assertTrue(m.execute_command("BF.LOADCHUNK", "restored", iterator, data))
        kept.update(tiny=[b"a", b"b", b"c"], auto=[b"x"], restored=kept["grown"])
        self.assertEqual(m.wait(1, 10000), 1)
        self.assertBloomSame(r, kept, self.bf_state(m, kept))
        with self.assertRaises(redis.exceptions.ReadOnlyError):
            r.execute_command("BF.ADD", "grown", "x")
        self.assertEqual(r.execute_command("BF.CARD", "tiny"), 3)
        self.assertEqual(r.execute_command("BF.EXISTS", "auto", "x"), 1)


def main():
    global MODULE, DECOY
    if len(sys.argv) < 3 or sys.argv[1].startswith("-"):
        print(f"usage: {sys.argv[0]} PATH/TO/ccf-redis.so PATH/TO/decoy.so [unittest options]",
              file=sys.stderr)
        return 2
    MODULE, DECOY = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    program = unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2, exit=False)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
