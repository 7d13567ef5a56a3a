package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.staging.testing.FaultInjectingS3Proxy;
import dev.lakecommit.staging.testing.FaultRule;
import dev.lakecommit.staging.testing.FaultRule.Fault;
import dev.lakecommit.staging.testing.S3TestServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The tool against S3 that misbehaves: every request of the ingest (source, data files, table metadata,
 * checkpoints) goes through {@link FaultInjectingS3Proxy}. The storage client retries transport errors; the
 * commit path and the job ride them out, or fail cleanly and resume.
 */
class S3FaultsIngestIT {
  private static final int FILES = 4;
  private static final int ROWS = TestScale.pick(200_000, 1_000_000);
  private static final int CHECKPOINT_ROWS = ROWS / 8;
  /** The failure cases need checkpoints before and after the fault, not volume. */
  private static final int SMALL_ROWS = TestScale.pick(40_000, 200_000);
  private static final int SMALL_CHECKPOINT_ROWS = SMALL_ROWS / 8;
  private static S3TestServer s3;

  @TempDir Path dir;
  private FaultInjectingS3Proxy proxy;
  private final ExecutorService background = Executors.newSingleThreadExecutor();

  @BeforeAll
  static void start() throws Exception {
    s3 = S3TestServer.start("landing", "lake");
    try (S3Client client = s3.client()) {
      upload(client, "orders/", ROWS);
      upload(client, "small/", SMALL_ROWS);
    }
  }

  private static void upload(S3Client client, String prefix, int rows) {
    int perFile = rows / FILES;
    for (int file = 0; file < FILES; file++) {
      StringBuilder lines = new StringBuilder(perFile * 40);
      for (int i = 0; i < perFile; i++) {
        long id = (long) file * perFile + i;
        lines.append("{\"id\": ").append(id).append(", \"region\": \"r").append(id % 4)
            .append("\", \"amount\": ").append(id * 7 % 1000).append("}\n");
      }
      String key = prefix + "part-" + file + ".jsonl";
      client.putObject(b -> b.bucket("landing").key(key), RequestBody.fromString(lines.toString()));
    }
  }

  @AfterAll
  static void stop() throws Exception {
    s3.close();
  }

  @AfterEach
  void closeProxy() throws Exception {
    background.shutdownNow();
    if (proxy != null) {
      proxy.close();
    }
  }

  /** Catalog and S3FileIO options reaching S3 through {@code endpoint}, with test-sized SDK retry waits. */
  private List<String> catalog(String endpoint) {
    Map<String, String> props = new LinkedHashMap<>(s3.s3FileIOProperties());
    props.put("s3.endpoint", endpoint);
    props.put("s3.retry.num-retries", "6");
    props.put("s3.retry.min-wait-ms", "20");
    props.put("s3.retry.max-wait-ms", "500");
    List<String> args = new ArrayList<>(List.of(
        "-C", "type=jdbc", "-C", "uri=jdbc:sqlite:" + dir.resolve("catalog.db"), "-C", "jdbc.schema-version=V1",
        "-C", "warehouse=" + s3.location("lake", "warehouse"), "-C", "io-impl=org.apache.iceberg.aws.s3.S3FileIO"));
    props.forEach((k, v) -> args.addAll(List.of("-C", k + "=" + v)));
    return args;
  }

  private List<String> ingest(String job, String endpoint, String... extra) {
    boolean small = !job.equals("faulty");
    List<String> args = new ArrayList<>(List.of("ingest",
        "--input", s3.location("landing", small ? "small/" : "orders/"),
        "--table", "sales." + job, "--partition-by", "region", "--job-id", job, "--parallelism", "2",
        "--checkpoint-every-records", Integer.toString(small ? SMALL_CHECKPOINT_ROWS : CHECKPOINT_ROWS),
        "--checkpoint-dir", s3.location("lake", "checkpoints/" + job)));
    args.addAll(List.of(extra));
    args.addAll(catalog(endpoint));
    return args;
  }

