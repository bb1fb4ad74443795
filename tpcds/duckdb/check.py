#!/usr/bin/env python3
"""Checks Sift's TPC-DS query results against DuckDB, an independent reference engine.

Usage:
    check.py --data DATA --rows RUN/rows/fetch [--queries 1,2,5-9|all] [--report OUT.md]
    check.py --plan-only [--queries ...]     # EXPLAIN every statement on empty tables

DATA is what `sift tpcds gen --out DATA` wrote (`DATA/<table>/part-NNNNN.dat`, dsdgen flat
files); RUN/rows/<mode> is what `sift tpcds run --out RUN` wrote (`qN.txt`, or `qN_1.txt` and
`qN_2.txt` for the two-statement queries). The tables' columns come from `tpcds-data/src/schema.rs`
and the queries from `tpcds/queries/qN.sql`, so nothing here repeats them.

Each statement runs in DuckDB, its rows are printed the way Sift prints them, and the two
results are compared as multisets of rows (row order is ignored): field by field, numbers
with a relative tolerance (the engines give aggregates different types), everything else
exactly. Exit status: 0 if every checked statement matched (or had no Sift file), 1 if any
differed or failed in DuckDB, 2 for bad arguments or inputs.
"""

import argparse
import math
import re
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import duckdb

SIFT_TPCDS = Path(__file__).resolve().parent.parent  # .../tpcds
SCHEMA_RS = SIFT_TPCDS.parent / "tpcds-data" / "src" / "schema.rs"
QUERIES_DIR = SIFT_TPCDS / "queries"

# Per-query text fixes DuckDB needs; each is (query, old, new, why). `old` must occur in the
# query file (checked at start-up, so a stale fix is noticed). Keep them minimal: they must
# not change what a query computes.
QUERY_FIXES = [
    # RETURNS is a keyword in DuckDB's grammar (CREATE FUNCTION ... RETURNS). DuckDB 2.0.1 parses
    # q77 as it is, but DuckDB 1.x rejects `coalesce(returns, 0) returns` (an alias without AS);
    # the aliases are quoted so that the fix holds for either. The unquoted references
    # (sum(returns), coalesce(returns, 0)) resolve to the quoted alias unchanged.
    (77, "as returns", 'as "returns"', "RETURNS is a keyword in DuckDB; the alias is quoted"),
    (77, "coalesce(returns, 0) returns", 'coalesce(returns, 0) "returns"',
     "the same alias without AS, which DuckDB 1.x cannot parse; quoted"),
    # AT is a reserved keyword in DuckDB (AT TIME ZONE), so `(subquery) at` is a syntax error.
    (90, "5200) at,", '5200) "at",', "AT is a reserved keyword in DuckDB; the alias is quoted"),
]

# DuckDB settings that make it compute what DataFusion (Sift's engine) computes.
SETTINGS = [
    # DataFusion divides two integers as integers (truncating); DuckDB's `/` would give a DOUBLE.
    "SET integer_division = true",
    # DataFusion's default null ordering ("nulls_max") sorts NULLs last when ascending and first
    # when descending (as PostgreSQL does); DuckDB's default is NULLS LAST both ways. This matters
    # for ORDER BY ... LIMIT and for rank() over (order by ... desc).
    "SET default_null_order = 'nulls_last_on_asc_first_on_desc'",
]

DUCKDB_TYPES = {"Integer": "INTEGER", "Date": "DATE", "Time": "VARCHAR", "Char": "VARCHAR",
                "Varchar": "VARCHAR"}
TRAILING = "sift_trailing_empty_field"  # the empty field after each line's last `|`
ROWS_SHOWN = 5  # differing rows printed per statement


# ---------------------------------------------------------------------------------------------
# Inputs: schema, queries, statements

