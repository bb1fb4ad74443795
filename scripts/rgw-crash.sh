#!/usr/bin/env bash
# One S3 Select request that ends Ceph RGW 18.2.7's radosgw process: a WHERE with an IN list
# of 256 values. 255 values are answered; from 256 on, radosgw aborts (SIGABRT, "Caught signal
# (Aborted)" in its log, an exception escaping in the request's coroutine) and every client
# of that gateway loses its connection. The object, the values and their width do not matter
# (a 3-line object and 1-digit or 7-digit values crash alike); the count does. See
# docs/gateway.md, "Why Sift in front of RGW".
#
#   scripts/rgw-crash.sh [--values N] [--endpoint URL --access-key K --secret-key S]
#
# The endpoint and keys default to SIFT_RGW_ENDPOINT, SIFT_RGW_ACCESS_KEY and
# SIFT_RGW_SECRET_KEY (the env file of scripts/ceph-rgw.sh). It writes the object
# s3://sift-crash/crash.csv (creating the bucket), sends the select with curl's own SigV4
# signing (the request body is exactly what is shown below), and then asks whether the
# endpoint still answers HTTP. It prints "crashed" or "survived" and exits 0 for survived,
# 1 for crashed, 2 when it could not run the check.
set -euo pipefail

values=256
endpoint=${SIFT_RGW_ENDPOINT:-}
access=${SIFT_RGW_ACCESS_KEY:-}
secret=${SIFT_RGW_SECRET_KEY:-}
usage() {
    echo "usage: $0 [--values N] [--endpoint URL --access-key K --secret-key S]" >&2
    exit 2
}
while (($#)); do
    case $1 in
    --values) values=${2:-}; shift 2 || usage ;;
    --endpoint) endpoint=${2:-}; shift 2 || usage ;;
    --access-key) access=${2:-}; shift 2 || usage ;;
    --secret-key) secret=${2:-}; shift 2 || usage ;;
    *) usage ;;
    esac
done
[[ $values =~ ^[0-9]+$ ]] && ((values > 0)) || { echo "rgw-crash: --values must be a positive integer" >&2; exit 2; }
[[ -n $endpoint && -n $access && -n $secret ]] ||
    { echo "rgw-crash: no endpoint or keys (set SIFT_RGW_* or pass --endpoint --access-key --secret-key)" >&2; exit 2; }
command -v curl >/dev/null || { echo "rgw-crash: needs curl" >&2; exit 2; }

# curl >= 7.75 signs with SigV4; RGW wants the payload hash header and `select=` with a value.
s3() {
    curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$access:$secret" \
        -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$@"
}

# Does the endpoint answer HTTP at all (any status)?
answers() {
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$endpoint/" 2>/dev/null) || true
    [[ $code != 000 && -n $code ]]
}

answers || { echo "rgw-crash: $endpoint does not answer before the check" >&2; exit 2; }
s3 -o /dev/null -X PUT "$endpoint/sift-crash" || true # exists already: fine
code=$(s3 -o /dev/null -w '%{http_code}' -X PUT --data-binary $'1|a|\n2|b|\n3|c|\n' \
    "$endpoint/sift-crash/crash.csv")
[[ $code == 200 ]] || { echo "rgw-crash: PUT of the object answered $code" >&2; exit 2; }

list=$(seq 1 "$values" | paste -sd, - | sed 's/,/, /g')
body="<SelectObjectContentRequest xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Expression>SELECT s._1 FROM S3Object s WHERE CAST(s._1 AS INT) IN ($list)</Expression><ExpressionType>SQL</ExpressionType><InputSerialization><CSV><FileHeaderInfo>NONE</FileHeaderInfo><FieldDelimiter>|</FieldDelimiter></CSV><CompressionType>NONE</CompressionType></InputSerialization><OutputSerialization><CSV/></OutputSerialization></SelectObjectContentRequest>"
status=$(s3 -o /dev/null -w '%{http_code}' --max-time 60 -H 'Content-Type: application/xml' \
    --data-binary "$body" "$endpoint/sift-crash/crash.csv?select=&select-type=2" 2>/dev/null) || true
sleep 1 # a dying radosgw may still accept for a moment
if answers; then
    echo "survived (a select with an IN list of $values values answered HTTP $status)"
    exit 0
fi
echo "crashed (a select with an IN list of $values values; $endpoint no longer answers)"
exit 1
