"""Model bundle: the spec's layout, round trip, and every kind of damage refused."""

from __future__ import annotations

import json

import lightgbm as lgb
import pytest

from cairn.learn.leaper.bundle import Bundle, BundleError, decode_bundle, encode_bundle, read_bundle, write_bundle
from cairn.learn.leaper.checksum import crc32c
from cairn.learn.leaper.train import to_bundle


@pytest.fixture(scope="module")
def bundle(trained):
    return to_bundle(trained, trained_unix_ms=1_700_000_000_000)


def test_layout(bundle):
    data = encode_bundle(bundle)
    lines = data.split(b"\n")
    assert lines[0] == b"CAIRN-LEAPER-MODEL 1"
    meta = json.loads(lines[1])
    assert list(meta)[:13] == [
        "version", "range_width", "fine_range_width", "key_offset", "slot_ms", "k", "threshold",
        "history_slots", "gamma", "features", "precursors", "trained_unix_ms", "trace_rows",
    ]  # fmt: skip
    assert meta["k"] == 2 and meta["history_slots"] == 6 and meta["gamma"] == 3
    assert meta["range_width"] % meta["fine_range_width"] == 0
    assert all(isinstance(k, str) and k.isdigit() for k in meta["precursors"])
    assert "horizons" in meta["report"]
    # MODEL i <len>\n then exactly len bytes, then the next header or the trailer
    pos = len(lines[0]) + len(lines[1]) + 2
    for i, text in enumerate(bundle.models, start=1):
        header = f"MODEL {i} {len(text.encode())}\n".encode()
        assert data[pos : pos + len(header)] == header
        pos += len(header) + len(text.encode())
    assert data[pos:] == f"CRC32C {crc32c(data[:pos]):08x}\n".encode()


def test_round_trip_and_models_load(tmp_path, bundle, trained):
    path = tmp_path / "leaper.model"
    write_bundle(path, bundle)
    back = read_bundle(path)
    assert back.metadata == json.loads(json.dumps(bundle.metadata))
    assert back.models == bundle.models
    x = trained.prepared.samples.x[:50]
    for text, orig in zip(back.models, trained.models):
        assert (lgb.Booster(model_str=text).predict(x) == lgb.Booster(model_str=orig).predict(x)).all()
    assert [p.name for p in tmp_path.iterdir()] == ["leaper.model"]


def test_model_text_without_final_newline(bundle):
    b = Bundle(dict(bundle.metadata, k=2), ["tree\nA", "tree\nB\n"])
    data = encode_bundle(b)
    assert b"tree\nAMODEL 2 7\n" in data
    assert decode_bundle(data).models == ["tree\nA", "tree\nB\n"]


def test_nan_in_report_becomes_null(bundle):
    b = Bundle(dict(bundle.metadata, report={"auc": float("nan")}), bundle.models)
    assert decode_bundle(encode_bundle(b)).metadata["report"] == {"auc": None}


@pytest.mark.parametrize("where", [0, 5, 25, 200, 400, -300, -40, -10, -3])
def test_any_flipped_byte_is_refused(bundle, where):
    data = bytearray(encode_bundle(bundle))
    data[where] ^= 0x01
    with pytest.raises(BundleError):
        decode_bundle(bytes(data))


@pytest.mark.parametrize("keep", [0, 10, 30, 500, -1, -17, -100])
def test_truncation_is_refused(bundle, keep):
    data = encode_bundle(bundle)
    with pytest.raises(BundleError):
        decode_bundle(data[:keep])


def test_trailing_garbage_is_refused(bundle):
    with pytest.raises(BundleError, match="trailer"):
        decode_bundle(encode_bundle(bundle) + b"x")


def _sealed(body: bytes) -> bytes:
    return body + f"CRC32C {crc32c(body):08x}\n".encode()


def test_structure_errors_with_a_valid_crc(bundle):
    good = encode_bundle(bundle)[: -len(b"CRC32C 00000000\n")]
    with pytest.raises(BundleError, match="not a Leaper"):
        decode_bundle(_sealed(good.replace(b"CAIRN-LEAPER-MODEL 1", b"CAIRN-LEAPER-MODEL 2", 1)))
    with pytest.raises(BundleError, match="model 2 where model 1"):
        decode_bundle(_sealed(good.replace(b"MODEL 1 ", b"MODEL 2 ", 1)))
    with pytest.raises(BundleError, match="claims"):
        decode_bundle(_sealed(good[: good.index(b"MODEL 2 ") - 10]))  # model 1 cut short
    meta_end = good.index(b"\n", len(b"CAIRN-LEAPER-MODEL 1\n"))
    meta = json.loads(good[len(b"CAIRN-LEAPER-MODEL 1\n") : meta_end])
    rest = good[meta_end:]
    head = b"CAIRN-LEAPER-MODEL 1\n"
    with pytest.raises(BundleError, match="k = 3"):
        decode_bundle(_sealed(head + json.dumps(dict(meta, k=3)).encode() + rest))
    with pytest.raises(BundleError, match="lacks threshold"):
        m2 = {k: v for k, v in meta.items() if k != "threshold"}
        decode_bundle(_sealed(head + json.dumps(m2).encode() + rest))
    with pytest.raises(BundleError, match="not JSON"):
        decode_bundle(_sealed(head + b"{oops" + rest))


def test_writer_refuses_inconsistent_metadata(bundle):
    with pytest.raises(ValueError):
        encode_bundle(Bundle(bundle.metadata, bundle.models[:1]))
