// Hadoop's S3A connector selecting from a Sift gateway: opens one object through S3A's
// `openFile()` with its select options, the way Hadoop jobs ask S3 Select for a filtered
// file, and copies what S3A returns to standard output. tests/clients/test_s3a.py compares it
// with `sift select` on the same file.
//
//   java -cp "$(cat classpath)" S3aSelect.java s3a://BUCKET/KEY 'SQL' [fs.s3a.select.OPTION=VALUE ...]
//
// The store comes from the environment: SIFT_S3A_ENDPOINT (http://host:port),
// SIFT_S3A_ACCESS_KEY, SIFT_S3A_SECRET_KEY. A failed select prints S3A's exception (which names
// S3's error code) on standard error and exits 1.

import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FutureDataInputStreamBuilder;
import org.apache.hadoop.fs.Path;

public class S3aSelect {
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: S3aSelect s3a://BUCKET/KEY SQL [fs.s3a.select.OPTION=VALUE ...]");
            System.exit(2);
        }
        Path path = new Path(args[0]);
        Configuration conf = new Configuration();
        conf.set("fs.s3a.endpoint", env("SIFT_S3A_ENDPOINT"));
        conf.set("fs.s3a.endpoint.region", "us-east-1");
        conf.setBoolean("fs.s3a.path.style.access", true);
        conf.setBoolean("fs.s3a.connection.ssl.enabled", false);
        conf.set("fs.s3a.aws.credentials.provider",
                "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
        conf.set("fs.s3a.access.key", env("SIFT_S3A_ACCESS_KEY"));
        conf.set("fs.s3a.secret.key", env("SIFT_S3A_SECRET_KEY"));
        // The gateway's first answer, not a retried one; and S3's error with the SQL in it.
        conf.setInt("fs.s3a.attempts.maximum", 1);
        conf.setInt("fs.s3a.retry.limit", 1);
        conf.setBoolean("fs.s3a.select.errors.include.sql", true);

        try (FileSystem fs = FileSystem.newInstance(URI.create(args[0]), conf)) {
            FutureDataInputStreamBuilder open = fs.openFile(path).must("fs.s3a.select.sql", args[1]);
            for (int i = 2; i < args.length; i++) {
                int eq = args[i].indexOf('=');
                if (eq < 0) {
                    System.err.println("not OPTION=VALUE: " + args[i]);
                    System.exit(2);
                }
                open.must(args[i].substring(0, eq), args[i].substring(eq + 1));
            }
            try (FSDataInputStream in = open.build().get()) {
                in.transferTo(System.out);
                System.out.flush();
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }

    static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            System.err.println(name + " is not set");
            System.exit(2);
        }
        return v;
    }
}
