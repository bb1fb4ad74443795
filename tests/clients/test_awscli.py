"""The gateway as the AWS CLI (v1) sees it: `aws s3` for files and trees, `aws s3api` for the
single operations, multipart uploads and select-object-content, with exact bytes checked."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import uuid
from pathlib import Path

import pytest

MIB = 1024 * 1024
# tests/clients/conftest.py sets multipart_threshold = multipart_chunksize = 8MB in the CLI's
# config file; the CLI reads "MB" as MiB.
CLI_CHUNK = 8 * MIB

PEOPLE = b'name,age,city\nalice,30,paris\nbob,42,"new york"\ncarol,25,rome\n'


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def multipart_etag(parts: list[bytes]) -> str:
    """S3's ETag of a completed multipart upload: MD5 of the parts' binary MD5s, -N."""
    digest = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    return f'"{digest}-{len(parts)}"'


def pattern(size: int, seed: int = 0) -> bytes:
    block = hashlib.sha256(f"cli-{seed}".encode()).digest() * 2048  # 64 KiB
    return (block * (size // len(block) + 1))[:size]


def ls_lines(text: str) -> list[tuple[str, ...]]:
    """`aws s3 ls` output as ("PRE", prefix) and (size, key) tuples (dates dropped)."""
    rows = []
    for line in text.splitlines():
        if line.strip().startswith("PRE "):
            rows.append(("PRE", line.strip()[4:]))
        elif line.strip():
            _date, _time, size, key = line.split(None, 3)
            rows.append((size, key))
    return rows


@pytest.fixture
def cli_bucket(aws):
    name = f"cli-{uuid.uuid4().hex[:16]}"
    r = aws("s3", "mb", f"s3://{name}")
    assert r.text.strip() == f"make_bucket: {name}"
    return name


def test_cli_cp_ls_rm(aws, cli_bucket, tmp_path, s3):
    src = tmp_path / "people.csv"
    src.write_bytes(PEOPLE)
    aws("s3", "cp", str(src), f"s3://{cli_bucket}/dir/people.csv")
    aws("s3", "cp", str(src), f"s3://{cli_bucket}/dir/sub/with space.csv",
        "--content-type", "application/x-people", "--metadata", "origin=cli,rows=3")
    aws("s3", "cp", "-", f"s3://{cli_bucket}/stdin.txt", input=b"from stdin\n")

    assert ls_lines(aws("s3", "ls", f"s3://{cli_bucket}/").text) == [
        ("PRE", "dir/"), ("11", "stdin.txt")]
    assert ls_lines(aws("s3", "ls", f"s3://{cli_bucket}/dir/").text) == [
        ("PRE", "sub/"), (str(len(PEOPLE)), "people.csv")]
    assert ls_lines(aws("s3", "ls", "--recursive", f"s3://{cli_bucket}").text) == [
        (str(len(PEOPLE)), "dir/people.csv"), (str(len(PEOPLE)), "dir/sub/with space.csv"),
        ("11", "stdin.txt")]
    assert cli_bucket in aws("s3", "ls").text

    # `aws s3 cp` guesses the Content-Type from the file name unless told.
    head = aws("s3api", "head-object", "--bucket", cli_bucket, "--key", "dir/people.csv").json()
    assert head["ContentType"] == "text/csv"
    assert head["ETag"] == f'"{md5_hex(PEOPLE)}"'
    assert head["ContentLength"] == len(PEOPLE)
    head = aws("s3api", "head-object", "--bucket", cli_bucket,
               "--key", "dir/sub/with space.csv").json()
    assert head["ContentType"] == "application/x-people"
    assert head["Metadata"] == {"origin": "cli", "rows": "3"}

    assert aws("s3", "cp", f"s3://{cli_bucket}/dir/people.csv", "-").stdout == PEOPLE
    dst = tmp_path / "back.csv"
    aws("s3", "cp", f"s3://{cli_bucket}/dir/sub/with space.csv", str(dst))
    assert dst.read_bytes() == PEOPLE

    aws("s3", "rm", f"s3://{cli_bucket}/stdin.txt")
    aws("s3", "rm", "--recursive", f"s3://{cli_bucket}/dir/sub/")
    assert ls_lines(aws("s3", "ls", "--recursive", f"s3://{cli_bucket}").text) == [
        (str(len(PEOPLE)), "dir/people.csv")]
    aws("s3", "rb", "--force", f"s3://{cli_bucket}")
    assert cli_bucket not in aws("s3", "ls").text


def test_cli_sync_round_trip(aws, cli_bucket, tmp_path):
    up = tmp_path / "up"
    files = {"a.txt": b"alpha\n", "d/b.csv": b"1,2\n", "d/e/c.bin": bytes(range(256)),
             "d/e/empty": b""}
    for rel, data in files.items():
        (up / rel).parent.mkdir(parents=True, exist_ok=True)
        (up / rel).write_bytes(data)
    out = aws("s3", "sync", str(up), f"s3://{cli_bucket}/tree").text
    assert out.count("upload:") == len(files)

    # Nothing changed: nothing to do.
    assert "upload:" not in aws("s3", "sync", str(up), f"s3://{cli_bucket}/tree").text
    (up / "a.txt").write_bytes(b"alpha, longer now\n")
    (up / "d/b.csv").unlink()
    out = aws("s3", "sync", "--delete", str(up), f"s3://{cli_bucket}/tree").text
    assert out.count("upload:") == 1 and out.count("delete:") == 1

    down = tmp_path / "down"
    aws("s3", "sync", f"s3://{cli_bucket}/tree", str(down))
    got = {str(p.relative_to(down)): p.read_bytes() for p in down.rglob("*") if p.is_file()}
    want = dict(files, **{"a.txt": b"alpha, longer now\n"})
    del want["d/b.csv"]
    assert got == want


def test_cli_s3api_objects(aws, cli_bucket, tmp_path):
    body = tmp_path / "body"
    body.write_bytes(b"0123456789")
    r = aws("s3api", "put-object", "--bucket", cli_bucket, "--key", "obj", "--body", str(body),
            "--content-type", "text/plain", "--metadata", "k1=v1,k2=v2").json()
    assert r["ETag"] == f'"{md5_hex(b"0123456789")}"'

    out = tmp_path / "range.out"
    r = aws("s3api", "get-object", "--bucket", cli_bucket, "--key", "obj",
            "--range", "bytes=3-6", str(out)).json()
    assert out.read_bytes() == b"3456"
    assert r["ContentRange"] == "bytes 3-6/10" and r["ContentLength"] == 4
    assert r["Metadata"] == {"k1": "v1", "k2": "v2"} and r["ContentType"] == "text/plain"

    aws("s3api", "copy-object", "--bucket", cli_bucket, "--key", "copy",
        "--copy-source", f"{cli_bucket}/obj")
    head = aws("s3api", "head-object", "--bucket", cli_bucket, "--key", "copy").json()
    assert head["Metadata"] == {"k1": "v1", "k2": "v2"} and head["ContentType"] == "text/plain"
    aws("s3api", "copy-object", "--bucket", cli_bucket, "--key", "replaced",
        "--copy-source", f"{cli_bucket}/obj", "--metadata-directive", "REPLACE",
        "--content-type", "text/csv", "--metadata", "k3=v3")
    head = aws("s3api", "head-object", "--bucket", cli_bucket, "--key", "replaced").json()
    assert head["Metadata"] == {"k3": "v3"} and head["ContentType"] == "text/csv"

    r = aws("s3api", "delete-objects", "--bucket", cli_bucket, "--delete",
            json.dumps({"Objects": [{"Key": "copy"}, {"Key": "replaced"}]})).json()
    assert sorted(d["Key"] for d in r["Deleted"]) == ["copy", "replaced"]
    keys = aws("s3api", "list-objects-v2", "--bucket", cli_bucket,
               "--query", "Contents[].Key").json()
    assert keys == ["obj"]
    aws("s3api", "delete-object", "--bucket", cli_bucket, "--key", "obj")
    r = aws("s3api", "list-objects-v2", "--bucket", cli_bucket)
    assert "Contents" not in (r.json() if r.stdout.strip() else {})


def test_cli_listing_prefix_delimiter_pagination(aws, cli_bucket, s3):
    keys = ["a/1", "a/2", "a/b/3", "b/1", "c", "d e/ü"]
    for k in keys:
        s3.put_object(Bucket=cli_bucket, Key=k, Body=k.encode())

    r = aws("s3api", "list-objects-v2", "--bucket", cli_bucket, "--prefix", "a/",
            "--delimiter", "/").json()
    assert [o["Key"] for o in r["Contents"]] == ["a/1", "a/2"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/b/"]

    # --page-size makes the CLI fetch pages of 2 and join them; v2 and v1.
    for op in ("list-objects-v2", "list-objects"):
        r = aws("s3api", op, "--bucket", cli_bucket, "--page-size", "2").json()
        assert [o["Key"] for o in r["Contents"]] == keys, op
        r = aws("s3api", op, "--bucket", cli_bucket, "--page-size", "2",
                "--delimiter", "/").json()
        assert [o["Key"] for o in r["Contents"]] == ["c"], op
        assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "b/", "d e/"], op

    # --max-items with --starting-token: the CLI's own paging across server pages.
    first = aws("s3api", "list-objects-v2", "--bucket", cli_bucket, "--page-size", "2",
                "--max-items", "3").json()
    assert [o["Key"] for o in first["Contents"]] == keys[:3]
    rest = aws("s3api", "list-objects-v2", "--bucket", cli_bucket, "--page-size", "2",
               "--starting-token", first["NextToken"]).json()
    assert [o["Key"] for o in rest["Contents"]] == keys[3:]


def test_cli_errors(aws, cli_bucket, tmp_path):
    r = aws("s3api", "get-object", "--bucket", cli_bucket, "--key", "absent",
            str(tmp_path / "x"), check=False)
    assert r.returncode == 255 and "(NoSuchKey)" in r.stderr
    r = aws("s3", "ls", "s3://no-such-bucket-for-cli", check=False)
    assert r.returncode != 0 and "(NoSuchBucket)" in r.stderr
    r = aws("s3api", "list-objects-v2", "--bucket", cli_bucket, check=False,
            secret_key="wrong-secret")
    assert r.returncode == 255 and "(SignatureDoesNotMatch)" in r.stderr


def test_cli_unknown_access_key(aws, cli_bucket):
    r = aws("s3api", "list-objects-v2", "--bucket", cli_bucket, check=False,
            access_key="AKIDNOSUCHUSER")
    assert r.returncode == 255 and "(InvalidAccessKeyId)" in r.stderr, r.stderr


def test_cli_large_download_uses_ranged_gets(aws, cli_bucket, s3, tmp_path):
    """Above multipart_threshold `aws s3 cp` downloads in ranged GETs of the chunk size."""
    body = pattern(20 * MIB, 1)
    s3.put_object(Bucket=cli_bucket, Key="big", Body=body)
    dst = tmp_path / "big"
    aws("s3", "cp", f"s3://{cli_bucket}/big", str(dst))
    assert dst.read_bytes() == body


def test_cli_multipart_cp(aws, cli_bucket, tmp_path):
    """A 20 MiB `aws s3 cp` with 8MB threshold and chunk size: three parts (8, 8, 4 MiB)."""
    body = pattern(20 * MIB, 2)
    src = tmp_path / "big.bin"
    src.write_bytes(body)
    aws("s3", "cp", str(src), f"s3://{cli_bucket}/big.bin")
    chunks = [body[i:i + CLI_CHUNK] for i in range(0, len(body), CLI_CHUNK)]
    assert [len(c) for c in chunks] == [8 * MIB, 8 * MIB, 4 * MIB]
    head = aws("s3api", "head-object", "--bucket", cli_bucket, "--key", "big.bin").json()
    assert head["ETag"] == multipart_etag(chunks)
    assert head["ContentLength"] == len(body)
    dst = tmp_path / "back.bin"
    aws("s3", "cp", f"s3://{cli_bucket}/big.bin", str(dst))
    assert dst.read_bytes() == body
    uploads = aws("s3api", "list-multipart-uploads", "--bucket", cli_bucket)
    assert not (uploads.json().get("Uploads") if uploads.stdout.strip() else None)


def test_cli_s3api_multipart(aws, cli_bucket, tmp_path):
    parts = [pattern(5 * MIB, 3), b"tail of the object\n"]
    key = "mp/object.bin"
    up = aws("s3api", "create-multipart-upload", "--bucket", cli_bucket, "--key", key,
             "--content-type", "application/octet-stream").json()
    uid = up["UploadId"]
    etags = []
    for n, data in enumerate(parts, start=1):
        f = tmp_path / f"part{n}"
        f.write_bytes(data)
        r = aws("s3api", "upload-part", "--bucket", cli_bucket, "--key", key,
                "--upload-id", uid, "--part-number", str(n), "--body", str(f)).json()
        assert r["ETag"] == f'"{md5_hex(data)}"'
        etags.append(r["ETag"])

    listed = aws("s3api", "list-parts", "--bucket", cli_bucket, "--key", key,
                 "--upload-id", uid).json()
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in listed["Parts"]] == [
        (1, etags[0], len(parts[0])), (2, etags[1], len(parts[1]))]
    uploads = aws("s3api", "list-multipart-uploads", "--bucket", cli_bucket).json()
    assert [(u["Key"], u["UploadId"]) for u in uploads["Uploads"]] == [(key, uid)]

    spec = tmp_path / "parts.json"
    spec.write_text(json.dumps({"Parts": [{"PartNumber": n, "ETag": e}
                                          for n, e in enumerate(etags, start=1)]}))
    done = aws("s3api", "complete-multipart-upload", "--bucket", cli_bucket, "--key", key,
               "--upload-id", uid, "--multipart-upload", f"file://{spec}").json()
    assert done["ETag"] == multipart_etag(parts)
    assert aws("s3", "cp", f"s3://{cli_bucket}/{key}", "-").stdout == b"".join(parts)

    other = aws("s3api", "create-multipart-upload", "--bucket", cli_bucket,
                "--key", "abandoned").json()["UploadId"]
    aws("s3api", "abort-multipart-upload", "--bucket", cli_bucket, "--key", "abandoned",
        "--upload-id", other)
    r = aws("s3api", "list-parts", "--bucket", cli_bucket, "--key", "abandoned",
            "--upload-id", other, check=False)
    assert r.returncode == 255 and "(NoSuchUpload)" in r.stderr


def select_cli(aws, bucket, key, sql, outfile: Path, input_ser, output_ser, *extra,
               check=True):
    return aws("s3api", "select-object-content", "--bucket", bucket, "--key", key,
               "--expression", sql, "--expression-type", "SQL",
               "--input-serialization", json.dumps(input_ser),
               "--output-serialization", json.dumps(output_ser), *extra, str(outfile),
               check=check)


def test_cli_select_object_content(aws, cli_bucket, s3, tmp_path):
    s3.put_object(Bucket=cli_bucket, Key="people.csv", Body=PEOPLE)
    s3.put_object(Bucket=cli_bucket, Key="people.csv.gz", Body=gzip.compress(PEOPLE))
    out = tmp_path / "out"

    select_cli(aws, cli_bucket, "people.csv",
               "SELECT name, city FROM S3Object WHERE CAST(age AS INT) < 40", out,
               {"CSV": {"FileHeaderInfo": "USE"}, "CompressionType": "NONE"}, {"CSV": {}})
    assert out.read_bytes() == b"alice,paris\ncarol,rome\n"

    select_cli(aws, cli_bucket, "people.csv", "SELECT s._1, s._3 FROM S3Object s", out,
               {"CSV": {"FileHeaderInfo": "IGNORE"}}, {"JSON": {}})
    assert out.read_bytes() == (b'{"_1":"alice","_3":"paris"}\n{"_1":"bob","_3":"new york"}\n'
                                b'{"_1":"carol","_3":"rome"}\n')

    select_cli(aws, cli_bucket, "people.csv.gz", "SELECT COUNT(*) FROM S3Object", out,
               {"CSV": {"FileHeaderInfo": "USE"}, "CompressionType": "GZIP"}, {"CSV": {}})
    assert out.read_bytes() == b"3\n"

    start = PEOPLE.index(b"bob")
    select_cli(aws, cli_bucket, "people.csv", "SELECT * FROM S3Object", out,
               {"CSV": {"FileHeaderInfo": "USE"}}, {"CSV": {"QuoteFields": "ALWAYS"}},
               "--scan-range", f"Start={start - 1},End={start}")
    assert out.read_bytes() == b'"bob","42","new york"\n'

    r = select_cli(aws, cli_bucket, "people.csv", "SELECT * FROM S3Object s, s", out,
                   {"CSV": {}}, {"CSV": {}}, check=False)
    assert r.returncode == 255 and "(ParseUnexpectedToken)" in r.stderr, r.stderr
