"""The gateway as boto3 sees it: objects, listings, copies, errors, multipart uploads and
SelectObjectContent, each checked against exact bytes and S3's documented answers."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import urllib.request
import uuid

import pytest
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

MIB = 1024 * 1024
# S3 refuses parts below 5 MiB except the last one.
MIN_PART = 5 * MIB
# The gateway keeps each Records event below 128 KiB (docs/gateway.md).
MAX_RECORDS_PAYLOAD = 128 * 1024 - 256

PEOPLE = b'name,age,city\nalice,30,paris\nbob,42,"new york"\ncarol,25,rome\n'


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def multipart_etag(parts: list[bytes]) -> str:
    """S3's ETag of a completed multipart upload: the MD5 of the concatenated binary MD5s of
    the parts, a dash and the number of parts, in quotes."""
    digest = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest()
    return f'"{digest}-{len(parts)}"'


def pattern(size: int, seed: int = 0) -> bytes:
    """Deterministic bytes that differ from part to part (so a reordered part shows)."""
    block = hashlib.sha256(f"sift-{seed}".encode()).digest() * 2048  # 64 KiB
    return (block * (size // len(block) + 1))[:size]


def error_of(excinfo) -> tuple[str, int]:
    r = excinfo.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


# --- objects --------------------------------------------------------------------------------

def test_put_get_head_delete(s3, bucket):
    body = bytes(range(256)) * 1000
    put = s3.put_object(Bucket=bucket, Key="bin/all-bytes", Body=body)
    assert put["ETag"] == f'"{md5_hex(body)}"'

    got = s3.get_object(Bucket=bucket, Key="bin/all-bytes")
    assert got["Body"].read() == body
    assert got["ContentLength"] == len(body)
    assert got["ETag"] == put["ETag"]

    head = s3.head_object(Bucket=bucket, Key="bin/all-bytes")
    assert head["ContentLength"] == len(body)
    assert head["ETag"] == put["ETag"]
    assert head["LastModified"] == got["LastModified"]

    assert s3.delete_object(Bucket=bucket, Key="bin/all-bytes")["ResponseMetadata"][
        "HTTPStatusCode"] == 204
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="bin/all-bytes")
    assert error_of(e) == ("NoSuchKey", 404)
    # Deleting a key that does not exist succeeds, as in S3.
    assert s3.delete_object(Bucket=bucket, Key="bin/all-bytes")["ResponseMetadata"][
        "HTTPStatusCode"] == 204


def test_empty_object_and_unusual_keys(s3, bucket):
    keys = ["empty", "with space/and ü unicode", "a/../dots/./x", "percent%2Fnot-a-slash",
            "plus+and=equals&amp"]
    for i, key in enumerate(keys):
        body = b"" if key == "empty" else f"body {i}".encode()
        s3.put_object(Bucket=bucket, Key=key, Body=body)
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == body
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert listed == sorted(keys)
    assert s3.head_object(Bucket=bucket, Key="empty")["ContentLength"] == 0


def test_get_ranges(s3, bucket):
    body = b"0123456789abcdefghij"
    s3.put_object(Bucket=bucket, Key="r", Body=body)
    cases = {
        "bytes=2-5": (b"2345", "bytes 2-5/20"),
        "bytes=15-": (b"fghij", "bytes 15-19/20"),
        "bytes=-3": (b"hij", "bytes 17-19/20"),
        "bytes=18-100": (b"ij", "bytes 18-19/20"),  # an end past the object is clamped
        "bytes=0-0": (b"0", "bytes 0-0/20"),
    }
    for rng, (want, content_range) in cases.items():
        r = s3.get_object(Bucket=bucket, Key="r", Range=rng)
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 206, rng
        assert r["Body"].read() == want, rng
        assert r["ContentRange"] == content_range, rng
        assert r["ContentLength"] == len(want), rng
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="r", Range="bytes=20-30")
    assert error_of(e) == ("InvalidRange", 416)


def test_metadata_and_content_type_round_trip(s3, bucket):
    s3.put_object(Bucket=bucket, Key="m", Body=b"a,b\n", ContentType="text/csv; charset=utf-8",
                  Metadata={"Origin": "tpcds", "row-count": "1", "note": "hello world"})
    for r in (s3.head_object(Bucket=bucket, Key="m"), s3.get_object(Bucket=bucket, Key="m")):
        assert r["ContentType"] == "text/csv; charset=utf-8"
        # S3 lower-cases user metadata names.
        assert r["Metadata"] == {"origin": "tpcds", "row-count": "1", "note": "hello world"}


def test_content_md5_is_checked(s3, bucket):
    import base64
    body = b"checked body"
    good = base64.b64encode(hashlib.md5(body).digest()).decode()
    s3.put_object(Bucket=bucket, Key="md5", Body=body, ContentMD5=good)
    bad = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5", Body=body, ContentMD5=bad)
    assert error_of(e) == ("BadDigest", 400)
    assert s3.get_object(Bucket=bucket, Key="md5")["Body"].read() == body


def test_copy_object_keeps_or_replaces_metadata(s3, bucket, make_client):
    s3.put_object(Bucket=bucket, Key="src", Body=b"copied bytes", ContentType="text/plain",
                  Metadata={"color": "blue"})
    r = s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "src"})
    assert r["CopyObjectResult"]["ETag"] == f'"{md5_hex(b"copied bytes")}"'
    copy = s3.get_object(Bucket=bucket, Key="copy")
    assert copy["Body"].read() == b"copied bytes"
    assert copy["ContentType"] == "text/plain"
    assert copy["Metadata"] == {"color": "blue"}

    s3.copy_object(Bucket=bucket, Key="replaced", CopySource=f"{bucket}/src",
                   MetadataDirective="REPLACE", ContentType="application/x-new",
                   Metadata={"shape": "round"})
    replaced = s3.head_object(Bucket=bucket, Key="replaced")
    assert replaced["ContentType"] == "application/x-new"
    assert replaced["Metadata"] == {"shape": "round"}

    # Across buckets.
    other = "copy-dst-" + uuid.uuid4().hex[:16]
    s3.create_bucket(Bucket=other)
    s3.copy_object(Bucket=other, Key="x", CopySource={"Bucket": bucket, "Key": "src"})
    assert s3.get_object(Bucket=other, Key="x")["Body"].read() == b"copied bytes"

    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="y", CopySource={"Bucket": bucket, "Key": "absent"})
    assert error_of(e) == ("NoSuchKey", 404)


def test_delete_objects(s3, bucket):
    for k in ("d/1", "d/2", "d/3", "keep"):
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    r = s3.delete_objects(Bucket=bucket, Delete={
        "Objects": [{"Key": "d/1"}, {"Key": "d/2"}, {"Key": "never-existed"}]})
    # S3 reports a key that did not exist as deleted too.
    assert sorted(d["Key"] for d in r["Deleted"]) == ["d/1", "d/2", "never-existed"]
    assert not r.get("Errors")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "d/3"}], "Quiet": True})
    assert not r.get("Deleted") and not r.get("Errors")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["keep"]


def test_presigned_get(s3, bucket):
    s3.put_object(Bucket=bucket, Key="p", Body=b"presigned")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "p"},
                                    ExpiresIn=300)
    with urllib.request.urlopen(url, timeout=30) as r:
        assert r.read() == b"presigned"


def test_buckets(s3, bucket):
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert bucket in names
    s3.head_bucket(Bucket=bucket)
    # Re-creating one's own bucket answers 200 in us-east-1.
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="x", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert error_of(e) == ("BucketNotEmpty", 409)
    s3.delete_object(Bucket=bucket, Key="x")
    s3.delete_bucket(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=bucket)
    assert error_of(e)[1] == 404


# --- listings -------------------------------------------------------------------------------

TREE = ["a/1", "a/2", "a/b/3", "b/1", "c", "d e/ü"]


@pytest.fixture
def tree(s3, bucket):
    for k in TREE:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    return bucket


def test_list_v2_prefix_delimiter(s3, tree):
    r = s3.list_objects_v2(Bucket=tree, Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["c"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "b/", "d e/"]
    assert r["KeyCount"] == 4 and r["IsTruncated"] is False

    r = s3.list_objects_v2(Bucket=tree, Prefix="a/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["a/1", "a/2"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/b/"]
    assert r["Prefix"] == "a/"

    r = s3.list_objects_v2(Bucket=tree, Prefix="a/")
    assert [o["Key"] for o in r["Contents"]] == ["a/1", "a/2", "a/b/3"]
    assert [o["Size"] for o in r["Contents"]] == [3, 3, 5]
    assert r["Contents"][0]["ETag"] == f'"{md5_hex(b"a/1")}"'

    r = s3.list_objects_v2(Bucket=tree, Prefix="zzz")
    assert "Contents" not in r and r["KeyCount"] == 0

    r = s3.list_objects_v2(Bucket=tree, StartAfter="a/b/3")
    assert [o["Key"] for o in r["Contents"]] == ["b/1", "c", "d e/ü"]


def test_list_v2_pagination(s3, tree):
    keys, token, pages = [], None, 0
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket=tree, MaxKeys=2, **kw)
        pages += 1
        keys += [o["Key"] for o in r["Contents"]]
        assert r["KeyCount"] == len(r["Contents"]) <= 2
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
    assert keys == TREE and pages == 3

    # boto3's paginator, with a delimiter: prefixes count against MaxKeys too.
    pages = list(s3.get_paginator("list_objects_v2").paginate(
        Bucket=tree, Delimiter="/", PaginationConfig={"PageSize": 2}))
    got = [[o["Key"] for o in p.get("Contents", [])] + [c["Prefix"] for c in
                                                         p.get("CommonPrefixes", [])]
           for p in pages]
    assert got == [["a/", "b/"], ["c", "d e/"]]


def test_list_v1_marker_and_pagination(s3, tree):
    r = s3.list_objects(Bucket=tree, MaxKeys=2)
    assert [o["Key"] for o in r["Contents"]] == ["a/1", "a/2"] and r["IsTruncated"]
    r = s3.list_objects(Bucket=tree, Marker="a/2")
    assert [o["Key"] for o in r["Contents"]] == ["a/b/3", "b/1", "c", "d e/ü"]

    r = s3.list_objects(Bucket=tree, Delimiter="/", MaxKeys=2)
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "b/"]
    assert r["IsTruncated"] and r["NextMarker"] == "b/"
    r = s3.list_objects(Bucket=tree, Delimiter="/", MaxKeys=2, Marker=r["NextMarker"])
    assert [o["Key"] for o in r["Contents"]] == ["c"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["d e/"]
    assert not r["IsTruncated"]

    pages = list(s3.get_paginator("list_objects").paginate(
        Bucket=tree, PaginationConfig={"PageSize": 4}))
    assert [[o["Key"] for o in p["Contents"]] for p in pages] == [TREE[:4], TREE[4:]]


# --- errors ---------------------------------------------------------------------------------

def test_no_such_key_and_bucket(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="absent")
    assert error_of(e) == ("NoSuchKey", 404)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="absent")
    assert error_of(e)[1] == 404  # a HEAD answer has no body, so no code either
    for call in (lambda: s3.get_object(Bucket="no-such-bucket-sift", Key="k"),
                 lambda: s3.list_objects_v2(Bucket="no-such-bucket-sift"),
                 lambda: s3.put_object(Bucket="no-such-bucket-sift", Key="k", Body=b"")):
        with pytest.raises(ClientError) as e:
            call()
        assert error_of(e) == ("NoSuchBucket", 404)


def test_wrong_secret_is_signature_does_not_match(make_client, bucket):
    bad = make_client(secret_key="not-the-secret")
    for call in (lambda: bad.list_objects_v2(Bucket=bucket),
                 lambda: bad.put_object(Bucket=bucket, Key="k", Body=b"x")):
        with pytest.raises(ClientError) as e:
            call()
        assert error_of(e) == ("SignatureDoesNotMatch", 403)


def test_unknown_access_key_is_invalid_access_key_id(make_client, bucket):
    stranger = make_client(access_key="AKIDNOSUCHUSER")
    with pytest.raises(ClientError) as e:
        stranger.list_objects_v2(Bucket=bucket)
    assert error_of(e) == ("InvalidAccessKeyId", 403)


# --- multipart upload -----------------------------------------------------------------------

def test_multipart_upload_complete(s3, bucket):
    parts = [pattern(MIN_PART, 1), pattern(MIN_PART, 2), pattern(1234, 3)]
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp/object", ContentType="text/csv",
                                    Metadata={"source": "multipart"})
    upload_id = up["UploadId"]
    assert up["Bucket"] == bucket and up["Key"] == "mp/object"

    etags = []
    for n, data in enumerate(parts, start=1):
        r = s3.upload_part(Bucket=bucket, Key="mp/object", UploadId=upload_id, PartNumber=n,
                           Body=data)
        assert r["ETag"] == f'"{md5_hex(data)}"'
        etags.append(r["ETag"])

    listed = s3.list_parts(Bucket=bucket, Key="mp/object", UploadId=upload_id)
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in listed["Parts"]] == [
        (n, etags[n - 1], len(parts[n - 1])) for n in (1, 2, 3)]

    uploads = s3.list_multipart_uploads(Bucket=bucket)
    assert [(u["Key"], u["UploadId"]) for u in uploads["Uploads"]] == [("mp/object", upload_id)]

    # The object does not exist until the upload completes.
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="mp/object")
    assert error_of(e)[1] == 404

    done = s3.complete_multipart_upload(
        Bucket=bucket, Key="mp/object", UploadId=upload_id,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etags[n - 1]} for n in (1, 2, 3)]})
    assert done["ETag"] == multipart_etag(parts)
    assert done["Key"] == "mp/object" and done["Bucket"] == bucket

    got = s3.get_object(Bucket=bucket, Key="mp/object")
    assert got["Body"].read() == b"".join(parts)
    assert got["ETag"] == multipart_etag(parts)
    assert got["ContentType"] == "text/csv"
    assert got["Metadata"] == {"source": "multipart"}
    # A range across the first part boundary.
    r = s3.get_object(Bucket=bucket, Key="mp/object",
                      Range=f"bytes={MIN_PART - 3}-{MIN_PART + 2}")
    assert r["Body"].read() == parts[0][-3:] + parts[1][:3]

    listed = s3.list_objects_v2(Bucket=bucket)["Contents"]
    assert [(o["Key"], o["ETag"], o["Size"]) for o in listed] == [
        ("mp/object", multipart_etag(parts), sum(map(len, parts)))]
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")


def test_multipart_upload_abort(s3, bucket):
    up = s3.create_multipart_upload(Bucket=bucket, Key="aborted")
    s3.upload_part(Bucket=bucket, Key="aborted", UploadId=up["UploadId"], PartNumber=1,
                   Body=b"never to be seen")
    r = s3.abort_multipart_upload(Bucket=bucket, Key="aborted", UploadId=up["UploadId"])
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="aborted", UploadId=up["UploadId"])
    assert error_of(e) == ("NoSuchUpload", 404)
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="aborted", UploadId=up["UploadId"], PartNumber=2,
                       Body=b"late")
    assert error_of(e) == ("NoSuchUpload", 404)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="aborted")
    assert error_of(e)[1] == 404


def test_multipart_upload_errors(s3, bucket):
    up = s3.create_multipart_upload(Bucket=bucket, Key="bad")
    uid = up["UploadId"]
    # Parts 1 and 2 are full size, 3 and 4 small: each error below has one cause only.
    data = [pattern(MIN_PART, 11), pattern(MIN_PART, 12), b"x" * 1024, b"y" * 1024]
    etags = [s3.upload_part(Bucket=bucket, Key="bad", UploadId=uid, PartNumber=n,
                            Body=d)["ETag"] for n, d in enumerate(data, start=1)]

    def complete(*numbers, etag=None):
        return s3.complete_multipart_upload(
            Bucket=bucket, Key="bad", UploadId=uid, MultipartUpload={"Parts": [
                {"PartNumber": n, "ETag": etag or etags[n - 1]} for n in numbers]})

    # A part that is not the last must be at least 5 MiB.
    with pytest.raises(ClientError) as e:
        complete(3, 4)
    assert error_of(e) == ("EntityTooSmall", 400)
    # An ETag that is not the part's.
    with pytest.raises(ClientError) as e:
        complete(1, etag=f'"{md5_hex(b"other")}"')
    assert error_of(e) == ("InvalidPart", 400)
    # A part that was never uploaded.
    with pytest.raises(ClientError) as e:
        complete(1, 5, etag=etags[0])
    assert error_of(e) == ("InvalidPart", 400)
    # Parts out of order.
    with pytest.raises(ClientError) as e:
        complete(2, 1)
    assert error_of(e) == ("InvalidPartOrder", 400)
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="bad", UploadId="no-such-upload-id", PartNumber=1,
                       Body=b"x")
    assert error_of(e) == ("NoSuchUpload", 404)

    # After the failed attempts the upload is still open, and parts may be left out: a small
    # part is fine in the last place.
    done = complete(1, 2, 4)
    used = [data[0], data[1], data[3]]
    assert done["ETag"] == multipart_etag(used)
    assert s3.get_object(Bucket=bucket, Key="bad")["Body"].read() == b"".join(used)
    # A completed upload is gone.
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="bad", UploadId=uid)
    assert error_of(e) == ("NoSuchUpload", 404)


def test_multipart_part_overwrite_uses_latest(s3, bucket):
    up = s3.create_multipart_upload(Bucket=bucket, Key="over")
    uid = up["UploadId"]
    s3.upload_part(Bucket=bucket, Key="over", UploadId=uid, PartNumber=1, Body=b"first try")
    etag = s3.upload_part(Bucket=bucket, Key="over", UploadId=uid, PartNumber=1,
                          Body=b"second try")["ETag"]
    listed = s3.list_parts(Bucket=bucket, Key="over", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["ETag"], p["Size"]) for p in listed] == [(1, etag, 10)]
    s3.complete_multipart_upload(Bucket=bucket, Key="over", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert s3.get_object(Bucket=bucket, Key="over")["Body"].read() == b"second try"


def test_managed_transfer_upload_and_download(s3, bucket):
    """boto3's upload_fileobj switches to multipart above the threshold."""
    body = pattern(12 * MIB, 7)
    config = TransferConfig(multipart_threshold=MIN_PART, multipart_chunksize=MIN_PART,
                            max_concurrency=2)
    s3.upload_fileobj(io.BytesIO(body), bucket, "managed", Config=config)
    chunks = [body[i:i + MIN_PART] for i in range(0, len(body), MIN_PART)]
    assert s3.head_object(Bucket=bucket, Key="managed")["ETag"] == multipart_etag(chunks)
    out = io.BytesIO()
    s3.download_fileobj(bucket, "managed", out, Config=config)
    assert out.getvalue() == body


