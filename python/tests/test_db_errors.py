"""Errors of the bindings: each engine failure is a cairn.Error subclass with a clear
message, and nothing crashes the interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import cairn


def test_star_import_keeps_the_builtin_ioerror(native):
    ns: dict = {}
    exec("from cairn import *", ns)
    assert "Db" in ns and "IOError" not in ns


def test_options_dict_changed_while_read_is_not_a_crash(tmp_path, native):
    opts: dict = {}

    class Sneaky:
        def __index__(self):
            opts["block_size"] = 4096  # changes the dict being read
            return 1 << 20

    opts["write_buffer_size"] = Sneaky()
    with cairn.Db(tmp_path / "db", options=opts) as db:
        assert db.options()["write_buffer_size"] == 1 << 20


def test_hierarchy(native):
    for name in ("CorruptionError", "IOError", "InvalidArgument", "Busy", "ClosedError"):
        cls = getattr(cairn, name)
        assert issubclass(cls, cairn.Error) and cls.__module__ == "cairn"
    assert issubclass(cairn.Error, Exception)


def test_closed_database(db_path):
    db = cairn.Db(db_path)
    db[b"k"] = b"v"
    for i in range(200):
        db[b"x%03d" % i] = b"v"
    snap = db.snapshot()
    it = db.items()
    started = db.keys()
    next(started)
    next(started)  # a batch of items is now buffered
    cf = db.create_column_family("cf")
    db.close()
    assert db.closed and cf.closed
    for call in (
        lambda: db[b"k"],
        lambda: db.get(b"k"),
        lambda: db.put(b"k", b"v"),
        lambda: db.write(cairn.WriteBatch()),
        lambda: db.flush(),
        lambda: db.stats(),
        lambda: db.items(),
        lambda: next(it),
        lambda: next(started),
        lambda: snap[b"k"],
        lambda: cf[b"k"],
        lambda: db.column_families(),
    ):
        with pytest.raises(cairn.ClosedError):
            call()
    db.close()  # twice is fine


def test_locked_database_is_busy(db_path):
    with cairn.Db(db_path):
        with pytest.raises(cairn.Busy, match="locked"):
            cairn.Db(db_path)


def test_missing_database(tmp_path, native):
    with pytest.raises(cairn.InvalidArgument, match="does not exist"):
        cairn.Db(tmp_path / "none", options={"create_if_missing": False})
    assert not (tmp_path / "none" / "CURRENT").exists()


def test_io_error_has_errno(tmp_path, native):
    f = tmp_path / "a-file"
    f.write_bytes(b"not a directory")
    with pytest.raises(cairn.IOError) as e:
        cairn.Db(f / "db")
    assert isinstance(e.value.errno, int) and e.value.errno != 0


def test_oversized_key_is_invalid(db):
    with pytest.raises(cairn.InvalidArgument):
        db[b"k" * (1 << 20)] = b"v"
    batch = cairn.WriteBatch()
    with pytest.raises(cairn.InvalidArgument, match="key"):
        batch.put(b"k" * (1 << 20), b"v")
    with pytest.raises(cairn.InvalidArgument):
        db.get(b"k" * (1 << 20))


def test_corrupt_table_raises_corruption(db_path):
    with cairn.Db(db_path, options={"block_cache_bytes": 0}) as db:
        for i in range(2000):
            db[b"k%05d" % i] = b"value-%05d" % i
        db.flush()
    tables = sorted(Path(db_path).glob("*.sst"))
    assert tables
    data = bytearray(tables[0].read_bytes())
    data[len(data) // 4] ^= 0x40  # inside a data block
    tables[0].write_bytes(bytes(data))
    with cairn.Db(db_path, options={"block_cache_bytes": 0}) as db:
        wrong = 0
        with pytest.raises(cairn.CorruptionError):
            for i in range(2000):
                v = db.get(b"k%05d" % i)
                if v is not None and v != b"value-%05d" % i:
                    wrong += 1
        assert wrong == 0
        with pytest.raises(cairn.CorruptionError):
            list(db.items())
    report = cairn.check(db_path)
    assert not report["ok"]
    assert any(f.endswith(tables[0].name) for f, _ in report["problems"]), report["problems"]


def test_missing_current_refuses_then_repairs(db_path):
    with cairn.Db(db_path) as db:
        for i in range(100):
            db[b"%03d" % i] = b"v"
        db.flush()
    os.remove(Path(db_path) / "CURRENT")
    with pytest.raises(cairn.CorruptionError):
        cairn.Db(db_path)
    report = cairn.repair(db_path)
    assert report["method"] in ("manifest", "rebuilt")
    with cairn.Db(db_path) as db:
        assert len(list(db.keys())) == 100
    report = cairn.check(db_path)
    assert report["ok"], report["problems"]
    assert report["tables"] >= 1 and report["entries"] >= 100


def test_learners_import_without_the_compiled_module():
    # A fresh interpreter in which importing cairn._native fails, as on a checkout where
    # it was never built: the learners still import, and the engine names say why not.
    code = """
import sys
sys.modules["cairn._native"] = None  # makes 'import cairn._native' raise ImportError
import cairn, cairn.learn.leaper.train, cairn.learn.salsm.cli
try:
    cairn.Db
except ImportError as e:
    assert "compiled engine module" in str(e), e
    print("ok")
"""
    python_dir = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(python_dir))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_engine_warnings_reach_python_logging(tmp_path, native, caplog):
    with cairn.Db(tmp_path / "db") as db:
        db.put(b"k", b"v")
    (options,) = (tmp_path / "db").glob("OPTIONS-*")
    options.write_bytes(b"not an options file")
    # A preset opens without reading the options file; the engine then finds it damaged,
    # which is advisory: it warns and goes on.
    with caplog.at_level("WARNING"):
        with cairn.Db(tmp_path / "db", preset="default") as db:
            assert db.get(b"k") == b"v"
    warned = [r for r in caplog.records if "options file is unreadable" in r.getMessage()]
    assert warned, [r.getMessage() for r in caplog.records]
    assert warned[0].name.startswith("cairn") and warned[0].levelname == "WARNING"
