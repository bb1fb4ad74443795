// The AWS SDK for Java v2 against a Sift gateway: runs the cases of a JSON case file
// (written by tests/clients/test_sdks.py) and writes what the SDK saw as JSON, for the Python
// test to check. Nothing is asserted here: the same cases run through the JavaScript SDK
// (../js/sdk_select.cjs), and one Python test checks both against the same expectations.
//
//   java -cp "$(cat classpath)" SdkSelect.java CASES.json ANSWERS.json
//
// CASES.json: {"endpoint", "access_key", "secret_key", "region", "bucket",
//              "objects": [{"key", "file"}],
//              "selects": [{"name", "key", "sql", "input", "output", "progress"}],
//              "presign": {"key"}}
// where "input" and "output" are S3's InputSerialization / OutputSerialization in the shape
// of S3's API reference ({"CSV": {"FileHeaderInfo": "USE"}, "CompressionType": "GZIP"}).
//
// ANSWERS.json: {"puts": {key: etag}, "selects": {name: answer}, "presign": {"url", "status",
// "body"}} with, per select, the Records payloads (base64, concatenated), how many Records
// events there were and the largest one's size, Stats and each Progress as numbers, whether
// End came, and the error: its code, message, HTTP status and whether Records came before it.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.CompletionException;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.exception.SdkServiceException;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.model.CSVInput;
import software.amazon.awssdk.services.s3.model.CSVOutput;
import software.amazon.awssdk.services.s3.model.CompressionType;
import software.amazon.awssdk.services.s3.model.ExpressionType;
import software.amazon.awssdk.services.s3.model.FileHeaderInfo;
import software.amazon.awssdk.services.s3.model.InputSerialization;
import software.amazon.awssdk.services.s3.model.JSONInput;
import software.amazon.awssdk.services.s3.model.JSONOutput;
import software.amazon.awssdk.services.s3.model.JSONType;
import software.amazon.awssdk.services.s3.model.OutputSerialization;
import software.amazon.awssdk.services.s3.model.ParquetInput;
import software.amazon.awssdk.services.s3.model.Progress;
import software.amazon.awssdk.services.s3.model.RequestProgress;
import software.amazon.awssdk.services.s3.model.SelectObjectContentRequest;
import software.amazon.awssdk.services.s3.model.SelectObjectContentResponseHandler;
import software.amazon.awssdk.services.s3.model.Stats;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