# --- SelectObjectContent --------------------------------------------------------------------

def select(s3, bucket, key, sql, input=None, output=None, **kw):
    """Runs a select; returns (records bytes, list of events without Records)."""
    r = s3.select_object_content(
        Bucket=bucket, Key=key, Expression=sql, ExpressionType="SQL",
        InputSerialization=input or {"CSV": {"FileHeaderInfo": "USE"}},
        OutputSerialization=output or {"CSV": {}}, **kw)
    records, events = [], []
    for event in r["Payload"]:
        if "Records" in event:
            records.append(event["Records"]["Payload"])
        else:
            events.append(event)
    return b"".join(records), events, records


def stats_of(events) -> dict:
    stats = [e["Stats"]["Details"] for e in events if "Stats" in e]
    assert len(stats) == 1, events
    assert "End" in events[-1], events
    return stats[0]


@pytest.fixture
def people(s3, bucket):
    s3.put_object(Bucket=bucket, Key="people.csv", Body=PEOPLE)
    return bucket


def test_select_csv_positional_columns(s3, people):
    out, events, _ = select(s3, people, "people.csv",
                            "SELECT s._1, s._3 FROM S3Object s WHERE CAST(s._2 AS INT) > 26",
                            input={"CSV": {"FileHeaderInfo": "IGNORE"}})
    assert out == b"alice,paris\nbob,new york\n"
    assert stats_of(events) == {"BytesScanned": len(PEOPLE), "BytesProcessed": len(PEOPLE),
                                "BytesReturned": len(out)}


