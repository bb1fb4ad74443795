#!/usr/bin/env python3
"""The table of benches/trino-tpcds.sh: every (client, store, data, mode) run against Trino
without pushdown reading the uncompressed text from Ceph RGW, the benchmark's baseline.

    benches/trino-tpcds-table.py DIR

DIR holds runs.tsv (one line per run: the CPU seconds of radosgw, the OSD, the Sift gateway
and the client during it, and the bytes the client namespace received on the veth) and one
run directory per line, named RUN-MODE, in `sift tpcds run`'s layout. Rows: a `sift tpcds
run` is compared with sift-fetch by the order-independent checksum it records; a Trino run
was compared with sift-fetch's rows by `sift tpcds trino-run --compare-with`, whose
summary.json lists what differs. Speedups are per query (the reference's seconds over the
run's, queries that failed in either left out), summarised as geomean and max. The exit
status is 1 when a run expected to be correct differs; RGW's own select over gzipped text is
not (RGW ignores CompressionType: docs/trino.md), and its differences are only counted.
Standard library only.
"""

import csv
import json
import math
import sys
from pathlib import Path

REFERENCE = "trino-rgw-text-fetch"
ROWS_REFERENCE = "sift-fetch"
# run name -> (client, store, data)
RUNS = {
    "trino-rgw-text": ("Trino", "Ceph RGW", "text"),
    "trino-rgw-gzip": ("Trino", "Ceph RGW", "gzip"),
    "trino-sift-upstream-gzip": ("Trino", "Sift in front of that RGW", "gzip"),
    "trino-sift-store-gzip": ("Trino", "Sift's store", "gzip"),
    "sift": ("sift tpcds run", "Sift's store", "text"),
}
# Runs whose rows are not expected to be right, with why.
EXPECTED_WRONG = {
    "trino-rgw-gzip-pushdown": "RGW reads gzipped objects as text (docs/trino.md)",
}


def results(directory):
    with open(directory / "results.json") as f:
        return {r["query"]: r for r in json.load(f)}


def logged_queries(log):
    """Queries a `trino-run --verbose`-style log reports, and how many of them failed."""
    done = failed = 0
    if log.exists():
        for line in log.read_text().splitlines():
            if line.startswith("trino "):
                done += 1
                # An error is written after the row count.
                failed += bool(line.split(" rows", 1)[-1].strip())
    return done, failed


def rows_verdict(root, name, these, reference):
    """How the run's rows compare with sift-fetch's: (text, number that differ)."""
    summary_path = root / name / "summary.json"
    summary = json.loads(summary_path.read_text())
    if "differences" in summary:  # a trino-run directory
        differ = len(summary["differences"])
        known = len(summary["known_differences"])
        if differ:
            return f"{differ} differ", differ
        return ("equal" + (f" ({known} known difference)" if known else "")), 0
    differ = [
        q
        for q, ref in reference.items()
        if q not in these or these[q]["checksum"] != ref["checksum"]
    ]
    return ("equal" if not differ else f"{len(differ)} differ: {', '.join(differ)}"), len(differ)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: trino-tpcds-table.py DIR")
    root = Path(sys.argv[1])
    with open(root / "runs.tsv") as f:
        runs = list(csv.DictReader(f, delimiter="\t"))
    reference = results(root / REFERENCE)
    rows_reference = results(root / ROWS_REFERENCE)
    header = [
        "client",
        "store",
        "data",
        "pushdown",
        "time",
        "received on the link",
        "speedup vs Trino without pushdown (geomean)",
        "max",
        "radosgw CPU s",
        "OSD CPU s",
        "Sift CPU s",
        "client CPU s",
        "rows vs sift fetch",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    wrong = []
    for run in runs:
        name = f"{run['run']}-{run['mode']}"
        if not (root / name / "results.json").exists():
            # A run stopped before it wrote its results: what its log shows.
            client, store, data = RUNS.get(run["run"], (run["run"], "?", "?"))
            done, failed = logged_queries(root / f"{name}.log")
            print(
                f"| {client} | {store} | {data} | {run['mode']} | stopped after {done} "
                f"queries, {failed} failed | {int(run['link_bytes']) / 1e9:.2f} GB | — | — | "
                f"{run['radosgw_cpu_s']} | {run['osd_cpu_s']} | {run['sift_cpu_s']} | "
                f"{run['client_cpu_s']} | {EXPECTED_WRONG.get(name, 'no results')} |"
            )
            if name not in EXPECTED_WRONG:
                wrong.append(f"{name} (no results)")
            continue
        these = results(root / name)
        speedups = [
            (ref["seconds"] / these[q]["seconds"], q)
            for q, ref in reference.items()
            if q in these
            and not ref.get("error")
            and not these[q].get("error")
            and ref["seconds"] > 0
            and these[q]["seconds"] > 0
        ]
        verdict, differ = rows_verdict(root, name, these, rows_reference)
        if differ and name not in EXPECTED_WRONG:
            wrong.append(name)
        if name in EXPECTED_WRONG:
            verdict += f" ({EXPECTED_WRONG[name]})"
        client, store, data = RUNS.get(run["run"], (run["run"], "?", "?"))
        # No speedup for the reference itself, nor for a run whose every query failed.
        no_speedup = name == REFERENCE or not speedups
        if not no_speedup:
            geomean = math.exp(sum(math.log(s) for s, _ in speedups) / len(speedups))
            best = max(speedups)
        print(
            "| "
            + " | ".join(
                [
                    client,
                    store,
                    data,
                    run["mode"] if client != "Trino" else ("on" if run["mode"] == "pushdown" else "off"),
                    f"{sum(r['seconds'] for r in these.values()):.1f} s",
                    f"{int(run['link_bytes']) / 1e9:.2f} GB",
                    "—" if no_speedup else f"{geomean:.2f}×",
                    "—" if no_speedup else f"{best[0]:.1f}× ({best[1]})",
                    run["radosgw_cpu_s"],
                    run["osd_cpu_s"],
                    run["sift_cpu_s"],
                    run["client_cpu_s"],
                    verdict,
                ]
            )
            + " |"
        )
    print()
    if wrong:
        print(f"Rows differ from sift fetch's: {', '.join(wrong)}")
        sys.exit(1)
    print(f"Every run's rows equal sift fetch's ({len(rows_reference)} queries), but where said.")


if __name__ == "__main__":
    main()