public class SdkSelect {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: SdkSelect CASES.json ANSWERS.json");
            System.exit(2);
        }
        JsonNode cases = JSON.readTree(new File(args[0]));
        ObjectNode answers = JSON.createObjectNode();
        URI endpoint = URI.create(cases.get("endpoint").asText());
        Region region = Region.of(cases.get("region").asText());
        StaticCredentialsProvider credentials = StaticCredentialsProvider.create(
                AwsBasicCredentials.create(cases.get("access_key").asText(),
                        cases.get("secret_key").asText()));
        String bucket = cases.get("bucket").asText();

        // The SDK's defaults but for the endpoint, path style and no retries: a test must
        // see the gateway's first answer.
        try (S3AsyncClient s3 = S3AsyncClient.builder()
                .endpointOverride(endpoint)
                .region(region)
                .credentialsProvider(credentials)
                .forcePathStyle(true)
                .httpClientBuilder(NettyNioAsyncHttpClient.builder())
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .build()) {
            s3.createBucket(b -> b.bucket(bucket)).join();

            ObjectNode puts = answers.putObject("puts");
            for (JsonNode object : cases.get("objects")) {
                String key = object.get("key").asText();
                String etag = s3.putObject(p -> p.bucket(bucket).key(key),
                        AsyncRequestBody.fromFile(Path.of(object.get("file").asText())))
                        .join().eTag();
                puts.put(key, etag);
            }

            ObjectNode selects = answers.putObject("selects");
            for (JsonNode select : cases.get("selects")) {
                selects.set(select.get("name").asText(), select(s3, bucket, select));
            }
        }

        try (S3Presigner presigner = S3Presigner.builder()
                .endpointOverride(endpoint)
                .region(region)
                .credentialsProvider(credentials)
                .serviceConfiguration(
                        S3Configuration.builder().pathStyleAccessEnabled(true).build())
                .build()) {
            String key = cases.get("presign").get("key").asText();
            URI url = presigner.presignGetObject(p -> p
                    .signatureDuration(Duration.ofMinutes(10))
                    .getObjectRequest(g -> g.bucket(bucket).key(key)))
                    .url().toURI();
            HttpResponse<byte[]> got = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(url).GET().build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            ObjectNode presign = answers.putObject("presign");
            presign.put("url", url.toString());
            presign.put("status", got.statusCode());
            presign.put("body", Base64.getEncoder().encodeToString(got.body()));
        }

        JSON.writerWithDefaultPrettyPrinter().writeValue(new File(args[1]), answers);
    }

    /** One SelectObjectContent, every event recorded as the SDK hands it over. */
    static ObjectNode select(S3AsyncClient s3, String bucket, JsonNode c) {
        ByteArrayOutputStream records = new ByteArrayOutputStream();
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode progress = answer.putArray("progress");
        int[] recordsEvents = {0};
        int[] largestRecords = {0};
        answer.put("end", false);

        SelectObjectContentRequest.Builder request = SelectObjectContentRequest.builder()
                .bucket(bucket)
                .key(c.get("key").asText())
                .expression(c.get("sql").asText())
                .expressionType(ExpressionType.SQL)
                .inputSerialization(input(c.get("input")))
                .outputSerialization(output(c.get("output")));
        if (c.path("progress").asBoolean(false)) {
            request.requestProgress(RequestProgress.builder().enabled(true).build());
        }
        SelectObjectContentResponseHandler handler = SelectObjectContentResponseHandler.builder()
                .subscriber(SelectObjectContentResponseHandler.Visitor.builder()
                        .onRecords(e -> {
                            byte[] payload = e.payload().asByteArray();
                            recordsEvents[0]++;
                            largestRecords[0] = Math.max(largestRecords[0], payload.length);
                            records.writeBytes(payload);
                        })
                        .onStats(e -> answer.set("stats", stats(e.details())))
                        .onProgress(e -> progress.add(progress(e.details())))
                        .onEnd(e -> answer.put("end", true))
                        .build())
                .build();
        try {
            s3.selectObjectContent(request.build(), handler).join();
            answer.putNull("error");
        } catch (CompletionException failed) {
            ObjectNode error = answer.putObject("error");
            error.put("records_before", recordsEvents[0] > 0);
            if (failed.getCause() instanceof SdkServiceException service) {
                error.put("status", service.statusCode());
                if (service instanceof AwsServiceException aws
                        && aws.awsErrorDetails() != null) {
                    AwsErrorDetails details = aws.awsErrorDetails();
                    // An error *event* has no XML body, only the :error-code and :error-message
                    // headers (as AWS sends it), which SDK v2 leaves in the adapted response's
                    // headers instead of errorCode(): read them there, as a Java user must.
                    error.put("code", details.errorCode() != null ? details.errorCode()
                            : header(details, ":error-code"));
                    error.put("message", details.errorMessage() != null ? details.errorMessage()
                            : header(details, ":error-message"));
                } else {
                    error.put("code", (String) null);
                    error.put("message", service.getMessage());
                }
            } else {
                error.put("code", (String) null);
                error.put("message", String.valueOf(failed.getCause()));
            }
        }
        answer.put("records", Base64.getEncoder().encodeToString(records.toByteArray()));
        answer.put("records_events", recordsEvents[0]);
        answer.put("largest_records", largestRecords[0]);
        return answer;
    }

    static String header(AwsErrorDetails details, String name) {
        return details.sdkHttpResponse().firstMatchingHeader(name).orElse(null);
    }

    static ObjectNode stats(Stats s) {
        return counts(s.bytesScanned(), s.bytesProcessed(), s.bytesReturned());
    }

    static ObjectNode progress(Progress p) {
        return counts(p.bytesScanned(), p.bytesProcessed(), p.bytesReturned());
    }

    static ObjectNode counts(Long scanned, Long processed, Long returned) {
        ObjectNode n = JSON.createObjectNode();
        n.put("BytesScanned", scanned);
        n.put("BytesProcessed", processed);
        n.put("BytesReturned", returned);
        return n;
    }

    /** S3's InputSerialization from its API-reference shape; an unknown field is an error. */
    static InputSerialization input(JsonNode spec) {
        InputSerialization.Builder b = InputSerialization.builder();
        for (Map.Entry<String, JsonNode> f : fields(spec)) {
            JsonNode v = f.getValue();
            switch (f.getKey()) {
                case "CSV" -> {
                    CSVInput.Builder csv = CSVInput.builder();
                    for (Map.Entry<String, JsonNode> o : fields(v)) {
                        String s = o.getValue().asText();
                        switch (o.getKey()) {
                            case "FileHeaderInfo" -> csv.fileHeaderInfo(FileHeaderInfo.fromValue(s));
                            case "FieldDelimiter" -> csv.fieldDelimiter(s);
                            case "RecordDelimiter" -> csv.recordDelimiter(s);
                            case "QuoteCharacter" -> csv.quoteCharacter(s);
                            default -> throw unknown("CSV input", o.getKey());
                        }
                    }
                    b.csv(csv.build());
                }
                case "JSON" -> {
                    JSONInput.Builder json = JSONInput.builder();
                    for (Map.Entry<String, JsonNode> o : fields(v)) {
                        if (!o.getKey().equals("Type")) {
                            throw unknown("JSON input", o.getKey());
                        }
                        json.type(JSONType.fromValue(o.getValue().asText()));
                    }
                    b.json(json.build());
                }
                case "Parquet" -> b.parquet(ParquetInput.builder().build());
                case "CompressionType" -> b.compressionType(CompressionType.fromValue(v.asText()));
                default -> throw unknown("input", f.getKey());
            }
        }
        return b.build();
    }

    /** S3's OutputSerialization from its API-reference shape; an unknown field is an error. */
    static OutputSerialization output(JsonNode spec) {
        OutputSerialization.Builder b = OutputSerialization.builder();
        for (Map.Entry<String, JsonNode> f : fields(spec)) {
            switch (f.getKey()) {
                case "CSV" -> {
                    CSVOutput.Builder csv = CSVOutput.builder();
                    for (Map.Entry<String, JsonNode> o : fields(f.getValue())) {
                        String s = o.getValue().asText();
                        switch (o.getKey()) {
                            case "FieldDelimiter" -> csv.fieldDelimiter(s);
                            case "RecordDelimiter" -> csv.recordDelimiter(s);
                            default -> throw unknown("CSV output", o.getKey());
                        }
                    }
                    b.csv(csv.build());
                }
                case "JSON" -> {
                    JSONOutput.Builder json = JSONOutput.builder();
                    for (Map.Entry<String, JsonNode> o : fields(f.getValue())) {
                        if (!o.getKey().equals("RecordDelimiter")) {
                            throw unknown("JSON output", o.getKey());
                        }
                        json.recordDelimiter(o.getValue().asText());
                    }
                    b.json(json.build());
                }
                default -> throw unknown("output", f.getKey());
            }
        }
        return b.build();
    }

    static Iterable<Map.Entry<String, JsonNode>> fields(JsonNode node) {
        return node.properties();
    }

    static IllegalArgumentException unknown(String where, String field) {
        return new IllegalArgumentException("the case file's " + where + " field " + field
                + " is not mapped to the SDK here");
    }
}