  private CliRun verify(String job) {
    String prefix = job.equals("faulty") ? "orders/" : "small/";
    List<String> args = new ArrayList<>(List.of("verify", "--source", s3.location("landing", prefix),
        "--table", "sales." + job, "--key", "id", "--json"));
    args.addAll(catalog(s3.endpoint().toString()));
    return CliRun.of(args.toArray(String[]::new));
  }

  private Catalog directCatalog() {
    Map<String, String> props = new LinkedHashMap<>(s3.s3FileIOProperties());
    props.put("type", "jdbc");
    props.put("uri", "jdbc:sqlite:" + dir.resolve("catalog.db"));
    props.put("jdbc.schema-version", "V1");
    props.put("warehouse", s3.location("lake", "warehouse"));
    props.put("io-impl", "org.apache.iceberg.aws.s3.S3FileIO");
    return CatalogUtil.buildIcebergCatalog("lakecommit", props, new org.apache.hadoop.conf.Configuration());
  }

  /** The ids in the table, read back with Iceberg's generic reader; fails on a duplicate. */
  private Set<Long> ids(String job) throws Exception {
    Table table = directCatalog().loadTable(TableIdentifier.of("sales", job));
    Set<Long> ids = new HashSet<>();
    try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
      for (Record row : rows) {
        assertThat(ids.add((Long) row.getField("id"))).as("duplicate id %s", row.getField("id")).isTrue();
      }
    }
    return ids;
  }

  /** Waits (polling, bounded) until the job committed at least one checkpoint. */
  private void awaitFirstCommit(String job, Future<CliRun> run) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    Catalog catalog = directCatalog();
    TableIdentifier id = TableIdentifier.of("sales", job);
    while (true) {
      assertThat(run.isDone()).as("the job ended before its first commit: %s", run.isDone() ? run.get() : "")
          .isFalse();
      assertThat(System.nanoTime()).as("first commit within 2 minutes").isLessThan(deadline);
      if (catalog.tableExists(id) && catalog.loadTable(id).currentSnapshot() != null) {
        return;
      }
      Thread.sleep(50);
    }
  }

  @Test
  void tenPercentOfRequestsFailingStillIngestsExactlyOnce() throws Exception {
    proxy = FaultInjectingS3Proxy.start(s3, TestScale.seed(),
        FaultRule.everyRequest(0.10, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR, Fault.RESET));
    CliRun run = CliRun.of(ingest("faulty", proxy.endpoint().toString()).toArray(String[]::new));

    assertThat(run.exitCode()).as("%s\n%s", proxy, run).isZero();
    assertThat(run.out()).contains(String.format("Committed %,d rows", ROWS));
    CliRun audit = verify("faulty");
    assertThat(audit.exitCode()).as(audit.toString()).isZero();
    assertThat(audit.out()).contains("\"sourceRows\" : " + ROWS).contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");
    assertThat(proxy.injected()).as("faults injected: %s", proxy).isGreaterThan(10);
    assertThat(proxy.injected(Fault.SLOW_DOWN)).isPositive();
    assertThat(proxy.injected(Fault.INTERNAL_ERROR)).isPositive();
    assertThat(proxy.injected(Fault.RESET)).isPositive();
    assertThat(proxy.retriedRequests()).as("the storage client's retries: %s", proxy).isPositive();
    assertThat(ids("faulty")).hasSize(ROWS);
  }

  @Test
  void storageFailingEveryRequestEndsInANamedFailureAndTheRerunCompletes() throws Exception {
    proxy = FaultInjectingS3Proxy.start(s3, TestScale.seed());
    Duration stallTimeout = Duration.ofSeconds(10);
    List<String> command = ingest("down", proxy.endpoint().toString(), "--stall-timeout", "10s");
    Future<CliRun> first = background.submit(() -> CliRun.of(command.toArray(String[]::new)));
    awaitFirstCommit("down", first);

    proxy.rules(FaultRule.everyRequest(1.0, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR, Fault.RESET));
    long faultStart = System.nanoTime();
    CliRun failed = first.get(3, TimeUnit.MINUTES);
    Duration took = Duration.ofNanos(System.nanoTime() - faultStart);

    assertThat(failed.exitCode()).as(failed.toString()).isEqualTo(3);
    assertThat(failed.err()).as(failed.toString())
        .contains("error: ")
        .contains("s3.endpoint=" + proxy.endpoint())
        .containsPattern("HTTP 50[03]|SlowDown|InternalError|Status Code: 50[03]|Connection reset"
            + "|Unable to execute HTTP request");
    // The storage client gives up within its bounded retries, or the stall timeout ends the job; the clean-up
    // of the failed checkpoint against the failing store is bounded by the stall timeout again.
    assertThat(took).as(failed.toString()).isLessThan(stallTimeout.multipliedBy(2).plusSeconds(20));
    Set<Long> committed = ids("down");
    assertThat(committed.size() % SMALL_CHECKPOINT_ROWS).as("whole checkpoints only").isZero();
    assertThat(committed.size()).isLessThan(SMALL_ROWS);

    proxy.rules();
    CliRun rerun = CliRun.of(command.toArray(String[]::new));
    assertThat(rerun.exitCode()).as(rerun.toString()).isZero();
    assertThat(rerun.out()).contains("Resuming after checkpoint");
    CliRun audit = verify("down");
    assertThat(audit.out()).as(audit.toString()).contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
    assertThat(ids("down")).hasSize(SMALL_ROWS).containsAll(committed);
  }

  @Test
  void aStagingLocationThatRefusesWritesFailsTheCheckpointAndDeletesItsStagedFiles() throws Exception {
    proxy = FaultInjectingS3Proxy.start(s3, TestScale.seed());
    List<String> command = ingest("refused", proxy.endpoint().toString());
    Future<CliRun> first = background.submit(() -> CliRun.of(command.toArray(String[]::new)));
    awaitFirstCommit("refused", first);

    // Writer 1's data files are refused (403); writer 0's files of the same checkpoint are written.
    FaultRule refuse = FaultRule.builder().methods("PUT", "POST")
        .pathMatching("/lake/warehouse/.*/ckpt-\\d+/.*-\\d+-e\\d+-1-\\d+-\\d+\\.parquet").faults(Fault.ACCESS_DENIED).build();
    proxy.rules(refuse);
    CliRun failed = first.get(3, TimeUnit.MINUTES);

    assertThat(failed.exitCode()).as(failed.toString()).isEqualTo(3);
    assertThat(failed.err()).as(failed.toString()).contains("Writer 1").contains("Access Denied");
    assertThat(refuse.injected()).isPositive();
    Set<Long> committed = ids("refused");
    assertThat(committed.size() % SMALL_CHECKPOINT_ROWS).as("whole checkpoints only").isZero();
    // Every data file on S3 is one the table references: the failed checkpoint's files were deleted.
    Table table = directCatalog().loadTable(TableIdentifier.of("sales", "refused"));
    Set<String> referenced = new HashSet<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      tasks.forEach(task -> referenced.add(task.file().location()));
    }
    List<String> onStorage = new ArrayList<>();
    try (S3Client client = s3.client()) {
      client.listObjectsV2Paginator(b -> b.bucket("lake").prefix("warehouse/sales/refused/")).contents().stream()
          .map(S3Object::key).filter(key -> key.endsWith(".parquet"))
          .forEach(key -> onStorage.add("s3://lake/" + key));
    }
    assertThat(onStorage).as("staged files left of the failed checkpoint").containsExactlyInAnyOrderElementsOf(
        referenced);

    proxy.rules();
    CliRun rerun = CliRun.of(command.toArray(String[]::new));
    assertThat(rerun.exitCode()).as(rerun.toString()).isZero();
    assertThat(ids("refused")).hasSize(SMALL_ROWS).containsAll(committed);
  }
}
