"""The bindings under threads: the GIL is released in engine calls, so writers, readers,
iterators and a closer may run at once without a crash, a deadlock or a wrong answer."""

from __future__ import annotations

import sys
import threading
import time

import cairn


def run_all(threads: list[threading.Thread], timeout: float = 120.0) -> None:
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
        assert not t.is_alive(), "a thread hung (deadlock?)"


def test_writers_readers_and_iterators_at_once(db):
    errors: list[BaseException] = []
    n_writers, per_writer = 4, 1500

    def guard(f):
        def run():
            try:
                f()
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        return run

    def writer(w: int):
        for i in range(per_writer):
            db[b"w%d-%05d" % (w, i)] = b"%d" % i
            if i % 500 == 0:
                db.flush()

    def reader():
        for _ in range(2000):
            for w in range(n_writers):
                v = db.get(b"w%d-%05d" % (w, 7))
                assert v in (None, b"7")

    def scanner():
        for _ in range(20):
            keys = list(db.keys(from_key=b"w1-", to_key=b"w2-"))
            # a scan sees a consistent prefix of writer 1's keys, in order
            assert keys == sorted(keys)
            assert keys == [b"w1-%05d" % i for i in range(len(keys))]

    threads = [threading.Thread(target=guard(lambda w=w: writer(w))) for w in range(n_writers)]
    threads += [threading.Thread(target=guard(reader)) for _ in range(2)]
    threads += [threading.Thread(target=guard(scanner)) for _ in range(2)]
    run_all(threads)
    assert not errors, errors
    for w in range(n_writers):
        assert list(db.keys(from_key=b"w%d-" % w, to_key=b"w%d." % w)) == [
            b"w%d-%05d" % (w, i) for i in range(per_writer)
        ]


def test_the_gil_is_released_during_engine_calls(db):
    # With the switch interval at 100 s the interpreter never takes the GIL from a thread;
    # the counter below runs only while the main thread lets the GIL go. It hands the GIL
    # back after each step. So it steps during an engine call if and only if the call
    # released the GIL (measured with a GIL-holding build: 0 steps).
    for i in range(30000):
        db[b"%06d" % i] = b"v" * 50
    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1
            time.sleep(0)

    t = threading.Thread(target=count)
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    t.start()
    try:
        time.sleep(0.05)
        before = counter[0]
        db.compact_range()  # a flush and a merge of the whole tree: one call
        during_compaction = counter[0] - before
        before = counter[0]
        for i in range(2000):
            db.get(b"%06d" % i)
        during_gets = counter[0] - before
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old_interval)
    assert during_compaction > 0
    assert during_gets > 0


def test_one_iterator_shared_by_threads(db):
    for i in range(3000):
        db[b"%05d" % i] = b"v"
    it = db.keys()
    seen: list[list[bytes]] = [[] for _ in range(4)]

    def consume(j: int):
        for k in it:
            seen[j].append(k)

    run_all([threading.Thread(target=consume, args=(j,)) for j in range(4)])
    got = sorted(k for s in seen for k in s)
    assert got == [b"%05d" % i for i in range(3000)]  # every key once, none twice
    for s in seen:
        assert s == sorted(s)


def test_close_while_other_threads_use_it(db_path):
    db = cairn.Db(db_path)
    for i in range(1000):
        db[b"%04d" % i] = b"v"
    stop = threading.Event()
    outcomes: list[str] = []

    def user():
        it = db.items()
        while not stop.is_set():
            try:
                db[b"x"] = b"y"
                db.get(b"0001")
                next(it, None)
            except cairn.ClosedError:
                outcomes.append("closed")
                return
            except BaseException as e:  # noqa: BLE001
                outcomes.append(repr(e))
                return

    threads = [threading.Thread(target=user) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    db.close()
    stop.set()
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    assert outcomes == ["closed"] * 4, outcomes
    with cairn.Db(db_path) as db2:  # the lock was released; the data is there
        assert db2[b"0999"] == b"v"