def die(message):
    print(f"check.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_schema(path=SCHEMA_RS):
    """[(table, [(column, duckdb_type), ...]), ...] parsed from Sift's schema.rs."""
    text = path.read_text()
    tables = []
    table_re = re.compile(r'TableSchema\s*\{\s*name:\s*"(\w+)",\s*columns:\s*&\[(.*?)\]\s*,\s*\}', re.S)
    column_re = re.compile(
        r'\(\s*"(\w+)"\s*,\s*(Integer|Date|Time|Decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)|'
        r'(?:Char|Varchar)\(\s*\d+\s*\))\s*\)')
    for match in table_re.finditer(text):
        name, body = match.group(1), match.group(2)
        columns = []
        for column in column_re.finditer(body):
            kind = column.group(2)
            if kind.startswith("Decimal"):
                sql_type = f"DECIMAL({column.group(3)},{column.group(4)})"
            else:
                sql_type = DUCKDB_TYPES[kind.split("(")[0]]
            columns.append((column.group(1), sql_type))
        # Every `("name", Type)` pair must have been understood.
        if len(columns) != len(re.findall(r'\(\s*"\w+"\s*,', body)):
            die(f"cannot parse the columns of {name} in {path}")
        tables.append((name, columns))
    if len(tables) != 24:
        die(f"expected 24 tables in {path}, found {len(tables)}")
    return tables


def statements(sql):
    """Splits a query file like Sift does (tpcds/src/queries.rs): `;` ends a statement unless
    inside a string literal or a `--` comment; comments are dropped, empty statements skipped."""
    out, current, in_string, i = [], [], False, 0
    while i < len(sql):
        c = sql[i]
        if in_string:
            current.append(c)
            if c == "'":
                in_string = False
        elif c == "'":
            in_string = True
            current.append(c)
        elif c == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            if end < 0:
                break
            current.append("\n")
            i = end
        elif c == ";":
            statement = "".join(current).strip()
            if statement:
                out.append(statement)
            current = []
        else:
            current.append(c)
        i += 1
    statement = "".join(current).strip()
    if statement:
        out.append(statement)
    return out


def query_statements(n):
    """[(label, sql), ...] for query n, with the DuckDB fixes applied."""
    sql = (QUERIES_DIR / f"q{n}.sql").read_text()
    for query, old, new, _ in QUERY_FIXES:
        if query == n:
            if old not in sql:
                die(f"fix for q{n} no longer applies: {old!r} not in the file")
            sql = sql.replace(old, new)
    parts = statements(sql)
    if len(parts) == 1:
        return [(f"q{n}", parts[0])]
    return [(f"q{n}_{i + 1}", part) for i, part in enumerate(parts)]


def parse_set(spec):
    if spec.strip() == "all":
        return list(range(1, 100))
    out = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        lo, _, hi = item.lstrip("qQ").partition("-")
        try:
            lo, hi = int(lo), int(hi.lstrip("qQ") or lo)
        except ValueError:
            die(f"bad query list item {item!r}: expected all or e.g. 3,7,10-12")
        if not 1 <= lo <= hi <= 99:
            die(f"bad query list item {item!r}: numbers must be 1-99")
        out.extend(n for n in range(lo, hi + 1) if n not in out)
    if not out:
        die(f"empty query list {spec!r}")
    return out


# ---------------------------------------------------------------------------------------------
# DuckDB

def columns_sql(columns):
    return "{" + ", ".join(f"'{name}': '{sql_type}'" for name, sql_type in columns) + "}"


def load_tables(con, schema, data):
    """One DuckDB table per TPC-DS table, loaded from DATA/<table>/part-*.dat (or empty)."""
    total = time.time()
    for name, columns in schema:
        if data and not (data / name).is_dir():
            die(f"no directory {data / name} (is {data} the --out of `sift tpcds gen`?)")
        files = sorted((data / name).glob("part-*.dat")) if data else []
        if not files:
            if data:
                print(f"warning: no {data / name}/part-*.dat; {name} is empty", file=sys.stderr)
            ddl = ", ".join(f"{c} {t}" for c, t in columns)
            con.execute(f"CREATE OR REPLACE TABLE {name} ({ddl})")
            continue
        started = time.time()
        pattern = str(data / name / "part-*.dat").replace("'", "''")
        # dsdgen ends every line with `|`, which reads as one more (always empty) field: it is
        # declared as an extra VARCHAR column, checked to be empty, and dropped. quote='' and
        # escape='': dsdgen does not quote, so a `"` in a value is data. nullstr='': an empty
        # field is NULL whatever the column's type. auto_detect=false: types come from schema.rs.
        try:
            con.execute(
                f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM read_csv('{pattern}', delim='|', "
                f"header=false, auto_detect=false, quote='', escape='', nullstr='', new_line='\\n', "
                f"columns={columns_sql(columns + [(TRAILING, 'VARCHAR')])})")
        except duckdb.Error as e:
            die(f"cannot load {data / name}: {e}")
        rows, stray = con.execute(
            f"SELECT count(*), count({TRAILING}) FROM {name}").fetchone()
        if stray:
            die(f"{stray} line(s) of {data / name} have a field after the last column "
                f"{columns[-1][0]}")
        con.execute(f"ALTER TABLE {name} DROP COLUMN {TRAILING}")
        print(f"loaded {name}: {rows} rows from {len(files)} file(s) in {time.time() - started:.1f} s",
              file=sys.stderr)
    print(f"loaded all tables in {time.time() - total:.1f} s", file=sys.stderr)


def run(con, sql, timeout):
    timer = None
    if timeout:
        timer = threading.Timer(timeout, con.interrupt)
        timer.start()
    try:
        return con.execute(sql).fetchall()
    finally:
        if timer:
            timer.cancel()


# ---------------------------------------------------------------------------------------------
# Formatting (as Sift's rows_text in tpcds/src/run.rs) and comparison

def rust_float(value):
    """A float the way Sift prints it: rounded to 12 significant digits, then Rust's `{}` for
    f64 (shortest round-trip digits, never an exponent, no `.0` on whole numbers)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    value = float(f"{value:.11e}")
    text = format(Decimal(repr(value)), "f")
    if text.endswith(".0"):
        text = text[:-2]
    return text


def format_value(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return rust_float(value)
    if isinstance(value, Decimal):
        return format(value, "f")  # keeps the scale, never an exponent: 12.50, 0.000000
    if hasattr(value, "isoformat"):
        return value.isoformat()  # date: 2001-01-02; timestamp: 2001-01-02T00:00:00 (as Arrow)
    return str(value)


NUMBER_RE = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|-?inf|NaN")
INTEGER_RE = re.compile(r"-?\d+")


def as_number(text):
    return float(text) if NUMBER_RE.fullmatch(text) else None


def fields_equal(a, b):
    if a == b:
        return True
    if INTEGER_RE.fullmatch(a) and INTEGER_RE.fullmatch(b):
        return False  # integers exactly, as text
    x, y = as_number(a), as_number(b)
    if x is None or y is None:
        return False  # strings (and NULL, printed empty) exactly
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= 1e-6 * max(1.0, abs(x), abs(y))


def rows_equal(a, b):
    return len(a) == len(b) and all(fields_equal(x, y) for x, y in zip(a, b))


def sort_key(row):
    """Numbers rounded to 6 significant digits (so that both engines' renderings of one value
    sort alike), then the numbers at full precision as a tie-break."""
    coarse, fine = [], []
    for field in row:
        x = as_number(field)
        if x is None or math.isnan(x):
            coarse.append((1, field))
            fine.append(0.0)
        else:
            coarse.append((0, float(f"{x:.5e}")) if not math.isinf(x) else (0, x))
            fine.append(x)
    return (tuple(coarse), tuple(fine))


def compare(sift_rows, duck_rows):
    """Returns ([(sift_row or None, duck_row or None), ...] differences) for two multisets."""
    sift = sorted(sift_rows, key=sort_key)
    duck = sorted(duck_rows, key=sort_key)
    left, right = [], []
    for i in range(max(len(sift), len(duck))):
        a = sift[i] if i < len(sift) else None
        b = duck[i] if i < len(duck) else None
        if a is None or b is None or not rows_equal(a, b):
            if a is not None:
                left.append(a)
            if b is not None:
                right.append(b)
    if not left and not right:
        return []
    # Sorting by rounded keys can misalign rows (a value near a rounding boundary, or a row
    # missing on one side shifts all after it): pair what is left by searching, unless huge.
    if len(left) * len(right) <= 4_000_000:
        unmatched = []
        for a in left:
            for j, b in enumerate(right):
                if rows_equal(a, b):
                    del right[j]
                    break
            else:
                unmatched.append(a)
        left = unmatched
    differences = []
    for i in range(max(len(left), len(right))):
        differences.append((left[i] if i < len(left) else None, right[i] if i < len(right) else None))
    return differences


def read_sift_rows(path):
    text = path.read_text()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [tuple(line.split("|")) for line in lines]


# ---------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="directory written by `sift tpcds gen --out`")
    parser.add_argument("--rows", type=Path, help="RUN/rows/<mode> written by `sift tpcds run --out RUN`")
    parser.add_argument("--queries", default="all", help="all, or a list such as 1,2,5-9 (default all)")
    parser.add_argument("--report", type=Path, help="also write the results as Markdown to this file")
    parser.add_argument("--db", type=Path,
                        help="DuckDB database file to load the tables into (default: in memory; a "
                             "file suits scale factors larger than memory). Its tables are replaced.")
    parser.add_argument("--timeout", type=float, default=0, help="seconds per statement (default none)")
    parser.add_argument("--plan-only", action="store_true",
                        help="create the 24 tables empty and EXPLAIN every statement (no --data/--rows)")
    args = parser.parse_args()
    if not args.plan_only and (args.data is None or args.rows is None):
        parser.error("--data and --rows are required (unless --plan-only)")
    if args.data is not None and not args.data.is_dir():
        parser.error(f"--data {args.data}: not a directory")
    if args.rows is not None and not args.rows.is_dir():
        parser.error(f"--rows {args.rows}: not a directory")

    schema = read_schema()
    queries = parse_set(args.queries)
    work = [(n, label, sql) for n in queries for label, sql in query_statements(n)]

    con = duckdb.connect(str(args.db) if args.db and not args.plan_only else ":memory:")
    for setting in SETTINGS:
        con.execute(setting)
    load_tables(con, schema, None if args.plan_only else args.data)

    if args.plan_only:
        # Each statement is planned and also run on the empty tables (that binds everything a
        # plan may leave to execution). q90 divides by count(*), 0 on empty tables: DuckDB 2
        # raises an error for that by default, so here (only) division by zero gives NULL.
        try:
            con.execute("SET error_on_division_by_zero = false")
        except duckdb.Error:
            pass  # DuckDB 1.x: division by zero is NULL anyway
        failed = 0
        for n, label, sql in work:
            try:
                con.execute("EXPLAIN " + sql).fetchall()
                con.execute(sql).fetchall()
                print(f"{label} plans")
            except duckdb.Error as e:
                failed += 1
                print(f"{label} DUCKDB-ERROR {str(e).splitlines()[0]}")
        print(f"{len(work)} statements, {failed} failed to plan in DuckDB {duckdb.__version__}")
        return 1 if failed else 0

    results = []  # (label, status, sift_rows, duck_rows, detail, differences)
    for n, label, sql in work:
        path = args.rows / f"{label}.txt"
        started = time.time()
        try:
            raw = run(con, sql, args.timeout)
        except duckdb.Error as e:
            message = str(e).splitlines()[0] if str(e) else type(e).__name__
            if isinstance(e, duckdb.InterruptException):
                message = f"timed out after {args.timeout:g} s"
            results.append((label, "DUCKDB-ERROR", None, None, message, []))
            print(f"{label} DUCKDB-ERROR {message}", flush=True)
            continue
        seconds = time.time() - started
        duck = [tuple(format_value(v) for v in row) for row in raw]
        if not path.is_file():
            results.append((label, "MISSING", None, len(duck), "no Sift rows file", []))
            print(f"{label} MISSING (no Sift rows file {path})", flush=True)
            continue
        sift = read_sift_rows(path)
        differences = compare(sift, duck)
        if not differences:
            results.append((label, "ok", len(sift), len(duck), "", []))
            print(f"{label} ok {len(sift)} rows ({seconds:.1f} s in DuckDB)", flush=True)
        else:
            detail = (f"Sift {len(sift)} rows, DuckDB {len(duck)} rows, "
                      f"{sum(a is not None for a, _ in differences)} Sift rows unmatched, "
                      f"{sum(b is not None for _, b in differences)} DuckDB rows unmatched")
            results.append((label, "MISMATCH", len(sift), len(duck), detail, differences))
            print(f"{label} MISMATCH {detail}", flush=True)
            for a, b in differences[:ROWS_SHOWN]:
                print(f"    sift:   {'|'.join(a) if a is not None else '(none)'}")
                print(f"    duckdb: {'|'.join(b) if b is not None else '(none)'}")

    counts = {}
    for r in results:
        counts[r[1]] = counts.get(r[1], 0) + 1
    summary = ", ".join(f"{counts.get(s, 0)} {s}" for s in ("ok", "MISMATCH", "DUCKDB-ERROR", "MISSING"))
    empty = [r[0] for r in results if r[3] == 0]
    print(f"{len(results)} statements: {summary}")
    print(f"statements with no rows in DuckDB: {', '.join(empty) if empty else 'none'}")

    if args.report:
        write_report(args, results, summary, empty)
    return 1 if counts.get("MISMATCH") or counts.get("DUCKDB-ERROR") else 0


def write_report(args, results, summary, empty):
    def cell(text):
        return str(text).replace("|", "\\|").replace("\n", " ")

    out = ["# Sift TPC-DS results checked against DuckDB", "",
           f"- DuckDB {duckdb.__version__}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
           f"- data: `{args.data.resolve()}`", f"- Sift rows: `{args.rows.resolve()}`",
           f"- {len(results)} statements: {summary}",
           f"- statements with no rows in DuckDB: {', '.join(empty) if empty else 'none'}", "",
           "Rows are compared as multisets; numbers with a relative tolerance of 1e-6 "
           "(integers and strings exactly).", "",
           "| statement | result | Sift rows | DuckDB rows | detail |",
           "|---|---|---:|---:|---|"]
    for label, status, sift, duck, detail, _ in results:
        out.append(f"| {label} | {status} | {'' if sift is None else sift} | "
                   f"{'' if duck is None else duck} | {cell(detail)} |")
    for label, status, _, _, detail, differences in results:
        if differences:
            out += ["", f"## {label}: first differing rows", "", "```"]
            for a, b in differences[:ROWS_SHOWN]:
                out.append(f"sift:   {'|'.join(a) if a is not None else '(none)'}")
                out.append(f"duckdb: {'|'.join(b) if b is not None else '(none)'}")
            out.append("```")
    out += ["", "## DuckDB settings", ""] + [f"- `{setting}`" for setting in SETTINGS]
    if QUERY_FIXES:
        out += ["", "## DuckDB-specific query fixes", ""]
        out += [f"- q{n}: `{old.strip()}` → `{new.strip()}`: {why}" for n, old, new, why in QUERY_FIXES]
    args.report.write_text("\n".join(out) + "\n")
    print(f"wrote {args.report}")


if __name__ == "__main__":
    sys.exit(main())
