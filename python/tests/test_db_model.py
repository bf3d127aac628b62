"""Model-based test of the bindings: random puts, deletes, range deletes, batches,
flushes, compactions and reopens, checked against a dict after every step."""

from __future__ import annotations

import bisect
import random

import pytest

import cairn


def check(db, model: dict[bytes, bytes], rng: random.Random) -> None:
    keys = sorted(model)
    assert list(db.items()) == [(k, model[k]) for k in keys]
    for _ in range(20):
        k = b"k%03d" % rng.randrange(200)
        assert db.get(k) == model.get(k)
        assert (k in db) == (k in model)
    lo, hi = sorted(b"k%03d" % rng.randrange(200) for _ in range(2))
    want = keys[bisect.bisect_left(keys, lo) : bisect.bisect_left(keys, hi)]
    assert list(db.keys(from_key=lo, to_key=hi)) == want
    assert list(db.values(from_key=lo, to_key=hi)) == [model[k] for k in want]
    # reverse: from hi (included) down to lo (excluded)
    back = keys[bisect.bisect_right(keys, lo) : bisect.bisect_right(keys, hi)][::-1]
    assert list(db.items(from_key=hi, to_key=lo, reverse=True)) == [(k, model[k]) for k in back]
    assert list(db.values(reverse=True)) == [model[k] for k in keys[::-1]]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("preset", ["default", "wisckey", "ac-key", "tiering"])
def test_against_a_dict(tmp_path, native, seed, preset):
    rng = random.Random(seed)
    model: dict[bytes, bytes] = {}
    opts = {"write_buffer_size": 16 << 10, "level1_bytes": 64 << 10, "target_file_size": 16 << 10}
    db = cairn.Db(tmp_path / "db", options=opts, preset=preset)
    try:
        for step in range(1500):
            op = rng.random()
            k = b"k%03d" % rng.randrange(200)
            if op < 0.5:
                v = bytes(rng.randrange(256) for _ in range(rng.choice([1, 10, 300])))
                db[k] = v
                model[k] = v
            elif op < 0.7:
                del db[k]
                model.pop(k, None)
            elif op < 0.75:
                a, b = sorted([k, b"k%03d" % rng.randrange(200)])
                db.delete_range(a, b)
                for key in [x for x in model if a <= x < b]:
                    del model[key]
            elif op < 0.85:
                batch = cairn.WriteBatch()
                for _ in range(rng.randrange(1, 8)):
                    bk = b"k%03d" % rng.randrange(200)
                    if rng.random() < 0.7:
                        batch.put(bk, b"b%d" % step)
                        model[bk] = b"b%d" % step
                    else:
                        batch.delete(bk)
                        model.pop(bk, None)
                db.write(batch, sync=rng.random() < 0.1)
            elif op < 0.88:
                db.flush()
            elif op < 0.89:
                db.compact_range()
            elif op < 0.9:
                db.close()
                db = cairn.Db(tmp_path / "db", options=opts, preset=preset)
            if step % 100 == 0:
                check(db, model, rng)
        check(db, model, rng)
        db.close()
        db = cairn.Db(tmp_path / "db", options=opts, preset=preset)
        check(db, model, rng)
    finally:
        db.close()
