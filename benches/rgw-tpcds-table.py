#!/usr/bin/env python3
"""The table of benches/rgw-tpcds.sh: each (store, mode) run against fetch from RGW.

    benches/rgw-tpcds-table.py DIR

DIR holds one `sift tpcds run --out` directory per run, named STORE-MODE, and cpu.tsv (the
CPU seconds of radosgw, the OSD and the Sift gateway during each run). Every run's rows must
equal the reference's (rgw-fetch) query by query, by the order-independent checksum
`sift tpcds run` records; the queries that differ are listed and the exit status is 1.
Speedups are per query (the reference's seconds over the run's), summarised as geomean and
max. Standard library only.
"""

import csv
import json
import math
import sys
from pathlib import Path

REFERENCE = "rgw-fetch"
LABELS = {
    "rgw": "Ceph RGW's own S3 Select",
    "sift-upstream": "Sift in front of that RGW",
    "sift-embedded": "Sift's embedded store",
}


def results(directory):
    with open(directory / "results.json") as f:
        return {r["query"]: r for r in json.load(f)}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: rgw-tpcds-table.py DIR")
    root = Path(sys.argv[1])
    with open(root / "cpu.tsv") as f:
        cpu = list(csv.DictReader(f, delimiter="\t"))
    reference = results(root / REFERENCE)
    rows = []
    differing = []
    for run in cpu:
        name = f"{run['store']}-{run['mode']}"
        these = results(root / name)
        speedups = []
        for query, ref in reference.items():
            mine = these.get(query)
            if mine is None or mine["checksum"] != ref["checksum"]:
                differing.append(f"{query} ({name})")
                continue
            if mine["seconds"] > 0 and ref["seconds"] > 0:
                speedups.append((ref["seconds"] / mine["seconds"], query))
        seconds = sum(r["seconds"] for r in these.values())
        received = sum(r["bytes_received"] for r in these.values())
        fetched = sum(r["bytes_received"] for r in reference.values())
        geomean = math.exp(sum(math.log(s) for s, _ in speedups) / len(speedups))
        best = max(speedups)
        rows.append(
            [
                LABELS.get(run["store"], run["store"]),
                run["mode"],
                f"{seconds:.1f} s",
                f"{received / 1e9:.2f} GB",
                "—" if name == REFERENCE else f"{geomean:.2f}×",
                "—" if name == REFERENCE else f"{best[0]:.1f}× ({best[1]})",
                "—" if name == REFERENCE else f"{100 * (received / fetched - 1):+.1f}%",
                run["radosgw_cpu_s"],
                run["osd_cpu_s"],
                run["sift_cpu_s"] if run["store"] != "rgw" else "—",
            ]
        )
    header = [
        "store",
        "mode",
        "time",
        "received",
        "speedup vs fetch from RGW (geomean)",
        "max",
        "bytes vs fetch",
        "radosgw CPU s",
        "OSD CPU s",
        "Sift CPU s",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    if differing:
        print(f"Rows differ from fetch from RGW: {', '.join(differing)}")
        sys.exit(1)
    print(f"Every run's rows equal fetch from RGW's ({len(reference)} queries).")


if __name__ == "__main__":
    main()
