"""PUT with STREAMING-AWS4-HMAC-SHA256-PAYLOAD: the body in aws-chunked encoding, each chunk
signed with the previous chunk's signature (what the AWS SDK for Java v1, and so Trino 405,
sends for PutObject). boto3 and the AWS CLI sign whole payloads, so the chunks are signed
here by hand, following AWS's "Signature Calculations for the Authorization Header:
Transferring Payload in Multiple Chunks"."""

import datetime
import hashlib
import hmac
import http.client
import urllib.parse

REGION = "us-east-1"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def _signing_key(secret: str, date: str) -> bytes:
    k = _hmac(("AWS4" + secret).encode(), date)
    k = _hmac(k, REGION)
    k = _hmac(k, "s3")
    return _hmac(k, "aws4_request")


def streaming_put(endpoint, access, secret, bucket, key, data, chunk_size, corrupt_chunk=None):
    """Sends the PUT; returns (status, body). `corrupt_chunk` flips a byte of that chunk's
    data after signing it."""
    url = urllib.parse.urlparse(endpoint)
    host = url.netloc
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    date = now.strftime("%Y%m%d")
    scope = f"{date}/{REGION}/s3/aws4_request"
    key_bytes = _signing_key(secret, date)

    chunks = [data[i : i + chunk_size] for i in range(0, len(data), chunk_size)] + [b""]
    # Every chunk's signature is 64 hex digits, so the encoded length is known up front.
    encoded_length = sum(
        len(f"{len(c):x};chunk-signature=") + 64 + 2 + len(c) + 2 for c in chunks
    )
    headers = {
        "content-encoding": "aws-chunked",
        "content-length": str(encoded_length),
        "host": host,
        "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
        "x-amz-date": amz_date,
        "x-amz-decoded-content-length": str(len(data)),
    }
    signed = ";".join(sorted(headers))
    canonical_headers = "".join(f"{k}:{headers[k]}\n" for k in sorted(headers))
    path = "/" + urllib.parse.quote(f"{bucket}/{key}")
    canonical = "\n".join(
        ["PUT", path, "", canonical_headers, signed, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"]
    )
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    seed = hmac.new(key_bytes, to_sign.encode(), hashlib.sha256).hexdigest()
    authorization = (
        f"AWS4-HMAC-SHA256 Credential={access}/{scope}, "
        f"SignedHeaders={signed}, Signature={seed}"
    )

    body = bytearray()
    previous = seed
    for i, chunk in enumerate(chunks):
        chunk_to_sign = "\n".join(
            [
                "AWS4-HMAC-SHA256-PAYLOAD",
                amz_date,
                scope,
                previous,
                EMPTY_SHA256,
                hashlib.sha256(chunk).hexdigest(),
            ]
        )
        signature = hmac.new(key_bytes, chunk_to_sign.encode(), hashlib.sha256).hexdigest()
        sent = bytearray(chunk)
        if i == corrupt_chunk and sent:
            sent[0] ^= 0xFF
        body += f"{len(chunk):x};chunk-signature={signature}\r\n".encode() + sent + b"\r\n"
        previous = signature
    assert len(body) == encoded_length

    conn = http.client.HTTPConnection(host, timeout=30)
    send_headers = {k: v for k, v in headers.items() if k != "host"}
    send_headers["authorization"] = authorization
    conn.request("PUT", path, body=bytes(body), headers=send_headers)
    resp = conn.getresponse()
    return resp.status, resp.read().decode(errors="replace")


def test_streaming_signed_put_round_trips(gateway, s3, bucket):
    data = bytes(range(256)) * 1000  # 256,000 bytes: four 64 KiB chunks, the last short
    status, body = streaming_put(
        gateway.endpoint, gateway.access_key, gateway.secret_key, bucket, "chunked.bin", data, 65536
    )
    assert status == 200, body
    got = s3.get_object(Bucket=bucket, Key="chunked.bin")
    assert got["Body"].read() == data
    assert got["ContentLength"] == len(data)
    assert got["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()


def test_streaming_put_with_a_tampered_chunk_is_refused(gateway, s3, bucket):
    data = b"a,1\n" * 20000
    status, body = streaming_put(
        gateway.endpoint,
        gateway.access_key,
        gateway.secret_key,
        bucket,
        "tampered.csv",
        data,
        16384,
        corrupt_chunk=2,
    )
    assert status == 403, body
    assert "SignatureDoesNotMatch" in body
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="tampered")
    assert listed.get("KeyCount", 0) == 0, "a refused upload must not leave an object"
