"""The gateway as the AWS SDK for Java v2 and the AWS SDK for JavaScript v3 see it: CreateBucket,
PutObject, SelectObjectContent over CSV, gzipped CSV, JSON and Parquet with Stats and Progress,
results spanning many Records events, an error event after rows have arrived, errors before the
stream, and a presigned GET.

Each SDK runs one small program (tests/clients/java/sdk/SdkSelect.java, tests/clients/js/
sdk_select.cjs) over the same case file and writes down what it received; the tests here check
both against one list of expectations. The SDKs are installed outside the clone: the Java one by
Maven into its local repository, the JavaScript one by `npm ci` into ${SIFT_NODE_CLIENTS:-
/var/tmp/sift-node-clients}, both pinned (tests/clients/java/sdk/pom.xml, tests/clients/js/
package-lock.json). When an SDK cannot be installed, its tests are SKIPPED with the reason."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from conftest import REGION, REPO, last_lines, maven_classpath

HERE = Path(__file__).resolve().parent
# The gateway keeps each Records event below 128 KiB (docs/gateway.md).
MAX_RECORDS_PAYLOAD = 128 * 1024 - 256

PEOPLE = b'name,age,city\nalice,30,paris\nbob,42,"new york"\ncarol,25,rome\n'
PEOPLE_JSON = b"".join(json.dumps(r).encode() + b"\n" for r in [
    {"name": "alice", "age": 30, "city": "paris"},
    {"name": "bob", "age": 42, "city": "new york"},
    {"name": "carol", "age": 25, "city": "rome"},
])
BIG = "".join(f"{i},{i * 7 % 1000},{'x' * (i % 50)}\n" for i in range(40_000)).encode()


def late_error_csv() -> bytes:
    """More than one 4 MiB engine chunk of good rows, then a value the SQL cannot cast: the
    first rows are sent before the scan reaches it."""
    row = "padding padding padding padding"
    good = "".join(f"{i},{row}\n" for i in range(200_000)).encode()
    assert len(good) > 6 << 20
    return good + b"oops,bad\n"


def parquet() -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "id": pa.array(range(1, 7), pa.int32()),
        "name": pa.array(["ann", "bob", None, "dee", "éva", "fay"]),
        "price": pa.array([1.5, 20.0, 3.25, None, 99.5, 7.0], pa.float64()),
    })
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=4)
    return buf.getvalue()


OBJECTS = {
    "people.csv": lambda: PEOPLE,
    "people.csv.gz": lambda: gzip.compress(PEOPLE),
    "people.jsonl": lambda: PEOPLE_JSON,
    "t.parquet": parquet,
    "big.csv": lambda: BIG,
    "late.csv": late_error_csv,
}


@dataclasses.dataclass
class Case:
    """One select and what every SDK must receive: `records` (the Records payloads joined),
    or the error `code` with its HTTP `status` and whether rows came before it."""
    name: str
    key: str
    sql: str
    input: dict
    output: dict = dataclasses.field(default_factory=lambda: {"CSV": {}})
    progress: bool = False
    records: bytes | None = None
    code: str | None = None
    status: int | None = None
    rows_before_error: bool = False

    def spec(self) -> dict:
        return {"name": self.name, "key": self.key, "sql": self.sql, "input": self.input,
                "output": self.output, "progress": self.progress}


CASES = [
    Case("csv_header_filter", "people.csv",
         "SELECT name, age FROM S3Object WHERE CAST(age AS INT) > 26",
         {"CSV": {"FileHeaderInfo": "USE"}}, progress=True, records=b"alice,30\nbob,42\n"),
    Case("csv_positional_quoted", "people.csv", "SELECT s._3, s._1 FROM S3Object s",
         # The input's quotes are parsed away; ASNEEDED output quotes nothing here.
         {"CSV": {"FileHeaderInfo": "IGNORE"}},
         records=b"paris,alice\nnew york,bob\nrome,carol\n"),
    Case("csv_gzip", "people.csv.gz", "SELECT city FROM S3Object WHERE name <> 'bob'",
         {"CSV": {"FileHeaderInfo": "USE"}, "CompressionType": "GZIP"}, progress=True,
         records=b"paris\nrome\n"),
    Case("json_lines_to_json", "people.jsonl",
         "SELECT s.name, s.age FROM S3Object s WHERE s.age < 40",
         {"JSON": {"Type": "LINES"}}, {"JSON": {}},
         records=b'{"name":"alice","age":30}\n{"name":"carol","age":25}\n'),
    Case("parquet", "t.parquet",
         "SELECT s.id, s.name FROM S3Object s WHERE s.price > 5", {"Parquet": {}},
         progress=True, records="2,bob\n5,éva\n6,fay\n".encode()),
    Case("parquet_aggregate", "t.parquet",
         "SELECT COUNT(*), SUM(s.id), COUNT(s.price) FROM S3Object s", {"Parquet": {}},
         records=b"6,21,5\n"),
    Case("many_records_events", "big.csv", "SELECT * FROM S3Object", {"CSV": {}},
         records=BIG),
    Case("error_event_after_rows", "late.csv",
         "SELECT s._1 FROM S3Object s WHERE CAST(s._1 AS INT) % 1000 = 0", {"CSV": {}},
         code="CastFailed", rows_before_error=True),
    Case("bad_sql", "people.csv", "SELECT FROM S3Object", {"CSV": {}},
         code="ParseEmptySelect", status=400),
    Case("unknown_column", "people.csv", "SELECT nosuch FROM S3Object",
         {"CSV": {"FileHeaderInfo": "USE"}}, code="EvaluatorBindingDoesNotExist", status=400),
    Case("missing_key", "absent.csv", "SELECT * FROM S3Object", {"CSV": {}},
         code="NoSuchKey", status=404),
]


# --- installing and running the SDKs --------------------------------------------------------

def js_program() -> tuple[list[str], dict]:
    """Node runs the program with NODE_PATH at the node_modules `npm ci` installs from
    tests/clients/js/package-lock.json into ${SIFT_NODE_CLIENTS:-/var/tmp/sift-node-clients};
    a stamp of the lock file's hash skips npm when nothing changed."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.skip(f"the JavaScript SDK tests need {tool}, which is not on PATH")
    home = Path(os.environ.get("SIFT_NODE_CLIENTS", "/var/tmp/sift-node-clients"))
    if home.resolve().is_relative_to(REPO):
        pytest.fail(f"SIFT_NODE_CLIENTS={home} is inside the clone; put it outside")
    lock = (HERE / "js" / "package-lock.json").read_bytes()
    want = hashlib.sha256(lock + (HERE / "js" / "package.json").read_bytes()).hexdigest()
    stamp = home / ".sift-lock.sha256"
    if not (stamp.exists() and stamp.read_text() == want):
        home.mkdir(parents=True, exist_ok=True)
        stamp.unlink(missing_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(HERE / "js" / name, home / name)
        run = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=home,
                             capture_output=True, text=True, timeout=900)
        if run.returncode != 0:
            pytest.skip("npm ci of tests/clients/js/package-lock.json failed: "
                        + last_lines(run.stdout + run.stderr))
        stamp.write_text(want)
    return ["node", str(HERE / "js" / "sdk_select.cjs")], {"NODE_PATH": str(home / "node_modules")}


