package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The tool as a user runs it: the README's sample ingest, reruns, help, and mistakes. */
class CliTest {
  static final Path SAMPLE = Path.of("../examples/orders.jsonl");

  @TempDir Path dir;

  private String[] ingest(String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", SAMPLE.toString(), "--table", "demo.orders",
        "--warehouse", dir.resolve("wh").toString(), "--checkpoint-every-records", "500"));
    args.addAll(List.of(extra));
    return args.toArray(String[]::new);
  }

  @Test
  void theSampleIngestCommitsOncePerCheckpointAndARerunCommitsNothingNew() throws Exception {
    CliRun first = CliRun.of(ingest());
    assertThat(first.exitCode()).as(first.toString()).isZero();
    assertThat(first.out()).contains("Committed 2,000 rows in 4 checkpoint(s) (4 commit(s)").contains("snapshot ");

    CliRun second = CliRun.of(ingest());
    assertThat(second.exitCode()).as(second.toString()).isZero();
    assertThat(second.out()).contains("Nothing new to commit").contains("checkpoint 4");

    CliRun verify = CliRun.of("verify", "--source", SAMPLE.toString(), "--table", "demo.orders",
        "--warehouse", dir.resolve("wh").toString(), "--key", "order_id", "--event-time", "ordered_at");
    assertThat(verify.exitCode()).as(verify.toString()).isZero();

    CliRun status = CliRun.of("status", "--table", "demo.orders", "--warehouse", dir.resolve("wh").toString(),
        "--json");
    assertThat(status.exitCode()).as(status.toString()).isZero();
    assertThat(status.out()).contains("\"jobs\"").contains(": 4");
    assertThat(status.out()).contains("\"runs\"").contains("\"2 pid ");
  }

  @Test
  void statusAndCleanupOfAJobRefuseToGuessItsCheckpointDirectory() throws Exception {
    assertThat(CliRun.of(ingest("--job-id", "guess")).exitCode()).isZero();
    boolean hadDefault = Files.exists(Path.of(".lakecommit"));
    // The same catalog given by properties: no longer the embedded default, whose checkpoints live in the warehouse.
    List<String> catalog = List.of("--table", "demo.orders", "--job-id", "guess", "-C", "type=jdbc",
        "-C", "uri=jdbc:sqlite:" + dir.resolve("wh/catalog.db").toAbsolutePath(), "-C",
        "warehouse=" + dir.resolve("wh").toUri(), "-C", "jdbc.schema-version=V1", "--catalog-name", "lakecommit");
    for (String command : List.of("status", "cleanup")) {
      List<String> args = new ArrayList<>(List.of(command));
      args.addAll(catalog);
      CliRun run = CliRun.of(args.toArray(String[]::new));
      assertThat(run.exitCode()).as(run.toString()).isEqualTo(2);
      assertThat(run.err()).contains("Missing option --checkpoint-dir").contains("guess");
    }
    assertThat(Files.exists(Path.of(".lakecommit"))).as("no default directory created").isEqualTo(hadDefault);
    CliRun given = CliRun.of("status", "--table", "demo.orders", "--job-id", "guess", "-C", "type=jdbc",
        "-C", "uri=jdbc:sqlite:" + dir.resolve("wh/catalog.db").toAbsolutePath(), "-C",
        "warehouse=" + dir.resolve("wh").toUri(), "-C", "jdbc.schema-version=V1", "--checkpoint-dir",
        dir.resolve("wh/_lakecommit/checkpoints/guess").toString());
    assertThat(given.exitCode()).as(given.toString()).isZero();
    assertThat(given.out()).contains("latest-checkpoint: 4");
  }

  @ParameterizedTest
  @ValueSource(strings = {"ingest", "verify", "status", "cut", "cleanup", "maintain"})
  void everyCommandHasHelp(String command) {
    CliRun help = CliRun.of(command, "--help");
    assertThat(help.exitCode()).isZero();
    assertThat(help.out()).contains("Usage: lakecommit " + command).contains("--table");
  }

  @Test
  void helpPrintsNoPicocliWarnings() {
    CliRun help = CliRun.of("ingest", "--help");
    assertThat(help.out() + help.err()).doesNotContain("picocli WARN").contains("20%").doesNotContain("20%%");
  }

  @Test
  void theSinksWriteSettingsAreReachableFromTheTool() throws Exception {
    CliRun run = CliRun.of(ingest("--max-rows-per-file", "100", "--max-open-files", "4", "--target-file-size", "1m",
        "-P", "format-version=3", "--branch", "audit", "--writer-manifest-min-files", "1",
        "--coalesce-pending-commits"));
    assertThat(run.exitCode()).as(run.toString()).isZero();
    org.apache.iceberg.Table table = table("demo.orders");
    assertThat(((org.apache.iceberg.HasTableOperations) table).operations().current().formatVersion()).isEqualTo(3);
    assertThat(table.currentSnapshot()).as("main is untouched: the commits went to the branch").isNull();
    org.apache.iceberg.Snapshot head = table.snapshot("audit");
    long rows = 0;
    int files = 0;
    for (org.apache.iceberg.FileScanTask task : table.newScan().useRef("audit").planFiles()) {
      assertThat(task.file().recordCount()).as("rows of %s", task.file().location()).isLessThanOrEqualTo(100);
      rows += task.file().recordCount();
      files++;
    }
    assertThat(rows).isEqualTo(2_000);
    assertThat(files).isGreaterThanOrEqualTo(20);
    assertThat(head.summary()).containsKey("lakecommit.checkpoint-id");
  }

  @Test
  void theWriteBufferSizeClosesFilesBeforeTheCheckpointAndEveryRowIsCommitted() throws Exception {
    // One checkpoint of 2,000 records on one writer: one file per checkpoint, unless the buffer bound closes it.
    CliRun unbounded = CliRun.of(ingestInto("demo.unbounded"));
    assertThat(unbounded.exitCode()).as(unbounded.toString()).isZero();
    assertThat(dataFiles("demo.unbounded")).as("rows per file").containsExactly(2_000L);

    CliRun bounded = CliRun.of(ingestInto("demo.bounded", "--write-buffer-size", "8k"));
    assertThat(bounded.exitCode()).as(bounded.toString()).isZero();
    List<Long> rows = dataFiles("demo.bounded");
    assertThat(rows.size()).isGreaterThanOrEqualTo(3);
    assertThat(rows.stream().mapToLong(Long::longValue).sum()).isEqualTo(2_000);
    org.apache.iceberg.Table table = table("demo.bounded");
    assertThat(table.snapshots()).as("still one commit").hasSize(1);
    long read = 0;
    try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.data.Record> records =
        org.apache.iceberg.data.IcebergGenerics.read(table).build()) {
      for (org.apache.iceberg.data.Record ignored : records) {
        read++;
      }
    }
    assertThat(read).isEqualTo(2_000);
  }

  @Test
  void anInputWithMorePartitionsThanOpenFilesGetsFewFilesPerPartitionAndWriter() throws Exception {
    // 40 partitions in random order, one checkpoint, 2 writers: with a fixed limit of 32 open files per writer the
    // writers closed and reopened a file every few rows (7,000 files). Now the default holds 40 open files; with a
    // limit of 8 the writers hold the records of partitions without an open file and write them grouped.
    Path input = dir.resolve("wide.jsonl");
    java.util.Random random = new java.util.Random(40);
    StringBuilder lines = new StringBuilder();
    for (int i = 0; i < 8_000; i++) {
      lines.append("{\"id\": ").append(i).append(", \"kind\": \"k").append(random.nextInt(40)).append("\"}\n");
    }
    Files.writeString(input, lines);
    // the default holds 40 open files per writer from a heap of 800 MB (WriteOptionsTest)
    assertThat(Runtime.getRuntime().maxMemory()).as("the test JVM's heap").isGreaterThan(800L << 20);
    for (String[] limit : new String[][] {{}, {"--max-open-files", "8"}}) {
      String table = limit.length == 0 ? "demo.wide" : "demo.wide8";
      List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString(), "--table", table,
          "--warehouse", dir.resolve("wh").toString(), "--parallelism", "2", "--partition-by", "kind"));
      args.addAll(List.of(limit));
      CliRun run = CliRun.of(args.toArray(String[]::new));
      assertThat(run.exitCode()).as(run.toString()).isZero();
      List<Long> files = dataFiles(table);
      assertThat(files.stream().mapToLong(Long::longValue).sum()).isEqualTo(8_000);
      if (limit.length == 0) {
        assertThat(files).as("files of %s", table).hasSizeLessThanOrEqualTo(2 * 40);
      } else {
        // per writer: up to 40 partitions' first files and 16 reopened ones before it holds records, then one file
        // per partition for the records held until the checkpoint
        assertThat(files).as("files of %s", table).hasSizeLessThanOrEqualTo(2 * (40 + 16 + 40));
      }
    }
  }

  /** The sample in one checkpoint on one writer. */
  private String[] ingestInto(String table, String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", SAMPLE.toString(), "--table", table,
        "--warehouse", dir.resolve("wh").toString(), "--parallelism", "1"));
    args.addAll(List.of(extra));
    return args.toArray(String[]::new);
  }

  /** A table of the tests' warehouse ({@code --warehouse dir/wh}: the embedded JDBC catalog on SQLite). */
  private org.apache.iceberg.Table table(String name) {
    return org.apache.iceberg.CatalogUtil.buildIcebergCatalog("lakecommit", java.util.Map.of(
        "type", "jdbc", "uri", "jdbc:sqlite:" + dir.resolve("wh/catalog.db").toAbsolutePath(),
        "warehouse", dir.resolve("wh").toUri().toString(), "jdbc.schema-version", "V1"),
        new org.apache.hadoop.conf.Configuration()).loadTable(org.apache.iceberg.catalog.TableIdentifier.parse(name));
  }

  /** The row counts of the table's data files. */
  private List<Long> dataFiles(String name) throws IOException {
    List<Long> rows = new ArrayList<>();
    try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.FileScanTask> tasks =
        table(name).newScan().planFiles()) {
      tasks.forEach(task -> rows.add(task.file().recordCount()));
    }
    return rows;
  }

  @Test
  void upsertsByKeyLeaveTheNewestRowOfEveryKeyAcrossCheckpointsAndWriters() throws Exception {
    Path input = dir.resolve("changes.jsonl");
    StringBuilder lines = new StringBuilder();
    for (int round = 0; round < 3; round++) {
      for (int id = 0; id < 400; id++) {
        lines.append("{\"id\": ").append(id).append(", \"v\": ").append(round * 1000 + id).append("}\n");
      }
    }
    Files.writeString(input, lines);
    String[] args = {"ingest", "--input", input.toString(), "--table", "demo.changes", "--warehouse",
        dir.resolve("wh").toString(), "--schema", "id long not null, v long", "--upsert-key", "id",
        "--parallelism", "2", "--checkpoint-every-records", "250"};
    CliRun run = CliRun.of(args);
    assertThat(run.exitCode()).as(run.toString()).isZero();
    assertThat(CliRun.of(args).out()).contains("Nothing new to commit");
    org.apache.iceberg.Table table = table("demo.changes");
    java.util.Map<Long, Long> rows = new java.util.HashMap<>();
    try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.data.Record> records =
        org.apache.iceberg.data.IcebergGenerics.read(table).build()) {
      for (org.apache.iceberg.data.Record record : records) {
        assertThat(rows.put((Long) record.getField("id"), (Long) record.getField("v"))).as("key %s once",
            record.getField("id")).isNull();
      }
    }
    assertThat(rows).hasSize(400);
    rows.forEach((id, v) -> assertThat(v).as("newest value of key %s", id).isEqualTo(2000 + id));
  }

  @ParameterizedTest
  @ValueSource(strings = {"--max-rows-per-file=0", "--max-open-files=-1", "--target-file-size=12q",
      "--writer-manifest-min-files=0", "--write-buffer-size=0", "--move-threads=2", "--partition-batch-size=10"})
  void badWriteSettingsAreUsageErrorsNamingTheOptionAndCreateNothing(String option) {
    CliRun run = CliRun.of(ingest(option));
    assertThat(run.exitCode()).as(run.toString()).isEqualTo(2);
    assertThat(run.err()).contains(option.substring(0, option.indexOf('=')));
    assertThat(dir.resolve("wh/demo")).as("no table was created").doesNotExist();
  }

  @Test
  void aFullDiskFailsTheJobWithExitCode3AndOneLineAndARerunAfterwardsIsExact() throws Exception {
    List<String> catalog = List.of("--table", "demo.full", "-C", "type=jdbc", "-C",
        "uri=jdbc:sqlite:" + Files.createDirectories(dir.resolve("wh")).resolve("catalog.db").toAbsolutePath(),
        "-C", "warehouse=" + dir.resolve("wh").toUri(), "-C", "jdbc.schema-version=V1");
    List<String> ingest = new ArrayList<>(List.of("ingest", "--input", SAMPLE.toString(), "--job-id", "full",
        "--parallelism", "1", "--checkpoint-every-records", "500", "--checkpoint-dir",
        dir.resolve("checkpoints").toString()));
    ingest.addAll(catalog);
    // Every staged Parquet file meets a full disk (Hadoop's FSError, as its local file system reports ENOSPC).
    List<String> full = new ArrayList<>(ingest);
    full.addAll(List.of("-C", "fs.file.impl=" + org.apache.hadoop.fs.FullDiskFileSystem.class.getName(),
        "-C", "fs.file.impl.disable.cache=true"));

    CliRun failed = CliRun.of(full.toArray(String[]::new));
    assertThat(failed.exitCode()).as(failed.toString()).isEqualTo(3);
    assertThat(failed.err()).as(failed.toString()).contains("No space left on device")
        .doesNotContain("Exception in thread").doesNotContain("\tat ");
    assertThat(failed.err().lines().filter(line -> line.startsWith("error: ")).count()).isEqualTo(1);
    try (java.util.stream.Stream<Path> files = Files.walk(dir.resolve("wh"))) {
      assertThat(files.filter(p -> p.toString().endsWith(".parquet")).toList())
          .as("the failed checkpoint's staged files are removed").isEmpty();
    }

    CliRun rerun = CliRun.of(ingest.toArray(String[]::new));
    assertThat(rerun.exitCode()).as(rerun.toString()).isZero();
    List<String> verify = new ArrayList<>(List.of("verify", "--source", SAMPLE.toString(), "--key", "order_id"));
    verify.addAll(catalog);
    CliRun audit = CliRun.of(verify.toArray(String[]::new));
    assertThat(audit.exitCode()).as(audit.toString()).isZero();
  }

  @Test
  void uploadBuffersThatAKilledRunLeftAreRemovedByTheNextRun() throws Exception {
    // S3FileIO buffers uploads in s3.staging-dir, which the tool makes one directory per process
    Path root = bufferRoot();
    Path dead = Files.createDirectories(root.resolve("999999999"));
    Path leftover = Files.writeString(dead.resolve("s3fileio-123.tmp"), "half an upload");
    Path notOurs = Files.createDirectories(root.resolve("not-a-pid"));
    CliRun run = CliRun.of(ingest());
    assertThat(run.exitCode()).as(run.toString()).isZero();
    assertThat(leftover).doesNotExist();
    assertThat(dead).doesNotExist();
    assertThat(notOurs).exists();
    Files.delete(notOurs);
  }

  @Test
  void aSecretTypedWithASpaceIsNeverEchoedAndAUsageErrorPrintsNoUsage() {
    CliRun run = CliRun.of(ingest("-C", "s3.secret-access-key", "TOPSECRET123", "-C", "type=rest"));
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.out() + run.err()).doesNotContain("TOPSECRET123").contains("****");
    assertThat(run.err()).contains("Try 'lakecommit ingest --help'").doesNotContain("Usage:");

    CliRun badValue = CliRun.of(ingest("--parallelism", "many"));
    assertThat(badValue.exitCode()).isEqualTo(2);
    assertThat(badValue.err()).contains("--parallelism").contains("many").doesNotContain("Usage:");
  }

  @Test
  void unknownOptionsAreRejectedWithASuggestion() {
    CliRun run = CliRun.of(ingest("--paralelism", "3"));
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.err()).contains("Unknown option").contains("'--paralelism'")
        .contains("Possible solutions").contains("--parallelism");
  }

  @Test
  void aMissingInputIsNamed() {
    CliRun run = CliRun.of("ingest", "--input", dir.resolve("nope.jsonl").toString(), "--table", "demo.t",
        "--warehouse", dir.resolve("wh").toString());
    assertThat(run.exitCode()).as(run.toString()).isEqualTo(2);
    assertThat(run.err()).contains("--input").contains("nope.jsonl");
    assertThat(dir.resolve("wh")).as("nothing created").doesNotExist();
  }

  @Test
  void anInputThatDoesNotFitAtItsFirstRecordLeavesNoTableBehind() throws Exception {
    Path csv = dir.resolve("semicolons.csv");
    Files.writeString(csv, "id;name\n1;alice\n2;bob\n");
    CliRun run = CliRun.of("ingest", "--input", csv.toString(), "--table", "demo.semi", "--warehouse",
        dir.resolve("wh").toString(), "--schema", "id long not null, name string");
    assertThat(run.exitCode()).as(run.toString()).isNotZero();
    assertThat(run.err()).contains("semicolons.csv");
    assertThat(dir.resolve("wh/demo/semi")).as("no table created").doesNotExist();
    CliRun status = CliRun.of("status", "--table", "demo.semi", "--warehouse", dir.resolve("wh").toString());
    assertThat(status.exitCode()).as(status.toString()).isEqualTo(2);
    assertThat(status.err()).contains("demo.semi does not exist").doesNotContain("\tat ");
  }

  /** A file ingest serves its metrics while it runs with {@code --metrics-port}, as a Kafka ingest does. */
  @Test
  void aFileIngestServesItsMetricsWhileItRuns() throws Exception {
    Path input = dir.resolve("slow.jsonl");
    StringBuilder lines = new StringBuilder();
    for (int id = 0; id < 400; id++) {
      lines.append("{\"id\": ").append(id).append(", \"name\": \"n").append(id).append("\"}\n");
    }
    Files.writeString(input, lines);
    int port = dev.lakecommit.core.testing.LoopbackPorts.reserve();
    // 400 rows at 200 per second, a checkpoint per 100: about 2 s of running, the first commit after about 0.5 s
    java.util.concurrent.CompletableFuture<CliRun> run = java.util.concurrent.CompletableFuture.supplyAsync(() ->
        CliRun.of("ingest", "--input", input.toString(), "--table", "demo.slow", "--warehouse",
            dir.resolve("wh").toString(), "--schema", "id long, name string", "--checkpoint-every-records", "100",
            "--max-records-per-second", "200", "--metrics-port", Integer.toString(port), "--metrics-host",
            "127.0.0.1"));
    java.util.regex.Pattern committed =
        java.util.regex.Pattern.compile("lakecommit_committed_records_total\\{job=\"[^\"]+\"} ([0-9.]+)");
    String seen = null;
    java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
    while (seen == null && !run.isDone()) {
      try {
        String body = http.send(java.net.http.HttpRequest.newBuilder(
            java.net.URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
            java.net.http.HttpResponse.BodyHandlers.ofString()).body();
        java.util.regex.Matcher matcher = committed.matcher(body);
        if (matcher.find() && Double.parseDouble(matcher.group(1)) > 0) {
          seen = body;
        }
      } catch (IOException e) {
        // not serving yet
      }
      try {
        run.get(50, java.util.concurrent.TimeUnit.MILLISECONDS); // waits for the job between scrapes
      } catch (java.util.concurrent.TimeoutException e) {
        // still running
      }
    }
    CliRun done = run.get();
    assertThat(done.exitCode()).as("%s", done).isZero();
    assertThat(done.out()).contains("Metrics at http://127.0.0.1:" + port + "/metrics").contains("Committed 400 rows");
    assertThat(seen).as("metrics with committed records, scraped while the job ran").isNotNull()
        .contains("lakecommit_committed_checkpoints_total").doesNotContain("lakecommit_kafka_lag_records");
  }

  @ParameterizedTest
  @ValueSource(strings = {"--parallelism=0", "--codec=lzma", "--checkpoint-every-records=0", "--table=t..u",
      "--table=t.a/b", "--table=orders", "--table=.t", "--commit-retries=0", "--max-records-per-second=0",
      "--max-records-per-second=-5"})
  void badOptionValuesAreUsageErrorsFoundBeforeAnythingIsCreated(String option) {
    String name = option.substring(0, option.indexOf('='));
    List<String> args = new ArrayList<>(List.of(ingest()));
    int given = args.indexOf(name);
    if (given >= 0) {
      args.set(given + 1, option.substring(option.indexOf('=') + 1));
    } else {
      args.add(option);
    }
    CliRun run = CliRun.of(args.toArray(String[]::new));
    assertThat(run.err()).doesNotContain("should be specified only once");
    assertThat(run.exitCode()).as(run.toString()).isEqualTo(2);
    assertThat(run.err()).as(run.toString()).contains(option.substring(0, option.indexOf('=')));
    assertThat(dir.resolve("wh")).as("nothing created").doesNotExist();
  }

  @Test
  void aBadRecordStopsTheJobNamingFileLineAndFieldAndCommitsNothingOfItsCheckpoint() throws Exception {
    Path input = dir.resolve("in.jsonl");
    StringBuilder lines = new StringBuilder();
    for (int i = 1; i <= 30; i++) {
      lines.append(i == 25 ? "{\"id\": \"twenty-five\"}" : "{\"id\": " + i + "}").append('\n');
    }
    Files.writeString(input, lines);
    String[] args = {"ingest", "--input", input.toString(), "--table", "demo.t", "--schema", "id long",
        "--warehouse", dir.resolve("wh").toString(), "--checkpoint-every-records", "10"};

    CliRun run = CliRun.of(args);

    assertThat(run.exitCode()).as(run.toString()).isEqualTo(3);
    assertThat(run.err()).contains("in.jsonl").contains("25").contains("id");
    CliRun status = CliRun.of("status", "--table", "demo.t", "--warehouse", dir.resolve("wh").toString(),
        "--json");
    assertThat(status.out()).contains(": 2");

    CliRun deadLetter = CliRun.of(ingestWithBadRecords(args));
    assertThat(deadLetter.exitCode()).as(deadLetter.toString())
        .isEqualTo(dev.lakecommit.ingest.cli.LakecommitCommand.COMPLETED_WITH_BAD_RECORDS);
    try (var files = Files.list(dir.resolve("bad"))) {
      assertThat(files.toList()).isNotEmpty();
    }
  }

  private String[] ingestWithBadRecords(String[] args) {
    List<String> list = new ArrayList<>(List.of(args));
    list.addAll(List.of("--bad-records", dir.resolve("bad").toString()));
    return list.toArray(String[]::new);
  }

  /**
   * {@code cleanup} deletes orphans of runs that a newer run fenced (safe while the job runs), and the newest
   * run's own only when asked to.
   */
  @Test
  void cleanupDeletesOnlyFencedRunsOrphansUnlessAskedForTheCurrentRun() throws Exception {
    assertThat(CliRun.of(ingest("--job-id", "orders")).exitCode()).isZero(); // run epoch 1
    assertThat(CliRun.of(ingest("--job-id", "orders")).exitCode()).isZero(); // run epoch 2: nothing new
    java.nio.file.Path staging = dir.resolve("wh/demo/orders/data/lakecommit/orders/ckpt-9");
    java.nio.file.Files.createDirectories(staging);
    java.nio.file.Path older = java.nio.file.Files.write(staging.resolve("orders-9-e1-0-0-0.parquet"), new byte[1]);
    java.nio.file.Path current = java.nio.file.Files.write(staging.resolve("orders-9-e2-0-0-0.parquet"), new byte[1]);
    String[] cleanup = {"cleanup", "--table", "demo.orders", "--warehouse", dir.resolve("wh").toString(),
        "--job-id", "orders"};

    CliRun dry = CliRun.of(cleanup);
    assertThat(dry.exitCode()).as(dry.toString()).isZero();
    assertThat(dry.out()).contains("1 orphan staged file(s) of job orders in demo.orders")
        .contains("1 above checkpoint 4 from runs before the newest (epoch 2), 0 left over").contains("orders-9-e1-0-0-0.parquet").doesNotContain("orders-9-e2");
    CliRun all = CliRun.of(java.util.stream.Stream.concat(java.util.Arrays.stream(cleanup),
        java.util.stream.Stream.of("--include-current-run")).toArray(String[]::new));
    assertThat(all.out()).contains("2 orphan staged file(s)");

    CliRun delete = CliRun.of(java.util.stream.Stream.concat(java.util.Arrays.stream(cleanup),
        java.util.stream.Stream.of("--delete")).toArray(String[]::new));
    assertThat(delete.exitCode()).as(delete.toString()).isZero();
    assertThat(delete.out()).contains("Deleted 1 orphan staged file(s)");
    assertThat(older).doesNotExist();
    assertThat(current).as("the newest run's file").exists();
    assertThat(CliRun.of("verify", "--source", SAMPLE.toString(), "--table", "demo.orders",
        "--warehouse", dir.resolve("wh").toString(), "--key", "order_id").exitCode()).isZero();
  }

  /**
   * Was: a killed commit attempt's committer manifest (each attempt names its own) and a killed run's S3 upload
   * buffers ({@code s3fileio-*.tmp}) stayed for ever; {@code cleanup} listed neither. Now it finds both (the
   * manifest: no snapshot references it, its checkpoint is committed) and deletes them; what the table references
   * stays and the table is exact.
   */
  @Test
  void cleanupFindsKilledAttemptsCommitterManifestsAndUploadBuffers() throws Exception {
    CliRun run = CliRun.of(ingest("--job-id", "orders", "--no-writer-manifests"));
    assertThat(run.exitCode()).as(run.toString()).isZero();
    Path committed;
    try (var files = Files.walk(dir.resolve("wh/demo/orders/data/lakecommit/orders"))) {
      committed = files.filter(f -> f.getFileName().toString().contains("-committer-")).sorted().findFirst()
          .orElseThrow();
    }
    String name = committed.getFileName().toString();
    Path killedAttempts = committed.resolveSibling(name.substring(0, name.indexOf("-committer-") + 11)
        + java.util.UUID.randomUUID() + "-0-manifest.avro");
    Files.copy(committed, killedAttempts); // what an attempt killed before its commit landed leaves
    Process killed = new ProcessBuilder("sleep", "60").start();
    killed.destroyForcibly().waitFor();
    Path buffers = Files.createDirectories(bufferRoot().resolve(
        Long.toString(killed.pid())));
    Path buffer = Files.write(buffers.resolve("s3fileio-" + java.util.UUID.randomUUID() + ".tmp"), new byte[10]);
    String[] cleanup = {"cleanup", "--table", "demo.orders", "--warehouse", dir.resolve("wh").toString(),
        "--job-id", "orders"};

    CliRun dry = CliRun.of(cleanup);
    assertThat(dry.exitCode()).as(dry.toString()).isZero();
    assertThat(dry.out()).contains("0 above checkpoint", "1 left over from committed checkpoints",
        killedAttempts.getFileName().toString(), buffer.toString()).doesNotContain(name);
    assertThat(killedAttempts).as("a dry run").exists();

    CliRun delete = CliRun.of(java.util.stream.Stream.concat(java.util.Arrays.stream(cleanup),
        java.util.stream.Stream.of("--delete")).toArray(String[]::new));
    assertThat(delete.exitCode()).as(delete.toString()).isZero();
    assertThat(delete.out()).contains("Deleted 1 orphan staged file(s)", "upload buffer file(s) of killed runs");
    assertThat(killedAttempts).doesNotExist();
    assertThat(buffer).doesNotExist();
    assertThat(committed).as("referenced by the table").exists();
    CliRun verify = CliRun.of("verify", "--source", SAMPLE.toString(), "--table", "demo.orders", "--warehouse",
        dir.resolve("wh").toString(), "--key", "order_id");
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
  }

  /**
   * Where the tool in this JVM puts S3 upload buffers: the build gives each test JVM its own root
   * ({@code lakecommit.s3.buffer-root}), so that a run in another one does not sweep what a test planted here.
   */
  private static Path bufferRoot() {
    String root = System.getProperty("lakecommit.s3.buffer-root");
    return root != null ? Path.of(root) : Path.of(System.getProperty("java.io.tmpdir"), "lakecommit-s3");
  }
}