def test_select_header_names(s3, people):
    out, events, _ = select(s3, people, "people.csv",
                            "SELECT name, age FROM S3Object WHERE CAST(age AS INT) >= 30")
    assert out == b"alice,30\nbob,42\n"
    assert stats_of(events) == {"BytesScanned": 61, "BytesProcessed": 61, "BytesReturned": 16}

    out, _, _ = select(s3, people, "people.csv",
                       "SELECT COUNT(*), SUM(CAST(age AS INT)), MAX(city) FROM S3Object")
    assert out == b"3,97,rome\n"


def test_select_json_output(s3, people):
    out, events, _ = select(s3, people, "people.csv",
                            "SELECT name, CAST(age AS INT) AS age, city FROM S3Object s",
                            output={"JSON": {}})
    assert out == (b'{"name":"alice","age":30,"city":"paris"}\n'
                   b'{"name":"bob","age":42,"city":"new york"}\n'
                   b'{"name":"carol","age":25,"city":"rome"}\n')
    assert stats_of(events)["BytesReturned"] == len(out)

    out, _, _ = select(s3, people, "people.csv", "SELECT s._1 FROM S3Object s LIMIT 2",
                       input={"CSV": {}}, output={"JSON": {"RecordDelimiter": ";"}})
    assert out == b'{"_1":"name"};{"_1":"alice"};'


