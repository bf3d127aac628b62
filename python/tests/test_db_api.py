"""The Python API of the engine: mapping protocol, writes, batches, iterators, snapshots,
column families, maintenance and introspection."""

from __future__ import annotations

import pytest

import cairn


def test_mapping_protocol(db):
    db[b"a"] = b"1"
    db["b"] = "2"  # str is encoded as UTF-8
    db[bytearray(b"c")] = bytearray(b"3")
    assert db[b"a"] == b"1"
    assert db[b"b"] == b"2" and db["b"] == b"2"
    assert db[b"c"] == b"3"
    assert b"a" in db and "b" in db and b"z" not in db
    assert db.get(b"z") is None
    assert db.get(b"z", b"dflt") == b"dflt"
    assert db.get(b"a", b"dflt") == b"1"
    with pytest.raises(KeyError):
        db[b"z"]
    del db[b"a"]
    assert b"a" not in db
    del db[b"never-there"]  # a tombstone, not an error (as rocksdict)
    assert list(db) == [b"b", b"c"]


def test_unicode_keys_are_utf8(db):
    db["clé"] = "valeur"
    assert db["clé".encode()] == "valeur".encode()
    assert list(db.keys()) == ["clé".encode()]


def test_bad_key_types_are_type_errors(db):
    for bad in (1, 1.5, None, [1, 2], object()):
        with pytest.raises(TypeError):
            db[bad] = b"v"
        with pytest.raises(TypeError):
            db.get(bad)


def test_put_delete_with_sync(db_path):
    with cairn.Db(db_path) as db:
        db.put(b"k", b"v", sync=True)
        db.put(b"k2", b"v2")
        db.delete(b"k2", sync=True)
    with cairn.Db(db_path) as db:
        assert db[b"k"] == b"v"
        assert b"k2" not in db


def test_write_batch_is_atomic_and_reusable(db):
    other = db.create_column_family("other")
    db[b"gone"] = b"x"
    b = cairn.WriteBatch()
    b.put(b"a", b"1")
    b.put("b", "2")
    b.delete(b"gone")
    b.put(b"o", b"in-other", cf=other)
    assert len(b) == 4
    db.write(b, sync=True)
    assert dict(db.items()) == {b"a": b"1", b"b": b"2"}
    assert dict(other.items()) == {b"o": b"in-other"}
    assert len(b) == 4  # kept after the write
    b.clear()
    assert len(b) == 0
    db.write(b)  # an empty batch is fine
    # operations without cf= go to default whichever view writes the batch (as RocksDB)
    b.put(b"via-view", b"1")
    other.write(b)
    assert db[b"via-view"] == b"1" and b"via-view" not in other


def test_batch_refuses_another_databases_column_families(tmp_path, native):
    with cairn.Db(tmp_path / "one") as one, cairn.Db(tmp_path / "two") as two:
        u1 = one.create_column_family("u")
        two.create_column_family("x")
        u2 = two.create_column_family("u")  # ids are per database: a bare id would go astray
        b = cairn.WriteBatch()
        b.put(b"k", b"v", cf=u2)
        with pytest.raises(cairn.InvalidArgument):
            b.put(b"k", b"v", cf=u1)
        with pytest.raises(cairn.InvalidArgument):
            one.write(b)
        assert b"k" not in u1 and b"k" not in one
        two.write(b)
        assert u2[b"k"] == b"v"
        b.clear()  # a cleared batch may name another database's families
        b.put(b"k1", b"v1", cf=u1)
        one.write(b)
        assert u1[b"k1"] == b"v1"


def test_delete_range(db):
    for i in range(20):
        db[b"k%02d" % i] = b"v"
    db.delete_range(b"k05", b"k15")
    assert list(db.keys()) == [b"k%02d" % i for i in list(range(5)) + list(range(15, 20))]
    b = cairn.WriteBatch()
    with pytest.raises(cairn.InvalidArgument):
        b.delete_range(b"z", b"a")


