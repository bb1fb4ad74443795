// The AWS SDK for JavaScript v3 against a Sift gateway: runs the cases of a JSON case file
// (written by tests/clients/test_sdks.py) and writes what the SDK saw as JSON, for the Python
// test to check. Nothing is asserted here: the same cases run through the Java SDK
// (../java/SdkSelect.java), and one Python test checks both against the same expectations.
// The case and answer files are described in SdkSelect.java; the SDK takes S3's
// InputSerialization / OutputSerialization shapes as they are.
//
//   NODE_PATH=DIR/node_modules node sdk_select.cjs CASES.json ANSWERS.json
"use strict";

const fs = require("node:fs");
const {
  S3Client,
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  SelectObjectContentCommand,
} = require("@aws-sdk/client-s3");
const { getSignedUrl } = require("@aws-sdk/s3-request-presigner");

function counts(details) {
  return {
    BytesScanned: details.BytesScanned,
    BytesProcessed: details.BytesProcessed,
    BytesReturned: details.BytesReturned,
  };
}

/** One SelectObjectContent, every event recorded as the SDK hands it over. */
async function select(s3, bucket, c) {
  const answer = { progress: [], end: false, records_events: 0, largest_records: 0, error: null };
  const chunks = [];
  try {
    const out = await s3.send(
      new SelectObjectContentCommand({
        Bucket: bucket,
        Key: c.key,
        Expression: c.sql,
        ExpressionType: "SQL",
        InputSerialization: c.input,
        OutputSerialization: c.output,
        RequestProgress: c.progress ? { Enabled: true } : undefined,
      }),
    );
    for await (const event of out.Payload) {
      if (event.Records) {
        answer.records_events += 1;
        answer.largest_records = Math.max(answer.largest_records, event.Records.Payload.length);
        chunks.push(Buffer.from(event.Records.Payload));
      } else if (event.Stats) {
        answer.stats = counts(event.Stats.Details);
      } else if (event.Progress) {
        answer.progress.push(counts(event.Progress.Details));
      } else if (event.End) {
        answer.end = true;
      }
    }
  } catch (e) {
    // A service error carries S3's code as its name (HTTP errors and error events alike).
    answer.error = {
      code: e.Code ?? e.name ?? null,
      message: e.message ?? String(e),
      status: e.$metadata?.httpStatusCode ?? null,
      records_before: answer.records_events > 0,
    };
  }
  answer.records = Buffer.concat(chunks).toString("base64");
  return answer;
}

async function main() {
  if (process.argv.length !== 4) {
    console.error("usage: node sdk_select.cjs CASES.json ANSWERS.json");
    process.exit(2);
  }
  const [casesPath, answersPath] = process.argv.slice(2);
  const cases = JSON.parse(fs.readFileSync(casesPath, "utf8"));
  const bucket = cases.bucket;
  // The SDK's defaults but for the endpoint, path style and no retries: a test must see the
  // gateway's first answer.
  const s3 = new S3Client({
    endpoint: cases.endpoint,
    region: cases.region,
    credentials: { accessKeyId: cases.access_key, secretAccessKey: cases.secret_key },
    forcePathStyle: true,
    maxAttempts: 1,
  });
  const answers = { puts: {}, selects: {} };

  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  for (const object of cases.objects) {
    const put = await s3.send(
      new PutObjectCommand({ Bucket: bucket, Key: object.key, Body: fs.readFileSync(object.file) }),
    );
    answers.puts[object.key] = put.ETag;
  }
  for (const c of cases.selects) {
    answers.selects[c.name] = await select(s3, bucket, c);
  }

  const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: bucket, Key: cases.presign.key }), {
    expiresIn: 600,
  });
  const got = await fetch(url);
  answers.presign = {
    url,
    status: got.status,
    body: Buffer.from(await got.arrayBuffer()).toString("base64"),
  };

  s3.destroy();
  fs.writeFileSync(answersPath, JSON.stringify(answers, null, 2));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
