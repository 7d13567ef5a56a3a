package dev.lakecommit.staging;

import dev.lakecommit.staging.testing.S3TestServer;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The staging writer on {@code s3a://} paths through HadoopFileIO and Hadoop's S3A file system. */
class S3aStagingWriterIT extends StagingWriterContract {
  static final String BUCKET = "staging-s3a";

  private static S3TestServer s3;
  private static FileIO io;

  @BeforeAll
  static void startServer() throws Exception {
    s3 = S3TestServer.start(BUCKET);
    Configuration conf = s3.s3aConfiguration();
    conf.setLong("fs.s3a.multipart.size", MULTIPART_SIZE);
    conf.setLong("fs.s3a.multipart.threshold", MULTIPART_SIZE);
    io = FileIOs.forLocation(s3.s3aLocation(BUCKET, "x"), java.util.Map.of(), conf);
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
    return s3.s3aLocation(BUCKET, unique(testName));
  }

  @Override
  protected int fanoutPartitions() {
    return 48;
  }

  @Override
  protected int fanoutLimit() {
    return 8;
  }

  @Override
  protected void assertUploadedInParts(String location, int parts) {
    S3StagingWriterIT.assertMultipartETag(s3, location.replaceFirst("^s3a:", "s3:"), parts);
  }
}