def test_select_csv_options(s3, bucket):
    # dsdgen's shape: '|' separated with a trailing delimiter, and a quoted field.
    data = b'1|x|"a|b"|\n2||plain|\n3|y|"say ""hi"""|\n'
    s3.put_object(Bucket=bucket, Key="pipes.dat", Body=data)
    out, _, _ = select(s3, bucket, "pipes.dat", "SELECT s._1, s._3 FROM S3Object s",
                       input={"CSV": {"FieldDelimiter": "|"}},
                       output={"CSV": {"FieldDelimiter": ";", "QuoteFields": "ALWAYS"}})
    assert out == b'"1";"a|b"\n"2";"plain"\n"3";"say ""hi"""\n'
    out, _, _ = select(s3, bucket, "pipes.dat", "SELECT * FROM S3Object s WHERE s._2 = ''",
                       input={"CSV": {"FieldDelimiter": "|"}},
                       output={"CSV": {"FieldDelimiter": "|", "RecordDelimiter": "\r\n"}})
    assert out == b"2||plain|\r\n"


def test_select_json_lines_input(s3, bucket):
    data = (b'{"name":"alice","age":30,"pets":[{"kind":"cat"}]}\n'
            b'{"name":"bob","age":42,"pets":[]}\n'
            b'{"name":"carol","age":25,"city":null}\n')
    s3.put_object(Bucket=bucket, Key="people.jsonl", Body=data)
    out, events, _ = select(s3, bucket, "people.jsonl",
                            "SELECT s.name, s.age FROM S3Object s WHERE s.age > 26",
                            input={"JSON": {"Type": "LINES"}}, output={"JSON": {}})
    assert out == b'{"name":"alice","age":30}\n{"name":"bob","age":42}\n'
    assert stats_of(events) == {"BytesScanned": len(data), "BytesProcessed": len(data),
                                "BytesReturned": len(out)}
    out, _, _ = select(s3, bucket, "people.jsonl",
                       "SELECT p.kind FROM S3Object[*].pets[*] p",
                       input={"JSON": {"Type": "LINES"}}, output={"CSV": {}})
    assert out == b"cat\n\n\n"
    # ScanRange over lines: the records that start in [start, end].
    out, _, _ = select(s3, bucket, "people.jsonl", "SELECT s.name FROM S3Object s",
                       input={"JSON": {"Type": "LINES"}},
                       ScanRange={"Start": 1, "End": len(data) - 2})
    assert out == b"bob\ncarol\n"