def test_iterators_ranges_and_reverse(db):
    keys = [b"k%03d" % i for i in range(300)]
    for k in keys:
        db[k] = k + b"-v"
    db.flush()
    assert list(db.keys()) == keys
    assert list(db.keys(reverse=True)) == keys[::-1]
    assert list(db.keys(from_key=b"k100", to_key=b"k105")) == keys[100:105]
    # reverse runs from from_key (included) down to to_key (excluded), as rocksdict and range()
    assert list(db.keys(from_key=b"k105", to_key=b"k100", reverse=True)) == keys[101:106][::-1]
    assert list(db.keys(from_key=b"k005", reverse=True)) == keys[:6][::-1]
    assert list(db.keys(to_key=b"k297", reverse=True)) == [b"k299", b"k298"]
    assert list(db.items(from_key=b"k004x", reverse=True))[0] == (b"k004", b"k004-v")
    assert list(db.keys(from_key=b"k100", to_key=b"k105", reverse=True)) == []
    assert list(db.values(from_key=b"k298")) == [b"k298-v", b"k299-v"]
    assert list(db.items(to_key=b"k002")) == [(b"k000", b"k000-v"), (b"k001", b"k001-v")]
    assert list(db.items(from_key=b"zzz")) == []
    it = db.items()
    assert next(it) == (b"k000", b"k000-v")
    assert next(iter(it)) == (b"k001", b"k001-v")  # iter(it) is it


def test_iterator_keeps_its_view(db):
    for i in range(100):
        db[b"%03d" % i] = b"old"
    it = db.items()
    first = next(it)
    for i in range(100):
        db[b"%03d" % i] = b"new"
    db[b"999"] = b"added"
    rest = list(it)
    assert first == (b"000", b"old")
    assert all(v == b"old" for _, v in rest) and len(rest) == 99


def test_snapshot_context_manager(db):
    db[b"a"] = b"1"
    with db.snapshot() as snap:
        db[b"a"] = b"2"
        db[b"b"] = b"3"
        del db[b"a"]
        assert snap[b"a"] == b"1"
        assert b"b" not in snap
        assert snap.get(b"b", b"none") == b"none"
        assert list(snap.items()) == [(b"a", b"1")]
        assert list(snap) == [b"a"]
        it = snap.values()
        assert snap.seq > 0
    with pytest.raises(cairn.ClosedError):
        snap[b"a"]
    assert list(it) == [b"1"]  # an iterator keeps its view after the snapshot closes
    snap.close()  # twice is fine


def test_multi_get_in_key_order_and_at_a_snapshot(db):
    db[b"a"] = b"1"
    db[b"c"] = b"3"
    snap = db.snapshot()
    del db[b"a"]
    assert db.multi_get([b"c", b"a", "c", bytearray(b"b")]) == [b"3", None, b"3", None]
    assert db.multi_get(k for k in [b"c"]) == [b"3"]
    assert db.multi_get([]) == []
    assert snap.multi_get([b"a", b"c"]) == [b"1", b"3"]
    with pytest.raises(TypeError):
        db.multi_get([1])
    snap.close()


def test_sync_wal_and_checkpoint(db, tmp_path):
    for i in range(2000):
        db[f"k{i:05}"] = b"v" * 50
    db.flush()
    db[b"late"] = b"in the log"
    db.sync_wal()
    copy = tmp_path / "copy"
    db.checkpoint(copy)
    db[b"after"] = b"not in the copy"
    with pytest.raises(cairn.Error):
        db.checkpoint(copy)  # it exists
    c = cairn.Db(copy)
    try:
        assert c[b"late"] == b"in the log"
        assert b"after" not in c
        assert sum(1 for _ in c) == 2001
    finally:
        c.close()


def test_read_only_beside_the_writer(db, db_path):
    db[b"a"] = b"1"
    with cairn.Db(db_path, read_only=True) as ro:
        assert ro[b"a"] == b"1"
        assert ro.multi_get([b"a", b"b"]) == [b"1", None]
        with pytest.raises(cairn.ReadOnlyError):
            ro[b"b"] = b"2"
        with pytest.raises(cairn.ReadOnlyError):
            ro.flush()
    with pytest.raises(cairn.InvalidArgument):
        cairn.Db(db_path.parent / "missing", read_only=True)


def test_reopen_with_the_saved_options(tmp_path, native):
    path = tmp_path / "tiered"
    with cairn.Db(path, preset="age-tier", options={"write_buffer_size": 96 << 10}) as d:
        for i in range(3000):
            d[f"k{i:05}"] = b"v" * 40
        d.compact_range()
    # Neither options nor preset: the options file's (two tiers, the write buffer).
    with cairn.Db(path) as d:
        assert d[b"k00007"] == b"v" * 40
        assert d.options()["write_buffer_size"] == 96 << 10
    with cairn.Db(path, read_only=True) as d:
        assert sum(1 for _ in d) == 3000