def java_program() -> tuple[list[str], dict]:
    """Java runs the program from source: nothing is compiled into the clone."""
    classpath = maven_classpath(HERE / "java" / "sdk" / "pom.xml")
    return ["java", "-cp", classpath, str(HERE / "java" / "sdk" / "SdkSelect.java")], {}


# Each SDK's program, as (command, extra environment); installing it may skip its tests.
SDKS = {"java-v2": java_program, "js-v3": js_program}


@pytest.fixture(scope="session")
def objects(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sdk-objects")
    files = {}
    for key, make in OBJECTS.items():
        files[key] = root / key
        files[key].write_bytes(make())
    return files


@pytest.fixture(scope="session", params=sorted(SDKS))
def sdk(request, gateway, objects, tmp_path_factory):
    """What one SDK received for every case: its answers file, and the bucket it made."""
    command, env = SDKS[request.param]()
    work = tmp_path_factory.mktemp(f"sdk-{request.param}")
    bucket = f"sdk-{request.param}-{uuid.uuid4().hex[:12]}"
    cases = {
        "endpoint": gateway.endpoint, "access_key": gateway.access_key,
        "secret_key": gateway.secret_key, "region": REGION, "bucket": bucket,
        "objects": [{"key": k, "file": str(f)} for k, f in objects.items()],
        "selects": [c.spec() for c in CASES],
        "presign": {"key": "people.csv"},
    }
    (work / "cases.json").write_text(json.dumps(cases))
    run = subprocess.run(command + [str(work / "cases.json"), str(work / "answers.json")],
                         env={**os.environ, **env}, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, f"{request.param} exited with {run.returncode}:\n{run.stderr}"
    return request.param, json.loads((work / "answers.json").read_text())


# --- the tests ------------------------------------------------------------------------------

def test_put_object_etags(sdk, objects):
    name, answers = sdk
    for key, path in objects.items():
        assert answers["puts"][key] == f'"{hashlib.md5(path.read_bytes()).hexdigest()}"', key


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_select(sdk, objects, case):
    name, answers = sdk
    got = answers["selects"][case.name]
    records = base64.b64decode(got["records"])
    if case.code is None:
        assert got["error"] is None, got["error"]
        assert records == case.records
        assert got["end"] is True
        # BytesScanned is what was read of the stored object: all of it for text input.
        size = objects[case.key].stat().st_size
        stats = got["stats"]
        assert stats["BytesReturned"] == len(records), stats
        if "Parquet" in case.input:
            assert 0 < stats["BytesScanned"] <= size, stats
        else:
            assert stats["BytesScanned"] == size, stats
        if case.progress:
            assert got["progress"], "Progress was asked for"
            for field in ("BytesScanned", "BytesProcessed", "BytesReturned"):
                values = [p[field] for p in got["progress"]]
                assert values == sorted(values) and values[-1] <= stats[field], got["progress"]
        else:
            assert got["progress"] == []
        assert 0 < got["largest_records"] <= MAX_RECORDS_PAYLOAD, got["largest_records"]
        assert got["records_events"] >= len(records) // MAX_RECORDS_PAYLOAD
    else:
        error = got["error"]
        assert error is not None, f"expected {case.code}, got {len(records)} bytes of records"
        assert error["code"] == case.code, error
        assert error["message"], error
        if case.status is not None:
            assert error["status"] == case.status, error
        assert error["records_before"] == case.rows_before_error, error
        assert got["end"] is False
        if case.rows_before_error:
            # The rows before the bad value arrived intact: whole records, in order.
            assert records.endswith(b"\n") and records.startswith(b"0\n1000\n"), records[:40]


def test_presigned_get(sdk, objects):
    name, answers = sdk
    presign = answers["presign"]
    assert presign["status"] == 200
    assert base64.b64decode(presign["body"]) == objects["people.csv"].read_bytes()
    # The same URL with its signature changed is refused.
    url = presign["url"]
    at = url.index("X-Amz-Signature=") + len("X-Amz-Signature=")
    forged = url[:at] + ("0" if url[at] != "0" else "1") + url[at + 1:]
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(forged, timeout=30)
    assert e.value.code == 403
    assert b"<Code>SignatureDoesNotMatch</Code>" in e.value.read()
