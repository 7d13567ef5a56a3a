package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.ChildJvm;
import dev.lakecommit.hive.testing.EmbeddedPostgres;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.staging.testing.FaultInjectingS3Proxy;
import dev.lakecommit.staging.testing.FaultRule;
import dev.lakecommit.staging.testing.FaultRule.Fault;
import dev.lakecommit.staging.testing.S3TestServer;
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

/**
 * Credentials never leak: for every target, a secret is planted in the tool's configuration (the S3 secret key,
 * the JDBC password, a catalog token), the real tool runs in a child JVM with its logs at INFO — an ingest,
 * {@code status --json}, and a run that fails while the secret is configured — and then the secret is searched
 * for in everything: the logs and messages of every run, every file the tool wrote (table metadata with snapshot
 * summaries and table properties, checkpoint files, data), the catalog's database and the metastore's table and
 * partition parameters.
 */
class PlantedSecretIT {
  private static final String TOKEN = "planted-token-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
  private static final String PASSWORD = "planted-pw-" + Long.toHexString(ThreadLocalRandom.current().nextLong());

  @TempDir Path dir;
  private final List<String> outputs = new ArrayList<>();

  private Path input() throws Exception {
    Path input = dir.resolve("in/events.jsonl");
    Files.createDirectories(input.getParent());
    try (BufferedWriter out = Files.newBufferedWriter(input)) {
      for (int i = 0; i < 3000; i++) {
        out.write("{\"id\": " + i + ", \"region\": \"r" + (i % 3) + "\"}\n");
      }
    }
    return input;
  }