def test_select_json_document_input(s3, bucket):
    data = b'{"Rules": [{"id": "1"}, {"expr": "y > x"}, {"id": "2"}]}\n{"created": "June 27"}\n'
    s3.put_object(Bucket=bucket, Key="rules.json", Body=gzip.compress(data))
    out, _, _ = select(s3, bucket, "rules.json", "SELECT id FROM S3Object[*].Rules[*].id",
                       input={"JSON": {"Type": "DOCUMENT"}, "CompressionType": "GZIP"},
                       output={"JSON": {}})
    assert out == b'{"id":"1"}\n{}\n{"id":"2"}\n{}\n'


def test_select_malformed_json_is_an_error(s3, bucket):
    s3.put_object(Bucket=bucket, Key="bad.json", Body=b'{"a": [1, 2}\n')
    with pytest.raises(ClientError) as e:
        select(s3, bucket, "bad.json", "SELECT * FROM S3Object",
               input={"JSON": {"Type": "DOCUMENT"}})
    assert e.value.response["Error"]["Code"] == "JSONParsingError"
    with pytest.raises(ClientError) as e:
        select(s3, bucket, "bad.json", "SELECT * FROM S3Object",
               input={"JSON": {"Type": "ARRAY"}})
    assert e.value.response["Error"]["Code"] == "InvalidJsonType"


