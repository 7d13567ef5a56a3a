package dev.lakecommit.staging;

import dev.lakecommit.staging.testing.S3TestServer;
import java.util.UUID;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** Checkpoints on S3: {@link FileIOBlobStore} over S3FileIO, against the in-process S3 server. */
class S3FileIOBlobStoreIT extends FileIOBlobStoreContract {
  private static S3TestServer s3;
  private static FileIO io;

  @BeforeAll
  static void start() throws Exception {
    s3 = S3TestServer.start("checkpoints");
    io = FileIOs.forLocation("s3://checkpoints/x", s3.s3FileIOProperties(), new org.apache.hadoop.conf.Configuration());
  }

  @AfterAll
  static void stop() throws Exception {
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
  protected String newDirectory() {
    return s3.location("checkpoints", "jobs/" + UUID.randomUUID());
  }
}