  /** Runs the tool in a child JVM with INFO logs; returns its exit code and keeps everything it printed. */
  private int tool(List<String> args) throws Exception {
    List<String> command = ChildJvm.java("512m");
    command.addAll(List.of("-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
        "-cp", System.getProperty("java.class.path"), Main.class.getName()));
    command.addAll(args);
    Path log = dir.resolve("run-" + outputs.size() + ".log");
    long start = System.nanoTime();
    Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    assertThat(process.waitFor(5, TimeUnit.MINUTES)).as("the tool ends").isTrue();
    System.out.printf("PlantedSecretIT: %s %s exit %d after %d ms%n", args.get(0), log.getFileName(),
        process.exitValue(), TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    outputs.add(Files.readString(log));
    return process.exitValue();
  }

  private List<String> ingestArgs(Path input, String job) {
    return new ArrayList<>(List.of("ingest", "--input", input.toString(), "--table", "ops.events",
        "--partition-by", "region", "--job-id", job, "--checkpoint-every-records", "1000"));
  }

  private void runAll(List<String> target, String job, String checkpointDir, Runnable breakIt, List<String> broken)
      throws Exception {
    runAll(target, List.of(), job, checkpointDir, breakIt, broken);
  }

  private void runAll(List<String> target, List<String> ingestOnly, String job, String checkpointDir,
      Runnable breakIt, List<String> broken) throws Exception {
    Path input = input();
    List<String> ingest = ingestArgs(input, job);
    ingest.addAll(List.of("--checkpoint-dir", checkpointDir));
    ingest.addAll(target);
    ingest.addAll(ingestOnly);
    assertThat(tool(ingest)).as(String.join("\n", outputs)).isZero();
    List<String> status = new ArrayList<>(List.of("status", "--table", "ops.events", "--job-id", job,
        "--checkpoint-dir", checkpointDir, "--json"));
    status.addAll(target);
    assertThat(tool(status)).as(String.join("\n", outputs)).isZero();
    assertThat(outputs.get(1)).contains("\"latest-checkpoint\" : 3");

    breakIt.run();
    List<String> failing = ingestArgs(input, job + "-again");
    failing.addAll(List.of("--checkpoint-dir", checkpointDir + "-again", "--stall-timeout", "30s",
        "--commit-retries", "2"));
    failing.addAll(broken);
    failing.addAll(ingestOnly);
    assertThat(tool(failing)).as(String.join("\n", outputs)).isNotZero();
    assertThat(outputs.get(2)).contains("error: ");
  }

  private void assertNowhere(String secret, List<String> texts) {
    for (String output : outputs) {
      assertThat(output).as("a run's output").doesNotContain(secret);
    }
    for (String text : texts) {
      assertThat(text).doesNotContain(secret);
    }
  }

  /** Every file under {@code dir}, as text (binary files too: a secret would show as its bytes). */
  private List<String> localFiles() throws Exception {
    List<String> contents = new ArrayList<>();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path file : files.filter(Files::isRegularFile).toList()) {
        if (!file.getFileName().toString().startsWith("run-")) {
          contents.add(file + "\n" + new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1));
        }
      }
    }
    assertThat(contents).isNotEmpty();
    return contents;
  }

  private static List<String> objects(S3TestServer s3, String bucket) {
    List<String> contents = new ArrayList<>();
    try (S3Client client = s3.client()) {
      client.listObjectsV2Paginator(b -> b.bucket(bucket)).contents().forEach(o -> {
        ResponseBytes<GetObjectResponse> bytes = client.getObjectAsBytes(b -> b.bucket(bucket).key(o.key()));
        contents.add(o.key() + "\n" + new String(bytes.asByteArray(), StandardCharsets.ISO_8859_1));
      });
    }
    assertThat(contents).isNotEmpty();
    return contents;
  }

  private static List<String> s3Catalog(S3TestServer s3, String endpoint, Path dir) {
    List<String> args = new ArrayList<>(List.of("-C", "type=jdbc", "-C", "uri=jdbc:sqlite:" + dir.resolve("catalog.db"),
        "-C", "jdbc.schema-version=V1", "-C", "warehouse=" + s3.location("lake", "warehouse"),
        "-C", "io-impl=org.apache.iceberg.aws.s3.S3FileIO", "-C", "token=" + TOKEN));
    for (Map.Entry<String, String> property : s3.s3FileIOProperties().entrySet()) {
      String value = property.getKey().equals("s3.endpoint") ? endpoint : property.getValue();
      args.addAll(List.of("-C", property.getKey() + "=" + value));
    }
    return args;
  }

  @Test
  void icebergOnS3() throws Exception {
    try (S3TestServer s3 = S3TestServer.start("lake");
        // writes only: a refused read of the table's metadata is retried by Iceberg itself for about 90 s
        FaultInjectingS3Proxy refusing = FaultInjectingS3Proxy.start(s3, 1,
            FaultRule.builder().methods("PUT", "POST").faults(Fault.ACCESS_DENIED).build())) {
      runAll(s3Catalog(s3, s3.endpoint().toString(), dir), "s3-secret", s3.location("lake", "checkpoints/s3"),
          () -> { }, s3Catalog(s3, refusing.endpoint().toString(), dir));
      List<String> texts = new ArrayList<>(objects(s3, "lake"));
      texts.addAll(localFiles());
      assertNowhere(S3TestServer.SECRET_KEY, texts);
      assertNowhere(TOKEN, texts);
    }
  }

  @Test
  void icebergJdbcCatalogOnPostgres() throws Exception {
    try (EmbeddedPostgres pg = EmbeddedPostgres.startNew()) {
      String url = pg.createDatabase("catalog");
      List<String> catalog = List.of("-C", "type=jdbc", "-C", "uri=" + url, "-C", "jdbc.user=" + pg.user(),
          "-C", "jdbc.password=" + PASSWORD, "-C", "token=" + TOKEN,
          "-C", "warehouse=" + dir.resolve("wh").toUri());
      runAll(catalog, "pg-secret", dir.resolve("checkpoints").toString(), pg::stop, catalog);
      pg.start();
      List<String> texts = new ArrayList<>(localFiles());
      try (Connection conn = pg.connect("catalog"); Statement statement = conn.createStatement()) {
        for (String table : List.of("iceberg_tables", "iceberg_namespace_properties")) {
          try (ResultSet rows = statement.executeQuery("SELECT * FROM " + table)) {
            StringBuilder text = new StringBuilder(table);
            while (rows.next()) {
              for (int c = 1; c <= rows.getMetaData().getColumnCount(); c++) {
                text.append(' ').append(rows.getString(c));
              }
            }
            texts.add(text.toString());
          }
        }
      }
      assertNowhere(PASSWORD, texts);
      assertNowhere(TOKEN, texts);
    }
  }

  @Test
  void icebergHiveCatalog() throws Exception {
    try (HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby()) {
      List<String> catalog = List.of("-C", "type=hive", "-C", "uri=" + hms.uri(), "-C", "token=" + TOKEN,
          "-C", "warehouse=" + dir.resolve("wh").toUri());
      runAll(catalog, "hms-secret", dir.resolve("checkpoints").toString(), hms::stop, catalog);
      hms.start();
      List<String> texts = new ArrayList<>(localFiles());
      HiveMetaStoreClient client = hms.newClient();
      try {
        texts.add(client.getTable("ops", "events").toString());
      } finally {
        client.close();
      }
      assertNowhere(TOKEN, texts);
    }
  }

  @Test
  void hiveTableOnS3ThroughS3a() throws Exception {
    String bucket = "lc-secret-" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    try (S3TestServer s3 = S3TestServer.start(bucket)) {
      Configuration s3a = s3.s3aConfiguration();
      HiveMetastoreServer.Builder builder = HiveMetastoreServer.builder().derby();
      List<String> target = new ArrayList<>();
      for (String key : HiveS3IngestIT.S3A_KEYS) {
        builder.serverConf(key, s3a.get(key));
        target.addAll(List.of("-C", key + "=" + s3a.get(key)));
      }
      try (HiveMetastoreServer hms = builder.start()) {
        target.addAll(List.of("--target", "hive", "--metastore-uri", hms.uri()));
        runAll(target, List.of("--table-location", s3.s3aLocation(bucket, "tables/events"), "--external"),
            "hive-secret", s3.s3aLocation(bucket, "checkpoints/hive"), hms::stop, target);
        hms.start();
        List<String> texts = new ArrayList<>(objects(s3, bucket));
        texts.addAll(localFiles());
        HiveMetaStoreClient client = hms.newClient();
        try {
          texts.add(client.getTable("ops", "events").toString());
          for (Partition partition : client.listPartitions("ops", "events", (short) -1)) {
            texts.add(partition.toString());
          }
        } finally {
          client.close();
        }
        assertNowhere(S3TestServer.SECRET_KEY, texts);
      }
    }
  }
}