def test_column_family_with_its_own_options(db_path):
    import json

    with cairn.Db(db_path) as db:
        models = db.create_column_family(
            "models", preset="bourbon", options={"compression": "none", "point_cache": False}
        )
        for i in range(500):
            models[f"k{i:04}"] = b"m"
        with pytest.raises(cairn.InvalidArgument):
            db.create_column_family("bad", options={"block_size": 0})
        with pytest.raises(cairn.InvalidArgument):
            db.create_column_family("bad", preset="no-such-preset")
        with pytest.raises(cairn.InvalidArgument):
            db.create_column_family("bad", options={"num_levels": 3})  # the database's
    newest = sorted(db_path.glob("OPTIONS-*"))[-1].read_text()
    saved = json.loads(newest[: newest.rstrip("\n").rfind("\n")])["options"]
    own = saved["column_families"]["models"]
    assert own["compression"] == "None" and own["point_cache"] is False
    assert "Learned" in own["index"] and own["value_threshold"] == 0
    with cairn.Db(db_path) as db:
        assert db.column_family("models")[b"k0007"] == b"m"


def test_snapshot_across_column_families(db):
    cf = db.create_column_family("cf")
    cf[b"x"] = b"old"
    db[b"y"] = b"old"
    snap = db.snapshot()
    cf[b"x"] = b"new"
    assert snap.column_family("cf")[b"x"] == b"old"
    assert snap[b"y"] == b"old"
    snap.close()


def test_column_families(db_path):
    with cairn.Db(db_path) as db:
        users = db.create_column_family("users")
        assert users.name == "users" and db.name == "default"
        users[b"k"] = b"user"
        db[b"k"] = b"default"
        assert sorted(db.column_families()) == ["default", "users"]
        with pytest.raises(cairn.InvalidArgument):
            db.create_column_family("users")
        with pytest.raises(cairn.InvalidArgument):
            db.column_family("nope")
    with cairn.Db(db_path) as db:
        users = db.column_family("users")
        assert users[b"k"] == b"user" and db[b"k"] == b"default"
        db.drop_column_family("users")
        assert db.column_families() == ["default"]
        with pytest.raises(cairn.InvalidArgument):
            users[b"k"]


def test_flush_compact_and_level_info(db):
    for i in range(5000):
        db[b"key%06d" % i] = b"v" * 100
    db.flush()
    db.compact_range()
    db.compact_range(b"key000100", b"key000200")
    levels = db.level_info()
    assert levels[0]["level"] == 0
    files = sum(r["files"] for lv in levels for r in lv["runs"])
    assert files > 0
    assert all({"level", "capacity", "k", "pending_k", "draining", "runs"} <= set(lv) for lv in levels)
    assert db[b"key004999"] == b"v" * 100


def test_set_policy(db):
    db.set_policy(1, 4)
    assert db.level_info()[1]["k"] == 4
    db.set_policy(2, 3, transition="lazy")
    with pytest.raises(cairn.InvalidArgument):
        db.set_policy(1, 3, transition="sideways")
    with pytest.raises(cairn.InvalidArgument):
        db.set_policy(1, 1000)


def test_stats_is_a_dict(db):
    for i in range(100):
        db[b"%d" % i] = b"v"
    for i in range(100):
        db.get(b"%d" % i)
    s = db.stats()
    assert isinstance(s, dict)
    assert s["gets"] >= 100
    assert s["writes"] >= 100
    assert isinstance(s["levels"], list)
    assert "read_cache" in s and "io" in s


def test_presets_and_options_by_name(tmp_path, native):
    presets = cairn.presets()
    for name in ("default", "ac-key", "bourbon", "ruskey", "leaper", "sa-lsm", "tiering"):
        assert name in presets and presets[name]
    names = cairn.option_names()
    assert set(names) == set(cairn.default_options())
    assert cairn.default_options("tiering")["level_runs"][0] == 10
    # every concrete preset opens, takes writes and reads them back
    concrete = [n for n in presets if n == n.lower()]  # patterns such as fixed-X-Y-Z
    assert len(concrete) < len(presets)
    for name in concrete + ["fixed-3-2-5-sep", "ac-key-k1000-t10", "ac-key-sep"]:
        with cairn.Db(tmp_path / name, preset=name, options={"write_buffer_size": 1 << 20}) as db:
            db[b"k"] = b"v"
            assert db[b"k"] == b"v", name
            assert db.options()["write_buffer_size"] == 1 << 20
    with cairn.Db(tmp_path / "fixed", preset="fixed-3-2-5") as db:
        db[b"k"] = b"v"
    # Bourbon's presets write fixed-width blocks; mapped reads return the same answers
    assert cairn.default_options("bourbon")["fixed_width_entries"] is True
    assert cairn.default_options()["mmap_reads"] is False
    opts = {"mmap_reads": True, "write_buffer_size": 1 << 16}
    with cairn.Db(tmp_path / "mapped", preset="bourbon-always", options=opts) as db:
        for i in range(3000):
            db[b"k%06d" % i] = b"v%d" % i
        db.flush()
        assert db.options()["mmap_reads"] is True
        assert all(db[b"k%06d" % i] == b"v%d" % i for i in range(0, 3000, 7))
    # Filters are cache-local by default; classic ones answer the same, across reopens
    assert cairn.default_options()["cache_local_filter"] is True
    written = set()
    for local in (False, True, False):
        opts = {"cache_local_filter": local, "write_buffer_size": 1 << 16}
        with cairn.Db(tmp_path / "filters", options=opts) as db:
            assert db.options()["cache_local_filter"] is local
            for i in range(2000):
                db[b"f%06d-%d" % (i, local)] = b"v%d" % i
            db.flush()
            written.add(local)
            for layout in (False, True):
                for i in range(0, 2000, 7):
                    want = b"v%d" % i if layout in written else None
                    assert db.get(b"f%06d-%d" % (i, layout)) == want


