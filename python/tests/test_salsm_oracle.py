"""The oracle scores file (bench -> service) and the oracle method in train and evaluate."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cairn.learn.salsm.cli import main
from cairn.learn.salsm.coldset import read_cold_set
from cairn.learn.salsm.oracle import OracleError, OracleScores, decode_oracle, encode_oracle, read_oracle, write_oracle
from cairn.learn.salsm.synth import SynthConfig, synth_trace
from cairn.learn.salsm.trace import write_trace

DAY = 86_400_000


def doc(**over):
    d = {
        "format": "cairn-salsm-oracle",
        "version": 1,
        "at_ms": 5 * DAY,
        "horizon_ms": 30 * DAY,
        "futures": 256,
        "keys_hex": ["6b31", "", "00ff"],
        "p_read": [0.25, 1.0, 0.0],
    }
    d.update(over)
    return json.dumps(d).encode()


def test_round_trip_and_lookup(tmp_path):
    o = decode_oracle(doc())
    assert (o.at_ms, o.horizon_ms, o.futures) == (5 * DAY, 30 * DAY, 256)
    assert o.keys == [b"k1", b"", b"\x00\xff"] and o.lookup([b"\x00\xff", b"k1"]).tolist() == [0.0, 0.25]
    path = tmp_path / "o.json"
    write_oracle(path, o)
    back = read_oracle(path)
    assert back.keys == o.keys and np.array_equal(back.p_read, o.p_read) and back.at_ms == o.at_ms
    assert decode_oracle(encode_oracle(OracleScores(0, 1.0, [], np.zeros(0)))).keys == []
    with pytest.raises(OracleError, match="1 of 2 records have no probability .*6b32"):
        o.lookup([b"k1", b"k2"])
    o.check_at(5 * DAY + DAY - 1, DAY, "T_cut")
    with pytest.raises(OracleError, match="at_ms 432000000.*T_cut"):
        o.check_at(7 * DAY, DAY, "T_cut")


@pytest.mark.parametrize(
    "data, what",
    [
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "not an oracle scores file"),
        (doc(format="cairn-salsm-leaper"), "not an oracle scores file"),
        (doc(version=2), "unsupported version 2"),
        (doc(version=True), "unsupported version"),
        (doc(at_ms="soon"), "at_ms must be a finite number"),
        (doc(at_ms=-5), "at_ms must be a whole number"),
        (doc(horizon_ms=0), "horizon_ms > 0"),
        (doc(keys_hex="6b31"), "keys_hex must be a list"),
        (doc(keys_hex=["6b3", "", "00"]), r"keys_hex\[0\] is not a hex string"),
        (doc(keys_hex=[1, "", "00"]), r"keys_hex\[0\]"),
        (doc(keys_hex=["00", "", "00"]), "repeats a key"),
        (doc(p_read=[0.5, 0.5]), "p_read must be a list of 3 numbers"),
        (doc(p_read=[0.5, 1.5, 0.0]), r"p_read\[1\] = 1.5 is not a probability"),
        (doc(p_read=[0.5, None, 0.0]), r"p_read\[1\] must be a finite number"),
        (doc(futures=0), "futures must be a whole number"),
        (doc()[:-7], "not JSON"),
    ],
)
def test_bad_files_raise_oracle_error(data, what):
    with pytest.raises(OracleError, match=what):
        decode_oracle(data)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("oracle")
    t = synth_trace(SynthConfig(profile="order", records=900, days=45, seed=2))
    write_trace(d / "t.rtr", t)
    rng = np.random.default_rng(0)
    p = rng.random(t.n_records)
    for name, at in (("end", t.end_ms), ("cut", t.end_ms - 20 * DAY)):
        write_oracle(d / f"{name}.json", OracleScores(at, 20.0 * DAY, list(t.keys), p))
    return d, t, p


def test_train_oracle_migrates_the_least_likely_reads(files, tmp_path):
    d, t, p = files
    out, rep = tmp_path / "c.cld", tmp_path / "r.json"
    args = ["train", "--trace", str(d / "t.rtr"), "--method", "oracle", "--out", str(out), "--report", str(rep)]
    assert main([*args, "--budget", "0.25", "--oracle-scores", str(d / "end.json")]) == 0
    want = {t.keys[i] for i in np.argsort(p)[: round(0.25 * t.n_records)]}
    assert set(read_cold_set(out).keys) == want and read_cold_set(out).method == "oracle"
    r = json.loads(rep.read_text())
    assert r["oracle"]["at_ms"] == t.end_ms and r["samples"] == 0
    # alpha: cold when a read within the file's horizon is less likely than not
    assert main([*args, "--alpha-days", "20", "--oracle-scores", str(d / "end.json")]) == 0
    assert set(read_cold_set(out).keys) == {t.keys[i] for i in np.flatnonzero(p < 0.5)}


def test_oracle_errors_are_one_line(files, tmp_path, capsys):
    d, t, p = files
    out = tmp_path / "c.cld"
    args = ["train", "--trace", str(d / "t.rtr"), "--method", "oracle", "--out", str(out), "--budget", "0.2"]
    assert main(args) == 2
    assert "--oracle-scores" in capsys.readouterr().err
    assert main([*args, "--oracle-scores", str(d / "cut.json")]) == 2  # made for T_cut, not the end
    err = capsys.readouterr().err
    assert "the trace's end" in err and err.count("\n") == 1 and not out.exists()
    partial = tmp_path / "partial.json"
    write_oracle(partial, OracleScores(t.end_ms, 20.0 * DAY, list(t.keys[1:]), p[1:]))
    assert main([*args, "--oracle-scores", str(partial)]) == 2
    assert "1 of" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_bytes((d / "end.json").read_bytes()[:100])
    assert main([*args, "--oracle-scores", str(bad)]) == 2
    assert "not JSON" in capsys.readouterr().err
    assert main([*args, "--oracle-scores", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_evaluate_with_the_oracle_row(files, tmp_path, capsys):
    d, t, p = files
    out = tmp_path / "e.json"
    args = ["evaluate", "--trace", str(d / "t.rtr"), "--methods", "lru", "--budgets", "0.3", "--jobs", "1"]
    assert main([*args, "--horizon-days", "20", "--oracle-scores", str(d / "cut.json"), "--out", str(out)]) == 0
    rep = json.loads(out.read_text())
    row = rep["methods"]["oracle"]
    assert row["model"] == "oracle" and row["c_index"] is None and row["c_index_gain_vs_gbdt_naive"] is None
    assert row["cold_fir"]["0.3"]["migrated_share"] == pytest.approx(0.3, abs=0.01)
    assert "oracle" in rep["curve"]["methods"] and rep["oracle"]["at_ms"] == t.end_ms - 20 * DAY
    assert main([*args, "--horizon-days", "10", "--oracle-scores", str(d / "cut.json")]) == 2
    assert "T_cut" in capsys.readouterr().err
    partial = tmp_path / "partial.json"
    write_oracle(partial, OracleScores(t.end_ms - 20 * DAY, 20.0 * DAY, list(t.keys[::2]), p[::2]))
    assert main([*args, "--horizon-days", "20", "--oracle-scores", str(partial)]) == 2
    assert "have no probability" in capsys.readouterr().err
