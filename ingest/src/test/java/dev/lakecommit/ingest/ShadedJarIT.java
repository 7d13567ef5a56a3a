package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.KafkaBroker;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.staging.testing.S3TestServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tool as users run it: {@code java -jar target/lakecommit.jar} (what {@code bin/lakecommit} runs), a child JVM
 * with nothing but the shaded jar on its class path. The other CLI tests run the tool from the test class path, so
 * only this one finds a class, service file or native library the shading dropped or clobbered, on each way in: the
 * README's default run (local warehouse, JDBC catalog on SQLite), Iceberg on S3 (S3FileIO), an Iceberg table in a
 * Hive catalog, a Hive table through the metastore, and a Kafka topic.
 */
class ShadedJarIT {
  private static final Path JAR = Path.of("target", "lakecommit.jar").toAbsolutePath();
  private static final String SAMPLE = Path.of("../examples/orders.jsonl").toAbsolutePath().normalize().toString();

  @TempDir Path dir;

  /** Output and exit code of one run of the jar, in {@code dir}. */
  private record Run(int exitCode, String out) {
    @Override
    public String toString() {
      return "exit " + exitCode + ":\n" + out;
    }
  }

  private Run jar(String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx512m", "-XX:TieredStopAtLevel=1", "-jar", JAR.toString()));
    command.addAll(List.of(args));
    return run(command, Map.of());
  }

