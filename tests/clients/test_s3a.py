"""Hadoop's S3A connector (hadoop-aws 3.3.6, the last line with S3 Select) selecting from the
gateway through `FileSystem.openFile()` with its `fs.s3a.select.*` options: CSV with and
without a header, gzipped input, another field delimiter, projections and filters. Every answer
must equal `sift select` on the same local file with the same options, byte for byte.

tests/clients/java/s3a/S3aSelect.java is compiled once per run into a temporary directory;
Maven resolves hadoop-aws and its AWS SDK v1 into its local repository, outside the clone.
When Java or those jars are missing, the tests are SKIPPED with the reason."""

from __future__ import annotations

import gzip
import os
import subprocess
import uuid

import pytest

from conftest import REPO, last_lines, maven_classpath

SOURCE = REPO / "tests" / "clients" / "java" / "s3a" / "S3aSelect.java"

PEOPLE = (b'name,age,city\nalice,30,paris\nbob,42,"new york"\ncarol,25,rome\n'
          b'dan,,"quoted ""word"""\n# a comment line S3A asks to skip\neve,35,\n')


def sales() -> bytes:
    """A TPC-DS-shaped table: `|`-separated, no header, empty fields for NULL."""
    rows = []
    for i in range(5000):
        price = "" if i % 97 == 0 else f"{(i * 37) % 20000 / 100:.2f}"
        rows.append(f"{2450816 + i % 365}|{i}|{i % 100}|{(i * 7) % 13}|{price}|store {i % 9}\n")
    return "".join(rows).encode()


OBJECTS = {
    "people.csv": PEOPLE,
    "people.csv.gz": gzip.compress(PEOPLE),
    "sales.dat": sales(),
}

# S3A's select options and the `sift select` flags that mean the same.
SIFT_FLAG = {
    "fs.s3a.select.input.csv.header": "--header",
    "fs.s3a.select.input.compression": "--compression",
    "fs.s3a.select.input.csv.field.delimiter": "--field-delimiter",
    "fs.s3a.select.input.csv.quote.escape.character": "--quote-escape",
    "fs.s3a.select.output.csv.quote.fields": "--quote-fields",
    "fs.s3a.select.output.csv.quote.escape.character": "--output-quote-escape",
}
# What S3A sends when an option is not given, spelt out for `sift select`, whose own defaults
# differ. These are Hadoop's core-default.xml values, which win over the different constants
# in S3A's SelectConstants (header "ignore", output escape "").
S3A_DEFAULTS = {
    "fs.s3a.select.input.csv.header": "none",
    "fs.s3a.select.input.csv.quote.escape.character": "\\",
    "fs.s3a.select.output.csv.quote.fields": "always",
    "fs.s3a.select.output.csv.quote.escape.character": "\\",
}

CASES = [
    ("header_use_filter", "people.csv",
     "SELECT s.name, s.city FROM S3Object s WHERE s.city <> 'rome'",
     {"fs.s3a.select.input.csv.header": "use"}),
    ("header_ignore_positional", "people.csv",
     "SELECT s._1, s._3 FROM S3Object s WHERE s._2 <> ''",
     {"fs.s3a.select.input.csv.header": "ignore"}),
    ("header_none_by_default_counts_it_as_a_row", "people.csv",
     "SELECT COUNT(*) FROM S3Object", {}),
    ("quotes_escaped_with_backslash_by_default", "people.csv",
     "SELECT s._3 FROM S3Object s WHERE s._1 = 'dan'", {}),
    ("gzip", "people.csv.gz",
     "SELECT s.name FROM S3Object s WHERE s.age <> '' AND CAST(s.age AS INT) >= 30",
     {"fs.s3a.select.input.csv.header": "use", "fs.s3a.select.input.compression": "gzip"}),
    ("pipe_delimited_range", "sales.dat",
     "SELECT s._2, s._5 FROM S3Object s WHERE (case s._5 when '' then null else "
     "CAST(s._5 AS DECIMAL(7,2)) end >= 10.00 AND case s._5 when '' then null else "
     "CAST(s._5 AS DECIMAL(7,2)) end <= 20.00) AND s._4 IN ('1', '2', '3')",
     {"fs.s3a.select.input.csv.field.delimiter": "|",
      "fs.s3a.select.output.csv.quote.fields": "asneeded"}),
    ("pipe_delimited_aggregate", "sales.dat",
     "SELECT COUNT(*), SUM(CAST(s._3 AS INT)), MAX(s._6) FROM S3Object s WHERE s._5 = ''",
     {"fs.s3a.select.input.csv.field.delimiter": "|"}),
]


@pytest.fixture(scope="session")
def s3a(tmp_path_factory):
    """`java -cp … S3aSelect`, compiled once (so each case starts only a JVM)."""
    classpath = maven_classpath(REPO / "tests" / "clients" / "java" / "s3a" / "pom.xml")
    classes = tmp_path_factory.mktemp("s3a-classes")
    run = subprocess.run(["javac", "-d", str(classes), "-cp", classpath, str(SOURCE)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"javac {SOURCE.name}:\n{run.stderr}"
    return ["java", "-cp", f"{classes}{os.pathsep}{classpath}", "S3aSelect"]


@pytest.fixture(scope="session")
def s3a_bucket(s3, tmp_path_factory):
    """A bucket holding OBJECTS, and the same files on local disk for `sift select`."""
    bucket = f"s3a-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    local = tmp_path_factory.mktemp("s3a-objects")
    for key, data in OBJECTS.items():
        s3.put_object(Bucket=bucket, Key=key, Body=data)
        (local / key).write_bytes(data)
    return bucket, local


def run_s3a(s3a, gateway, url: str, sql: str, options: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, "SIFT_S3A_ENDPOINT": gateway.endpoint,
           "SIFT_S3A_ACCESS_KEY": gateway.access_key, "SIFT_S3A_SECRET_KEY": gateway.secret_key}
    return subprocess.run(s3a + [url, sql] + [f"{k}={v}" for k, v in options.items()],
                          env=env, capture_output=True, timeout=300)


@pytest.mark.parametrize("name,key,sql,options", CASES, ids=[c[0] for c in CASES])
def test_s3a_select_equals_sift_select(s3a, gateway, s3a_bucket, name, key, sql, options):
    bucket, local = s3a_bucket
    got = run_s3a(s3a, gateway, f"s3a://{bucket}/{key}", sql, options)
    assert got.returncode == 0, last_lines(got.stderr.decode(), 30)

    flags = []
    for option, value in {**S3A_DEFAULTS, **options}.items():
        flags += [SIFT_FLAG[option], value]
    want = subprocess.run([os.environ["SIFT_BIN"], "select", "--file", str(local / key), sql,
                           *flags], capture_output=True, timeout=300)
    assert want.returncode == 0, want.stderr.decode()
    assert want.stdout, "every case selects something"
    assert got.stdout == want.stdout


def test_s3a_select_error_names_the_s3_code(s3a, gateway, s3a_bucket):
    bucket, _ = s3a_bucket
    got = run_s3a(s3a, gateway, f"s3a://{bucket}/people.csv", "SELECT FROM S3Object", {})
    assert got.returncode == 1
    err = got.stderr.decode()
    assert "ParseEmptySelect" in err, last_lines(err, 30)
    # fs.s3a.select.errors.include.sql: S3A adds the statement to its message.
    assert "SELECT FROM S3Object" in err, last_lines(err, 30)
