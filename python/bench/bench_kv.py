"""Throughput of cairn's Python bindings against rocksdict (RocksDB's Python binding) on
one seeded stream: per-call puts, batched puts, random gets (hits and misses) and a full
scan, each engine in its own directory with the same memtable, cache and bloom budget.

Both engines are settled (flushed and fully compacted) before the reads. Each workload
runs --repeat times with the engine order alternated; the table shows the median ops/s
and the range. It measures the bindings and the engines together, as a Python user sees
them; it is a benchmark, not a test (timings on a shared machine are noisy).

    python python/bench/bench_kv.py --keys 200000 --repeat 3 --out bench-out/python-kv.json
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import cairn

MEMTABLE = 64 << 20
CACHE = 32 << 20
BLOOM_BITS = 10


class CairnEngine:
    name = "cairn"

    def __init__(self, path: Path):
        self.db = cairn.Db(
            path,
            options={
                "write_buffer_size": MEMTABLE,
                "max_write_buffers": 2,
                "block_cache_bytes": CACHE,
                "bloom_bits_per_key": float(BLOOM_BITS),
            },
        )

    def put(self, k: bytes, v: bytes) -> None:
        self.db[k] = v

    def get(self, k: bytes) -> bytes | None:
        return self.db.get(k)

    def write_batch(self, pairs: list[tuple[bytes, bytes]]) -> None:
        b = cairn.WriteBatch()
        for k, v in pairs:
            b.put(k, v)
        self.db.write(b)

    def scan(self) -> int:
        return sum(1 for _ in self.db.items())

    def settle(self) -> None:
        self.db.flush()
        self.db.compact_range()

    def close(self) -> None:
        self.db.close()


class RocksEngine:
    name = "rocksdict"

    def __init__(self, path: Path):
        import rocksdict as r

        self.r = r
        opt = r.Options(raw_mode=True)
        opt.create_if_missing(True)
        opt.set_write_buffer_size(MEMTABLE)
        opt.set_max_write_buffer_number(2)
        opt.set_compression_type(r.DBCompressionType.none())  # cairn does not compress
        t = r.BlockBasedOptions()
        t.set_block_cache(r.Cache(CACHE))
        t.set_bloom_filter(BLOOM_BITS, False)
        opt.set_block_based_table_factory(t)
        self.db = r.Rdict(str(path), opt)

    def put(self, k: bytes, v: bytes) -> None:
        self.db[k] = v

    def get(self, k: bytes) -> bytes | None:
        return self.db.get(k)

    def write_batch(self, pairs: list[tuple[bytes, bytes]]) -> None:
        b = self.r.WriteBatch(raw_mode=True)
        for k, v in pairs:
            b.put(k, v)
        self.db.write(b)

    def scan(self) -> int:
        return sum(1 for _ in self.db.items())

    def settle(self) -> None:
        self.db.flush()
        self.db.compact_range(None, None)

    def close(self) -> None:
        self.db.close()


def timed(f: Callable[[], Any], ops: int) -> float:
    t = time.perf_counter()
    f()
    return ops / (time.perf_counter() - t)


def run_engine(cls, keys: list[bytes], value: bytes, misses: list[bytes], batch: int) -> dict[str, float]:
    out: dict[str, float] = {}
    root = Path(tempfile.mkdtemp(prefix=f"bench-{cls.name}-"))
    try:
        e = cls(root / "fill")
        out["fillrandom"] = timed(lambda: [e.put(k, value) for k in keys], len(keys))
        e.close()

        e = cls(root / "batch")
        chunks = [[(k, value) for k in keys[i : i + batch]] for i in range(0, len(keys), batch)]
        out[f"fillbatch ({batch})"] = timed(lambda: [e.write_batch(c) for c in chunks], len(keys))
        e.settle()
        probe = keys[:]
        random.Random(1).shuffle(probe)
        out["readrandom"] = timed(lambda: [e.get(k) for k in probe], len(probe))
        out["readmissing"] = timed(lambda: [e.get(k) for k in misses], len(misses))
        out["scan (items)"] = timed(e.scan, len(keys))
        e.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--allow-debug", action="store_true", help="run on a debug build of cairn._native")
    args = ap.parse_args()
    import cairn._native

    if cairn._native.build_profile != "release" and not args.allow_debug:
        raise SystemExit(
            "cairn._native is a debug build; timings would mean nothing. Build it with "
            "'maturin develop --release' in python/ (scripts/python-bench.sh does), or pass --allow-debug."
        )

    rng = random.Random(args.seed)
    ids = rng.sample(range(args.keys * 4), args.keys * 2)
    keys = [b"%016d" % i for i in ids[: args.keys]]
    misses = [b"%016d" % i for i in ids[args.keys :]]
    value = bytes(rng.randrange(256) for _ in range(args.value_size))

    engines = [CairnEngine, RocksEngine]
    runs: dict[str, dict[str, list[float]]] = {e.name: {} for e in engines}
    for r in range(args.repeat):
        order = engines if r % 2 == 0 else engines[::-1]
        for cls in order:
            for w, ops in run_engine(cls, keys, value, misses, args.batch).items():
                runs[cls.name].setdefault(w, []).append(ops)

    workloads = list(runs["cairn"])
    print(f"{args.keys} keys of 16 bytes, {args.value_size}-byte values, {args.repeat} runs (order alternated)")
    print("| workload | cairn ops/s (median, range) | rocksdict ops/s (median, range) | cairn / rocksdict |")
    print("|---|---|---|---|")
    summary = {}
    for w in workloads:
        c, rk = runs["cairn"][w], runs["rocksdict"][w]
        mc, mr = statistics.median(c), statistics.median(rk)
        summary[w] = {"cairn": c, "rocksdict": rk, "ratio": mc / mr}
        print(
            f"| {w} | {mc:,.0f} ({min(c):,.0f}-{max(c):,.0f}) | {mr:,.0f} ({min(rk):,.0f}-{max(rk):,.0f}) "
            f"| {mc / mr:.2f}x |"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "results": summary}, indent=2))


if __name__ == "__main__":
    main()
