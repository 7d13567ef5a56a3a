package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.staging.testing.S3TestServer;
import java.net.URI;
import java.util.Map;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import software.amazon.awssdk.services.s3.S3Client;

/** The staging writer on S3 through Iceberg's S3FileIO, against an in-process S3 server. */
class S3StagingWriterIT extends StagingWriterContract {
  static final String BUCKET = "staging";

  private static S3TestServer s3;
  private static S3FileIO io;

  @BeforeAll
  static void startServer() throws Exception {
    s3 = S3TestServer.start(BUCKET);
    Map<String, String> props = s3.s3FileIOProperties();
    // Multipart from one part size on (the smallest S3 allows), so a ~6 MiB file is uploaded in parts.
    props.put("s3.multipart.part-size-bytes", String.valueOf(MULTIPART_SIZE));
    props.put("s3.multipart.threshold", "1.0");
    io = new S3FileIO();
    io.initialize(props);
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (io != null) {
      io.close();
    }
    if (s3 != null) {
      s3.close();
    }
  }

  @Override
  protected FileIO io() {
    return io;
  }

  @Override
  protected String newRoot(String testName) {
    return s3.location(BUCKET, unique(testName));
  }

  @Override
  protected int fanoutPartitions() {
    return 64;
  }

  @Override
  protected int fanoutLimit() {
    return 8;
  }

  @Override
  protected void assertUploadedInParts(String location, int parts) {
    assertMultipartETag(s3, location, parts);
  }

  /** A multipart upload's ETag is {@code <md5 of part md5s>-<parts>}; a single PUT's has no suffix. */
  static void assertMultipartETag(S3TestServer server, String location, int parts) {
    URI uri = URI.create(location);
    try (S3Client client = server.client()) {
      String eTag = client.headObject(b -> b.bucket(uri.getHost()).key(uri.getPath().substring(1))).eTag();
      assertThat(eTag).as("ETag of %s", location).matches("\"?[0-9a-f]+-" + parts + "\"?");
    }
  }
}
