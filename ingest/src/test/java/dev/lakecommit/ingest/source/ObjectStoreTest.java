package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.runtime.CheckpointedSource.SourceReader;
import dev.lakecommit.staging.testing.S3TestServer;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/** JSON lines from an in-process S3 server, through Iceberg's S3FileIO ({@code s3://}) and Hadoop S3A. */
class ObjectStoreTest {
  private static S3TestServer s3;

  @BeforeAll
  static void start() throws Exception {
    s3 = S3TestServer.start("input");
    try (S3Client client = s3.client()) {
      put(client, "in/b.jsonl", "{\"id\": 3}\n{\"id\": 4, \"name\": \"d\"}\n");
      put(client, "in/a.jsonl", "{\"id\": 1, \"name\": \"a\"}\n\n{\"id\": 2}");
      put(client, "in/sub/c.jsonl", "{\"id\": 5}\n");
      put(client, "in/_SUCCESS", "");
      put(client, "in2/z.jsonl", "{\"id\": 99}\n");
      put(client, "gone/a.jsonl", "{\"id\": 1}\n");
      put(client, "gone/b.jsonl", "{\"id\": 2}\n");
    }
  }

  @AfterAll
  static void stop() throws Exception {
    s3.close();
  }

  private static void put(S3Client client, String key, String text) {
    client.putObject(b -> b.bucket("input").key(key), RequestBody.fromString(text));
  }

  @Test
  void s3ThroughS3FileIO() throws IOException {
    try (FileSource source = FileSource.of("s3://input/in", null, null, s3.s3FileIOProperties(), null)) {
      assertThat(source.files()).containsExactly("s3://input/in/a.jsonl", "s3://input/in/b.jsonl",
          "s3://input/in/sub/c.jsonl");
      List<Record> all = Sources.assertResumesExactly(source);
      assertThat(all).extracting(r -> r.getField("id")).containsExactly(1L, 2L, 3L, 4L, 5L);
    }
    try (FileSource glob = FileSource.of("s3://input/in/*.jsonl", null, null, s3.s3FileIOProperties(), null)) {
      assertThat(glob.files()).containsExactly("s3://input/in/a.jsonl", "s3://input/in/b.jsonl");
    }
    try (FileSource one = FileSource.of("s3://input/in/b.jsonl", null, null, s3.s3FileIOProperties(), null)) {
      assertThat(Sources.readAll(one)).extracting(r -> r.getField("name")).containsExactly(null, "d");
    }
  }

  @Test
  void s3aThroughHadoop() throws IOException {
    try (FileSource source = FileSource.of("s3a://input/in", null, null, Map.of(), s3.s3aConfiguration())) {
      assertThat(source.files()).containsExactly("s3a://input/in/a.jsonl", "s3a://input/in/b.jsonl",
          "s3a://input/in/sub/c.jsonl");
      List<Record> all = Sources.assertResumesExactly(source);
      assertThat(all).extracting(r -> r.getField("id")).containsExactly(1L, 2L, 3L, 4L, 5L);
    }
  }

  @Test
  void anObjectDeletedAfterListingFailsTheReaderNotBadInput() throws IOException {
    try (FileSource source = FileSource.of("s3://input/gone", null, null, s3.s3FileIOProperties(), null)) {
      try (S3Client client = s3.client()) {
        client.deleteObject(b -> b.bucket("input").key("gone/a.jsonl"));
      }
      try (SourceReader<Record> reader = source.open(null)) {
        assertThatThrownBy(reader::next).isInstanceOf(InputReadException.class)
            .hasMessageStartingWith("Cannot read input file s3://input/gone/a.jsonl: it no longer exists (it "
                + "disappeared after the input was listed)");
      }
    }
  }
}