def test_options_are_checked(tmp_path, native):
    with pytest.raises(cairn.InvalidArgument, match="unknown option"):
        cairn.Db(tmp_path / "a", options={"no_such_option": 1})
    with pytest.raises(cairn.InvalidArgument, match="unknown preset"):
        cairn.Db(tmp_path / "b", preset="no-such-preset")
    with pytest.raises(cairn.InvalidArgument):
        cairn.Db(tmp_path / "c", options={"block_size": "big"})
    with pytest.raises(cairn.InvalidArgument):
        cairn.Db(tmp_path / "d", options={"bloom_allocation": "fancy"})
    with pytest.raises(cairn.InvalidArgument):
        cairn.Db(tmp_path / "e", options={"level_runs": [99]})  # K > T


def test_repr_path_and_latest_seq(db, db_path):
    assert db.path == db_path  # a pathlib.Path
    assert "default" in repr(db)
    s0 = db.latest_seq
    db[b"a"] = b"b"
    assert db.latest_seq == s0 + 1


def test_compression_options(tmp_path, native):
    d = cairn.default_options()
    assert (d["compression"], d["compression_per_level"], d["bottommost_compression"]) == (
        "lz4",
        ["none", "none"],
        "zstd",
    )
    written = {}
    # Every setting reads back what the others wrote, across reopens.
    for c in ("zstd:9", "none", "lz4"):
        opts = {
            "compression": c,
            "compression_per_level": [],
            "bottommost_compression": None,
            "write_buffer_size": 1 << 16,
        }
        with cairn.Db(tmp_path / "packed", options=opts) as db:
            assert db.options()["compression"] == c
            for i in range(2000):
                k = b"%s-%06d" % (c.encode(), i)
                written[k] = k * 4
                db[k] = k * 4
            db.flush()
            db.compact_range()
            assert all(db[k] == v for k, v in written.items())
    for bad in ({"compression": "snappy"}, {"compression": "zstd:99"}):
        with pytest.raises(cairn.InvalidArgument):
            cairn.Db(tmp_path / "bad", options=bad)


def test_sst_file_writer_and_ingest(tmp_path, native):
    w = cairn.SstFileWriter(tmp_path / "load.sst")
    for i in range(1000):
        w.put(b"k%06d" % i, b"new%d" % i)
    w.delete(b"k%06d" % 1000)
    with pytest.raises(cairn.InvalidArgument):
        w.put(b"a", b"out of order")
    info = w.finish()
    assert (info["num_entries"], info["smallest"], info["largest"]) == (1001, b"k000000", b"k001000")
    with pytest.raises(cairn.InvalidArgument):
        w.put(b"z", b"finished")
    with cairn.Db(tmp_path / "db") as db:
        db[b"k000005"] = b"old"
        db[b"k001000"] = b"deleted by the file"
        db[b"zz"] = b"untouched"
        db.ingest_external_file([info["path"]])
        assert db[b"k000005"] == b"new5"
        assert db.get(b"k001000") is None
        assert db[b"zz"] == b"untouched"
        assert len(list(db.keys())) == 1001
        with pytest.raises(cairn.Error):
            db.ingest_external_file([tmp_path / "missing.sst"])


def test_metrics_text_is_prometheus_exposition(tmp_path, native):
    with cairn.Db(tmp_path / "db") as db:
        for i in range(10):
            db.put(b"k%d" % i, b"v")
        text = db.metrics_text(label="orders")
    assert "# TYPE cairn_writes_total counter" in text
    assert 'cairn_writes_total{db="orders"} 10' in text.splitlines()
    samples = [l for l in text.splitlines() if l and not l.startswith("#")]
    assert all(float(l.rsplit(" ", 1)[1]) >= 0 for l in samples)
