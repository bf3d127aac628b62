"""The offered rate of SA-LSM's open-loop replay (scripts/sa-lsm-bench.sh).

Reads a seed's closed-loop compare directory and prints the rate, in ops per second,
at which sa-gbdt-naive's busiest device would be busy LOAD of the time: its device time
(foreground and background) per measured op, from the run's virtual-clock report.

    python scripts/salsm_open_rate.py DIR LOAD
"""

import json
import pathlib
import sys

REFERENCE = "cairn:sa-gbdt-naive"


def device_ns_per_op(run):
    ops = run["ops"]
    report = run["virtual_clock"]
    devices = report.get("run", report)["measured"]["devices"]
    busy = [
        sum(t["service_ns"] for t in d["foreground"] + d["background"]) for d in devices
    ]
    return max(busy) / ops


def main():
    directory, load = pathlib.Path(sys.argv[1]), float(sys.argv[2])
    if not 0 < load < 1:
        sys.exit("LOAD must be within (0, 1)")
    for stem in (directory / "runs.list").read_text().split():
        run = json.loads((directory / f"{stem}.json").read_text())
        if run["engine"] == REFERENCE:
            print(f"{load * 1e9 / device_ns_per_op(run):.1f}")
            return
    sys.exit(f"no {REFERENCE} run in {directory} (the open loop's rate is set from it)")


if __name__ == "__main__":
    main()
