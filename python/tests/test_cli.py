"""The command line end to end in a temporary folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cairn.learn.leaper.bundle import read_bundle
from cairn.learn.leaper.cli import main
from cairn.learn.leaper.trace import read_trace

SYNTH = ["--slots", "216", "--slot-ms", "1200000", "--ranges", "600", "--ops-per-slot", "400", "--seed", "7"]
FAST = ["--rounds", "30", "--threads", "1"]


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "cf0.ltr"
    assert main(["synth", "--out", str(path), *SYNTH]) == 0
    return path


def test_synth_writes_a_valid_trace(trace_file):
    t = read_trace(trace_file)
    assert t.n_rows > 1000 and t.transfers.shape[0] > 0 and t.slot_ms == 1_200_000
    assert int(t.rows["slot"].max()) == 215


def test_train_writes_bundle_and_report(trace_file, tmp_path, capsys):
    out, rep = tmp_path / "leaper.model", tmp_path / "report.json"
    code = main(["train", "--trace", str(trace_file), "--out", str(out), "--k", "2", "--report-json", str(rep), *FAST])
    assert code == 0
    text = capsys.readouterr().out
    assert "leaper" in text and "last-slot" in text and "IW proxy (W=6)" in text and "wrote" in text
    b = read_bundle(out)
    assert b.metadata["k"] == 2 and len(b.models) == 2
    report = json.loads(rep.read_text())
    assert report == b.metadata["report"]
    assert report["horizons"][0]["leaper"]["recall"] > 0.8

    # score the bundle on the trace (no training)
    assert main(["report", "--trace", str(trace_file), "--model", str(out)]) == 0
    assert "threshold" in capsys.readouterr().out


def test_k_from_compaction_durations(trace_file, tmp_path):
    out = tmp_path / "m"
    # 20-minute slots: max(T1 + T2) = 1500 s -> ceil(1.25) + 1 = 3 models
    args = ["train", "--trace", str(trace_file), "--out", str(out), "--compaction-secs", "900", "1500", *FAST]
    assert main(args) == 0
    assert read_bundle(out).metadata["k"] == 3


def test_a_rarer_label_travels_with_the_bundle(trace_file, tmp_path, capsys):
    out, rep = tmp_path / "leaper.model", tmp_path / "report.json"
    args = ["train", "--trace", str(trace_file), "--out", str(out), "--k", "1", "--hot-share", "0.3"]
    assert main([*args, "--report-json", str(rep), *FAST]) == 0
    report = json.loads(rep.read_text())
    assert report["hot_reads"] > 1.0 and report["hot_share"] == 0.3
    assert report["hot_share_reached"] <= 0.5
    capsys.readouterr()
    # Scoring the bundle again labels the trace as the training did.
    assert main(["report", "--trace", str(trace_file), "--model", str(out), "--report-json", str(rep)]) == 0
    again = json.loads(rep.read_text())
    assert again["hot_reads"] == report["hot_reads"]
    # ... and refuses a label of its own.
    capsys.readouterr()
    assert main(["report", "--trace", str(trace_file), "--model", str(out), "--hot-share", "0.1"]) == 2
    assert "bundle's label" in capsys.readouterr().err


def test_errors_are_reported_not_raised(trace_file, tmp_path, capsys):
    bad = tmp_path / "bad.ltr"
    data = bytearray(trace_file.read_bytes())
    data[200] ^= 0xFF
    bad.write_bytes(bytes(data))
    assert main(["train", "--trace", str(bad), "--out", str(tmp_path / "m")]) == 2
    assert "CRC32C mismatch" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
    assert main(["report", "--trace", str(trace_file), "--model", str(bad)]) == 2
    assert "error:" in capsys.readouterr().err


def test_watch_retrains_on_a_new_trace(trace_file, tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "a.ltr").write_bytes(trace_file.read_bytes())
    out = folder / "leaper.model"  # in the watched folder: never taken for a trace
    args = ["train", "--watch", str(folder), "--out", str(out), "--every", "0", "--max-polls", "1", "--k", "1", *FAST]
    assert main(args) == 0
    first = out.stat().st_mtime_ns
    # nothing new: the bundle is newer than the trace, no retraining
    assert main(args) == 0
    assert out.stat().st_mtime_ns == first
    # a damaged newer trace is skipped and the bundle kept
    later = first + 10**9
    (folder / "b.ltr").write_bytes(b"CAIRNLTR" + b"\0" * 10)
    os.utime(folder / "b.ltr", ns=(later, later))
    assert main(args) == 0
    assert out.stat().st_mtime_ns == first and read_bundle(out).metadata["k"] == 1
    # a good newer one replaces the bundle
    (folder / "c.ltr").write_bytes(trace_file.read_bytes())
    os.utime(folder / "c.ltr", ns=(later + 10**9, later + 10**9))
    assert main([*args[: -len(FAST) - 2], "--k", "2", *FAST]) == 0
    assert read_bundle(out).metadata["k"] == 2


def test_module_entry_point(trace_file, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    r = subprocess.run(
        [sys.executable, "-m", "cairn.learn.leaper", "--help"], capture_output=True, text=True, env=env, timeout=60
    )
    assert r.returncode == 0 and "train" in r.stdout and "synth" in r.stdout