def pyarrow_file(row_group_size=3, compression="snappy"):
    """A Parquet file written by pyarrow (another writer than the engine's tests use): the
    types S3 Select maps, nulls, a dictionary column, nested values, several row groups."""
    import datetime
    import decimal
    import pyarrow as pa
    import pyarrow.parquet as pq

    utc = datetime.timezone.utc
    table = pa.table({
        "id": pa.array([1, 2, 3, 4, 5], pa.int32()),
        "big": pa.array([2**40, None, -7, 0, 9], pa.int64()),
        "ratio": pa.array([0.5, 1.25, None, 3.0, -2.5], pa.float64()),
        "name": pa.array(["ann", "bob", None, "dee", "éva"], pa.string()),
        "ok": pa.array([True, False, True, None, False], pa.bool_()),
        "price": pa.array([decimal.Decimal(x) for x in ["1.10", "2.00", "0.05", "99.99", "5.50"]],
                          pa.decimal128(9, 2)),
        "day": pa.array([datetime.date(2001, 8, 22)] * 4 + [None], pa.date32()),
        "at": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5, 600000, tzinfo=utc)] * 5,
                       pa.timestamp("us", tz="UTC")),
        "tags": pa.array([[1, 2], [], None, [3], [4, 5, 6]], pa.list_(pa.int64())),
        "who": pa.array([{"a": "x", "n": 1}, None, {"a": "y", "n": 2}, {"a": None, "n": 3},
                         {"a": "z", "n": 4}],
                        pa.struct([("a", pa.string()), ("n", pa.int64())])),
        "color": pa.array(["red", "blue", "red", "red", "green"]).dictionary_encode(),
    })
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=row_group_size, compression=compression)
    return buf.getvalue()


def test_select_parquet_written_by_pyarrow(s3, bucket):
    data = pyarrow_file()
    s3.put_object(Bucket=bucket, Key="t.parquet", Body=data)
    out, events, _ = select(s3, bucket, "t.parquet", "SELECT * FROM S3Object s",
                            input={"Parquet": {}}, output={"JSON": {}})
    rows = [json.loads(line) for line in out.decode().splitlines()]
    assert rows[0] == {"id": 1, "big": 2**40, "ratio": 0.5, "name": "ann", "ok": True,
                       "price": 1.10, "day": "2001-08-22",
                       "at": "2024-01-02T03:04:05.600000Z", "tags": [1, 2],
                       "who": {"a": "x", "n": 1}, "color": "red"}
    assert rows[2]["name"] is None and rows[2]["tags"] is None and rows[2]["ratio"] is None
    assert rows[4]["name"] == "éva" and rows[4]["day"] is None
    assert [r["color"] for r in rows] == ["red", "blue", "red", "red", "green"]
    assert 0.9 * len(data) < stats_of(events)["BytesScanned"] <= len(data)
    # Typed comparisons, a struct path, a list index, an aggregate over row groups.
    out, _, _ = select(s3, bucket, "t.parquet",
                       "SELECT s.name, s.price, s.who.a, s.tags[0] FROM S3Object s "
                       "WHERE s.price >= 2 AND s.day = `2001-08-22`",
                       input={"Parquet": {}}, output={"CSV": {}})
    assert out == b"bob,2.00,,\ndee,99.99,,3\n"
    out, _, _ = select(s3, bucket, "t.parquet",
                       "SELECT COUNT(*), SUM(s.id), MAX(s.at) FROM S3Object s",
                       input={"Parquet": {}}, output={"CSV": {}})
    assert out == b"5,15,2024-01-02T03:04:05.600000Z\n"
    # Only the named column's chunks are read (and the footer): a fraction of a wide file.
    import pyarrow as pa
    import pyarrow.parquet as pq
    n = 20000
    wide = pa.table({"id": pa.array(range(n), pa.int64()),
                     "text": pa.array([uuid.uuid4().hex * 4 for _ in range(n)])})
    buf = io.BytesIO()
    pq.write_table(wide, buf, row_group_size=5000)
    s3.put_object(Bucket=bucket, Key="wide.parquet", Body=buf.getvalue())
    out, events, _ = select(s3, bucket, "wide.parquet",
                            "SELECT s.id FROM S3Object s WHERE s.id BETWEEN 12000 AND 12002",
                            input={"Parquet": {}}, output={"CSV": {}})
    assert out == b"12000\n12001\n12002\n"
    assert stats_of(events)["BytesScanned"] < len(buf.getvalue()) / 20


def test_select_arrow_results_read_by_pyarrow(s3, bucket, tmp_path):
    """Arrow results (docs/gateway.md): boto3 adds the request header, the Records payloads
    make one IPC stream that pyarrow reads as typed columns equal to the CSV answer; the same
    stream from `sift select --output arrow`."""
    import subprocess

    import pyarrow as pa
    from conftest import _sift_bin

    rows = [f"item {i},{i % 50},{'' if i % 7 == 0 else f'{i % 300}.{i % 100:02d}'}"
            for i in range(20000)]
    data = ("\n".join(rows) + "\n").encode()
    s3.put_object(Bucket=bucket, Key="typed.csv", Body=data)
    sql = ("SELECT s._1 AS name, CAST(s._2 AS INT) AS quantity, "
           "CASE s._3 WHEN '' THEN NULL ELSE CAST(s._3 AS DECIMAL(7,2)) END AS price "
           "FROM S3Object s WHERE CAST(s._2 AS INT) < 10")

    def arrow_select(value):
        def ask_for_arrow(request, **_):
            request.headers["x-sift-result-format"] = value

        s3.meta.events.register("before-sign.s3.SelectObjectContent", ask_for_arrow)
        try:
            r = s3.select_object_content(
                Bucket=bucket, Key="typed.csv", Expression=sql, ExpressionType="SQL",
                InputSerialization={"CSV": {}}, OutputSerialization={"CSV": {}})
            assert r["ResponseMetadata"]["HTTPHeaders"].get("x-sift-result-format") == value
            return b"".join(e["Records"]["Payload"] for e in r["Payload"] if "Records" in e)
        finally:
            s3.meta.events.unregister("before-sign.s3.SelectObjectContent", ask_for_arrow)

    stream = arrow_select("arrow")
    table = pa.ipc.open_stream(stream).read_all()
    # LZ4-compressed buffers: pyarrow reads the same table from fewer bytes.
    compressed = arrow_select("arrow; compression=lz4")
    assert len(compressed) < len(stream)
    assert pa.ipc.open_stream(compressed).read_all().equals(table)
    assert table.schema == pa.schema([("name", pa.string()), ("quantity", pa.int64()),
                                      ("price", pa.decimal128(7, 2))])
    csv, _, _ = select(s3, bucket, "typed.csv", sql, input={"CSV": {}})
    want = [line.split(",") for line in csv.decode().splitlines()]
    got = table.to_pylist()
    assert len(got) == len(want) == 4000
    for g, (name, quantity, price) in zip(got, want):
        assert g["name"] == name and g["quantity"] == int(quantity)
        assert (g["price"] is None) if price == "" else str(g["price"]) == price

    path = tmp_path / "typed.csv"
    path.write_bytes(data)
    out = subprocess.run([_sift_bin(), "select", "--output", "arrow", "--file", str(path), sql],
                         capture_output=True, check=True)
    assert pa.ipc.open_stream(out.stdout).read_all().equals(table)