  /** {@code bin/lakecommit} with {@code args}, this JVM's java first on the path, and {@code env} set. */
  private Run script(Map<String, String> env, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of("bash", JAR.getParent().getParent().getParent().resolve("bin")
        .resolve("lakecommit").toString()));
    command.addAll(List.of(args));
    Map<String, String> all = new java.util.HashMap<>(env);
    all.put("PATH", Path.of(System.getProperty("java.home"), "bin") + ":" + System.getenv("PATH"));
    return run(command, all);
  }

  private Run run(List<String> command, Map<String, String> env) throws Exception {
    Path log = Files.createTempFile(dir, "run-", ".log");
    ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
        .redirectOutput(log.toFile());
    builder.environment().putAll(env);
    Process process = builder.start();
    if (!process.waitFor(3, TimeUnit.MINUTES)) {
      process.destroyForcibly().waitFor();
    }
    return new Run(process.exitValue(), Files.readString(log));
  }

  /** {@code command}, then the options all its runs share, then its own. */
  private static String[] with(List<String> shared, String command, String... more) {
    List<String> all = new ArrayList<>(List.of(command));
    all.addAll(shared);
    all.addAll(List.of(more));
    return all.toArray(String[]::new);
  }

  /**
   * {@code bin/lakecommit} archives the tool's classes once per build of the jar (class-data sharing) and starts
   * later runs from that archive: the tool's classes come from it, what the tool prints is the same, and the archive
   * holds what a file job and a Kafka job load (catalog, Parquet writer, Kafka consumer).
   */
  @Test
  void binLakecommitStartsFromAnArchiveOfTheToolsClasses() throws Exception {
    Path archive = JAR.resolveSibling("lakecommit.jsa");
    Files.deleteIfExists(archive);
    Files.deleteIfExists(JAR.resolveSibling("lakecommit.jsa.failed"));
    Run first = script(Map.of(), "--version");
    assertThat(first.exitCode()).as("%s", first).isZero();
    assertThat(first.out()).contains("Archiving the tool's classes");
    assertThat(archive).as("%s", first).isNotEmptyFile();

    String loads = "-Xlog:class+load=info";
    Run shared = script(Map.of("LAKECOMMIT_JAVA_OPTS", loads), "ingest", "--help");
    Run plain = script(Map.of("LAKECOMMIT_JAVA_OPTS", loads, "LAKECOMMIT_CDS", "off"), "ingest", "--help");
    assertThat(shared.exitCode()).as("%s", shared).isZero();
    assertThat(shared.out()).doesNotContain("Archiving");
    assertThat(toolClassesShared(shared)).as("the tool's classes loaded from the archive").isPositive();
    assertThat(toolClassesShared(plain)).isZero();
    assertThat(withoutClassLoads(shared.out())).isEqualTo(withoutClassLoads(plain.out())).contains("--input");

    Run listed = run(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:SharedArchiveFile=" + archive, "-XX:+PrintSharedArchiveAndExit", "-cp", JAR.toString()), Map.of());
    assertThat(listed.out()).as("classes in the archive")
        .contains(": org.apache.iceberg.jdbc.JdbcCatalog ", ": org.apache.parquet.hadoop.ParquetFileWriter ",
            ": org.apache.kafka.clients.consumer.KafkaConsumer ", ": dev.lakecommit.ingest.cli.KafkaIngest ");
  }

  private static long toolClassesShared(Run run) {
    return run.out().lines().filter(line -> line.contains(" dev.lakecommit.")
        && line.contains("source: shared objects file")).count();
  }

  private static String withoutClassLoads(String out) {
    return out.lines().filter(line -> !line.contains("[class,load]")).collect(java.util.stream.Collectors.joining("\n"));
  }

  @Test
  void theReadmeRunOnTheDefaultLocalWarehouse() throws Exception {
    assertThat(JAR).as("the shaded jar, built by the package phase").exists();
    Run help = jar("ingest", "--help");
    assertThat(help.exitCode()).as("%s", help).isZero();
    assertThat(help.out()).contains("--input").doesNotContain("WARN");

    Run ingest = jar("ingest", "--input", SAMPLE, "--table", "demo.orders", "--partition-by", "day(ordered_at)");
    assertThat(ingest.exitCode()).as("%s", ingest).isZero();
    assertThat(ingest.out()).contains("Committed 2,000 rows");
    assertThat(dir.resolve("lakecommit-warehouse")).isDirectory();
    Run again = jar("ingest", "--input", SAMPLE, "--table", "demo.orders", "--partition-by", "day(ordered_at)");
    assertThat(again.exitCode()).as("%s", again).isZero();
    assertThat(again.out()).contains("Nothing new to commit");

    Run verify = jar("verify", "--source", SAMPLE, "--table", "demo.orders", "--key", "order_id", "--event-time",
        "ordered_at", "--json");
    assertThat(verify.exitCode()).as("%s", verify).isZero();
    assertThat(verify.out()).contains("\"tableRows\" : 2000").contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");
  }

  @Test
  void icebergOnS3AndInAHiveCatalogAndAHiveTable() throws Exception {
    try (S3TestServer s3 = S3TestServer.start("lake"); HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby()) {
      List<String> onS3 = new ArrayList<>(List.of("--table", "s3.orders", "-C", "type=jdbc", "-C",
          "uri=jdbc:sqlite:" + dir.resolve("catalog.db"), "-C", "warehouse=" + s3.location("lake", "warehouse"),
          "-C", "io-impl=org.apache.iceberg.aws.s3.S3FileIO"));
      for (Map.Entry<String, String> property : s3.s3FileIOProperties().entrySet()) {
        onS3.addAll(List.of("-C", property.getKey() + "=" + property.getValue()));
      }
      Run s3Run = jar(with(onS3, "ingest", "--input", SAMPLE, "--checkpoint-dir",
          s3.location("lake", "checkpoints/orders"), "--partition-by", "region"));
      assertThat(s3Run.exitCode()).as("%s", s3Run).isZero();
      Run s3Verify = jar(with(onS3, "verify", "--source", SAMPLE, "--key", "order_id"));
      assertThat(s3Verify.exitCode()).as("%s", s3Verify).isZero();

      Run hiveCatalog = jar("ingest", "--input", SAMPLE, "--table", "cat.orders", "-C", "type=hive", "-C",
          "uri=" + hms.uri(), "-C", "warehouse=" + dir.resolve("hive-catalog").toUri(), "--checkpoint-dir",
          dir.resolve("checkpoints-cat").toString());
      assertThat(hiveCatalog.exitCode()).as("%s", hiveCatalog).isZero();

      List<String> hive = List.of("--table", "shop.orders", "--target", "hive", "--metastore-uri", hms.uri(),
          "-C", "warehouse=" + dir.resolve("hive-wh").toUri());
      Run hiveTable = jar(with(hive, "ingest", "--input", SAMPLE, "--partition-by", "region", "--checkpoint-dir",
          dir.resolve("checkpoints-hive").toString()));
      assertThat(hiveTable.exitCode()).as("%s", hiveTable).isZero();
      Run hiveVerify = jar(with(hive, "verify", "--source", SAMPLE, "--key", "order_id"));
      assertThat(hiveVerify.exitCode()).as("%s", hiveVerify).isZero();
    }
  }

  @Test
  void aKafkaTopicUntilItsEnd() throws Exception {
    try (KafkaBroker broker = KafkaBroker.inProcess(dir.resolve("kafka"))) {
      broker.createTopic("events", 2);
      KafkaTopics.produce(broker, "events", 0, 500);
      String input = "kafka://" + broker.bootstrapServers() + "/events";
      Run ingest = jar("ingest", "--input", input, "--table", "k.events", "--schema", "id long, kind string, ts long",
          "--until", "end", "--checkpoint-every-records", "200", "--warehouse", dir.resolve("wh").toString());
      assertThat(ingest.exitCode()).as("%s", ingest).isZero();
      assertThat(ingest.out()).contains("Committed 500 rows");
      Run verify = jar("verify", "--source", input, "--table", "k.events", "--key", "id", "--warehouse",
          dir.resolve("wh").toString());
      assertThat(verify.exitCode()).as("%s", verify).isZero();
    }
  }
}