def test_select_parquet_errors(s3, bucket):
    s3.put_object(Bucket=bucket, Key="t.parquet", Body=pyarrow_file(compression="zstd"))
    with pytest.raises(ClientError) as e:
        select(s3, bucket, "t.parquet", "SELECT s.id FROM S3Object s", input={"Parquet": {}})
    assert e.value.response["Error"]["Code"] == "ParquetUnsupportedCompressionCodec"
    s3.put_object(Bucket=bucket, Key="not.parquet", Body=PEOPLE)
    with pytest.raises(ClientError) as e:
        select(s3, bucket, "not.parquet", "SELECT * FROM S3Object", input={"Parquet": {}})
    assert e.value.response["Error"]["Code"] == "ParquetParsingError"
    with pytest.raises(ClientError) as e:
        select(s3, bucket, "t.parquet", "SELECT * FROM S3Object",
               input={"Parquet": {}, "CompressionType": "GZIP"})
    assert e.value.response["Error"]["Code"] == "InvalidCompressionFormat"


def test_select_gzip_input(s3, bucket):
    # Two gzip members, as `cat a.gz b.gz` gives: S3 Select reads them as one stream.
    head, tail = PEOPLE[:29], PEOPLE[29:]
    packed = gzip.compress(head) + gzip.compress(tail)
    s3.put_object(Bucket=bucket, Key="people.csv.gz", Body=packed)
    out, events, _ = select(s3, bucket, "people.csv.gz",
                            "SELECT name FROM S3Object WHERE city <> 'rome'",
                            input={"CSV": {"FileHeaderInfo": "USE"}, "CompressionType": "GZIP"})
    assert out == b"alice\nbob\n"
    assert stats_of(events) == {"BytesScanned": len(packed), "BytesProcessed": len(PEOPLE),
                                "BytesReturned": len(out)}


def test_select_bzip2_input(s3, bucket):
    packed = bz2.compress(PEOPLE)
    s3.put_object(Bucket=bucket, Key="people.csv.bz2", Body=packed)
    out, events, _ = select(s3, bucket, "people.csv.bz2", "SELECT city FROM S3Object",
                            input={"CSV": {"FileHeaderInfo": "USE"}, "CompressionType": "BZIP2"})
    assert out == b"paris\nnew york\nrome\n"
    assert stats_of(events) == {"BytesScanned": len(packed), "BytesProcessed": len(PEOPLE),
                                "BytesReturned": len(out)}


# Records of different lengths, so that range ends fall everywhere inside them.
RANGED = b"r0\nrow-1\nx2\nrecord-number-3\n4\nfive-5\nsix-six-6\n"


def records_starting_in(data: bytes, start: int, end: int) -> bytes:
    """AWS's ScanRange rule: exactly the records whose first byte lies in [start, end]."""
    out, pos = [], 0
    for line in data.splitlines(keepends=True):
        if start <= pos <= end:
            out.append(line)
        pos += len(line)
    return b"".join(out)


def test_select_scan_range_first_byte_rule(s3, bucket):
    s3.put_object(Bucket=bucket, Key="ranged.csv", Body=RANGED)
    n = len(RANGED)

    def ranged(scan_range):
        out, events, _ = select(s3, bucket, "ranged.csv", "SELECT * FROM S3Object s",
                                input={"CSV": {}}, ScanRange=scan_range)
        stats = stats_of(events)
        assert stats["BytesReturned"] == len(out)
        assert stats["BytesProcessed"] == stats["BytesScanned"] <= n
        return out

    assert ranged({"Start": 0, "End": 2}) == b"r0\n"
    assert ranged({"Start": 1, "End": 3}) == b"row-1\n"  # starts at 3, which is in range
    assert ranged({"Start": 4, "End": 8}) == b""  # no record starts in 4..8
    assert ranged({"Start": 10, "End": 11}) == b""
    assert ranged({"Start": 9, "End": 12}) == b"x2\nrecord-number-3\n"
    assert ranged({"Start": 12}) == RANGED[12:]  # Start alone: to the end
    assert ranged({"End": 11}) == b"six-six-6\n"  # End alone: the last 11 bytes

    # Consecutive ranges [0, k-1], [k, 2k-1], ... cover every record exactly once.
    for k in (1, 4, 7, 13, n):
        parts = []
        for start in range(0, n, k):
            end = start + k - 1
            got = ranged({"Start": start, "End": end})
            assert got == records_starting_in(RANGED, start, end), (start, end)
            parts.append(got)
        assert b"".join(parts) == RANGED, k


def test_select_scan_range_with_header(s3, people):
    # The header is the object's first record also under a ScanRange.
    start = PEOPLE.index(b"bob")
    out, _, _ = select(s3, people, "people.csv", "SELECT city, name FROM S3Object",
                       ScanRange={"Start": start, "End": start})
    assert out == b"new york,bob\n"


def test_select_scan_range_on_compressed_input_is_refused(s3, bucket):
    s3.put_object(Bucket=bucket, Key="c.gz", Body=gzip.compress(PEOPLE))
    with pytest.raises(ClientError) as e:
        select(s3, bucket, "c.gz", "SELECT * FROM S3Object",
               input={"CSV": {}, "CompressionType": "GZIP"}, ScanRange={"Start": 0, "End": 9})
    assert error_of(e) == ("UnsupportedScanRangeInput", 400)


def test_select_request_progress(s3, people):
    out, events, _ = select(s3, people, "people.csv", "SELECT * FROM S3Object",
                            RequestProgress={"Enabled": True})
    assert out == b"alice,30,paris\nbob,42,new york\ncarol,25,rome\n"
    stats = stats_of(events)
    assert stats == {"BytesScanned": 61, "BytesProcessed": 61, "BytesReturned": len(out)}
    progress = [e["Progress"]["Details"] for e in events if "Progress" in e]
    assert progress, events
    for name in ("BytesScanned", "BytesProcessed", "BytesReturned"):
        values = [p[name] for p in progress]
        assert values == sorted(values) and values[-1] <= stats[name], (name, progress)

    _, events, _ = select(s3, people, "people.csv", "SELECT * FROM S3Object")
    assert not [e for e in events if "Progress" in e]


def test_select_large_result_spans_many_records_events(s3, bucket):
    rows = [f"{i},{i * 7 % 1000},{'x' * (i % 50)},{hashlib.md5(str(i).encode()).hexdigest()}\n"
            for i in range(40_000)]
    data = "".join(rows).encode()
    s3.put_object(Bucket=bucket, Key="big.csv", Body=data)
    out, events, payloads = select(s3, bucket, "big.csv", "SELECT * FROM S3Object",
                                   input={"CSV": {}})
    assert out == data
    assert len(payloads) >= len(data) // MAX_RECORDS_PAYLOAD
    assert max(map(len, payloads)) <= MAX_RECORDS_PAYLOAD
    assert stats_of(events) == {"BytesScanned": len(data), "BytesProcessed": len(data),
                                "BytesReturned": len(data)}

    out, _, _ = select(s3, bucket, "big.csv",
                       "SELECT s._1 FROM S3Object s WHERE CAST(s._2 AS INT) = 0",
                       input={"CSV": {}})
    assert out == "".join(f"{i}\n" for i in range(0, 40_000, 1000)).encode()


def test_select_sql_errors(s3, people):
    cases = {
        "SELECT * FROM S3Object s, s": "ParseUnexpectedToken",
        "SELECT name FROM S3Object ORDER BY name": "ParseUnexpectedToken",
        "SELECT FROM S3Object": "ParseEmptySelect",
        "SELECT * FROM S3Object WHERE": "ParseExpectedExpression",
        "SELECT nosuch FROM S3Object": "EvaluatorBindingDoesNotExist",
    }
    for sql, code in cases.items():
        with pytest.raises(ClientError) as e:
            select(s3, people, "people.csv", sql)
        assert error_of(e) == (code, 400), sql
        assert e.value.response["Error"]["Message"], sql


def test_select_missing_object(s3, bucket):
    with pytest.raises(ClientError) as e:
        select(s3, bucket, "absent.csv", "SELECT * FROM S3Object")
    assert error_of(e) == ("NoSuchKey", 404)


def test_select_on_multipart_object(s3, bucket):
    """A select over an object assembled from parts sees one continuous CSV stream, also
    where a record straddles the part boundary."""
    rows = b"".join(f"{i},{i % 3}\n".encode() for i in range(700_000))
    cut = MIN_PART + 3  # inside a record
    parts = [rows[:cut], rows[cut:]]
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp.csv")
    etags = [s3.upload_part(Bucket=bucket, Key="mp.csv", UploadId=up["UploadId"], PartNumber=n,
                            Body=p)["ETag"] for n, p in enumerate(parts, start=1)]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp.csv", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [
                                     {"PartNumber": n, "ETag": t}
                                     for n, t in enumerate(etags, start=1)]})
    out, events, _ = select(s3, bucket, "mp.csv", "SELECT COUNT(*) FROM S3Object s "
                            "WHERE CAST(s._2 AS INT) = 1", input={"CSV": {}})
    assert out == f"{len(range(1, 700_000, 3))}\n".encode()
    assert stats_of(events)["BytesScanned"] == len(rows)
