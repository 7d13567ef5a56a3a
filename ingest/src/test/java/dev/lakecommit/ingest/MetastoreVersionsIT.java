package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.TestScale;
import dev.lakecommit.hive.CompatibleMetaStoreClient;
import dev.lakecommit.hive.testing.EmbeddedPostgres;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.hive.testing.HiveReader;
import dev.lakecommit.hive.testing.MetastoreProcess;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The tool against the Hive Metastore versions users run, each a real server: 2.3.10 (the version the build links,
 * in-process), and 3.1.3, 4.0.0 and 4.0.1 as processes of their own from Hive's distributions, on Derby or on
 * PostgreSQL (4.0.x cannot evaluate its compare-and-swap on Derby: the sink fences with the metastore's lock there). For
 * each: a Hive table ingested, rerun (nothing committed again) and appended to by a second job, verified against
 * its input, its partitions' statistics exact and accurate, read back by Hive's own Parquet reader; an Iceberg table through Iceberg's Hive catalog on the
 * same metastore; two copies of one job started together (the older fenced, every row once); and the metastore
 * killed in the middle of an ingest and started again after an outage (the run rides it through, exact; 3.1.3 in the
 * default build, every version with {@code -Plong}). The Hive 4 versions run in {@link Metastore4VersionsIT}.
 */
class MetastoreVersionsIT {
  private static final String DB = "versions";
  private static final List<String> FAST_START = List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");
  /** How long the metastore stays down: 10 s (about ten checkpoints of the run meet it), 20 s in the long profile. */
  private static final int OUTAGE_SECONDS =
      Integer.getInteger("lakecommit.outage-seconds", TestScale.pick(10, 20));

  /** The metastore whose outage the default build runs. */
  private static final String OUTAGE_SETUP = "3.1.3 derby";

  @TempDir Path dir;

  /** A metastore the test can kill and start again on the same port and database. */
  private interface Metastore extends AutoCloseable {
    String uri();

    void kill();

    void start();

    @Override
    void close();
  }

  private Metastore start(String setup) {
    Path home = dir.resolve("metastore");
    return switch (setup) {
      case "2.3.10 derby" -> {
        HiveMetastoreServer server = HiveMetastoreServer.startOnDerby();
        yield metastore(server.uri(), server::stop, server::start, server::close);
      }
      case "3.1.3 derby" -> process(MetastoreProcess.onDerby(MetastoreProcess.Version.HIVE_3_1_3, home));
      case "4.0.0 derby" -> process(MetastoreProcess.onDerby(MetastoreProcess.Version.HIVE_4_0_0, home));
      case "4.0.1 derby" -> process(MetastoreProcess.onDerby(MetastoreProcess.Version.HIVE_4_0_1, home));
      case "3.1.3 postgres" -> onPostgres(MetastoreProcess.Version.HIVE_3_1_3, home);
      case "4.0.0 postgres" -> onPostgres(MetastoreProcess.Version.HIVE_4_0_0, home);
      case "4.0.1 postgres" -> onPostgres(MetastoreProcess.Version.HIVE_4_0_1, home);
      default -> throw new IllegalArgumentException(setup);
    };
  }

  /** A metastore process on a PostgreSQL of its own, stopped with it. */
  private static Metastore onPostgres(MetastoreProcess.Version version, Path home) {
    EmbeddedPostgres pg = EmbeddedPostgres.startNew();
    try {
      MetastoreProcess server = MetastoreProcess.onPostgres(version, home, pg);
      return metastore(server.uri(), server::kill, server::start, () -> {
        try (pg) {
          server.close();
        }
      });
    } catch (RuntimeException e) {
      pg.close();
      throw e;
    }
  }

  private static Metastore process(MetastoreProcess server) {
    return metastore(server.uri(), server::kill, server::start, server::close);
  }

  private static Metastore metastore(String uri, Runnable kill, Runnable start, Runnable close) {
    return new Metastore() {
      @Override
      public String uri() {
        return uri;
      }

      @Override
      public void kill() {
        kill.run();
      }

      @Override
      public void start() {
        start.run();
      }

      @Override
      public void close() {
        close.run();
      }
    };
  }

  /**
   * Every tested version once; the {@code long} profile adds 4.0.1 on Derby (fenced by the table lock there, whose
   * race {@code MetastoreFencingIT} runs in every build), and 4.0.0 and 3.1.3 on PostgreSQL (3.1.3 on PostgreSQL is
   * what {@code docker/compose.yaml} runs). {@code -Dlakecommit.metastore.setups="3.1.3 postgres,..."} picks others.
   */
  static List<String> setups() {
    return setups(false);
  }

  /**
   * The setups of Hive 4 ({@code true}; {@link Metastore4VersionsIT}) or of the versions before it: two classes, so
   * that the build's two test JVMs share the versions.
   */
  static List<String> setups(boolean hive4) {
    String picked = System.getProperty("lakecommit.metastore.setups");
    List<String> setups = new ArrayList<>();
    if (picked != null && !picked.isBlank()) {
      setups.addAll(List.of(picked.split("\\s*,\\s*")));
    } else {
      setups.addAll(List.of("2.3.10 derby", "3.1.3 derby", "4.0.0 derby", "4.0.1 postgres"));
      if (TestScale.isLong()) {
        setups.addAll(List.of("4.0.1 derby", "4.0.0 postgres", "3.1.3 postgres"));
      }
    }
    setups.removeIf(setup -> setup.startsWith("4.") != hive4);
    return setups;
  }

  @ParameterizedTest(name = "Hive Metastore {0}", allowZeroInvocations = true)
  @MethodSource("setups")
  void everyStepIsExactOnThisMetastore(String setup) throws Exception {
    try (Metastore hms = start(setup)) {
      Path first = writeInput(dir.resolve("in").resolve("first.jsonl"), 0, 3_000);
      String warehouse = dir.resolve("warehouse").toUri().toString();

      // Ingest, rerun (nothing new), a second job appending.
      List<String> hive = List.of("--target", "hive", "--metastore-uri", hms.uri());
      CliRun ingest = cli(hive, "ingest", "--input", first.toString(), "--table", DB + ".events", "--partition-by",
          "kind", "--job-id", "first", "--checkpoint-dir", dir.resolve("ck-first").toString(),
          "--checkpoint-every-records", "1000", "-C", "warehouse=" + warehouse);
      assertThat(ingest.exitCode()).as("%s: %s", setup, ingest).isZero();
      assertThat(ingest.out()).contains("Committed 3,000 rows in 3 checkpoint(s)");
      CliRun rerun = cli(hive, "ingest", "--input", first.toString(), "--table", DB + ".events", "--partition-by",
          "kind", "--job-id", "first", "--checkpoint-dir", dir.resolve("ck-first").toString(),
          "--checkpoint-every-records", "1000", "-C", "warehouse=" + warehouse);
      assertThat(rerun.exitCode()).as("%s: %s", setup, rerun).isZero();
      assertThat(rerun.out()).contains("Nothing new to commit: job first already committed up to checkpoint 3");
      Path second = writeInput(dir.resolve("in").resolve("second.jsonl"), 3_000, 5_000);
      CliRun append = cli(hive, "ingest", "--input", second.toString(), "--table", DB + ".events",
          "--partition-by", "kind", "--job-id", "second", "--checkpoint-dir", dir.resolve("ck-second").toString());
      assertThat(append.exitCode()).as("%s: %s", setup, append).isZero();
      assertExact(setup, hive, dir.resolve("in"), DB + ".events", 5_000);
      assertPartitionStats(setup, hms.uri(), "events", 5_000);
      assertHiveReads(setup, hms.uri(), "events", 5_000);

      // An Iceberg table through Iceberg's Hive catalog on the same metastore.
      List<String> iceberg = List.of("-C", "type=hive", "-C", "uri=" + hms.uri(), "-C",
          "warehouse=" + dir.resolve("iceberg").toUri());
      CliRun icebergIngest = cli(iceberg, "ingest", "--input", first.toString(), "--table", DB + ".iceberg_events",
          "--job-id", "iceberg", "--checkpoint-dir", dir.resolve("ck-iceberg").toString(),
          "--checkpoint-every-records", "1000");
      assertThat(icebergIngest.exitCode()).as("%s: %s", setup, icebergIngest).isZero();
      assertExact(setup, iceberg, first, DB + ".iceberg_events", 3_000);

      twoCopiesOfOneJob(setup, hms, hive, warehouse);
      // An outage is the client's retries against a dead server, the same on every version: in the default build
      // on 3.1.3 (a process killed with SIGKILL), on every version with -Plong.
      if (TestScale.isLong() || setup.equals(OUTAGE_SETUP)) {
        anOutageOfTheMetastoreIsRiddenThrough(setup, hms, hive, warehouse);
      }
    }
  }

  /**
   * The same command twice, the second started once the first committed: the first is fenced at its next commit, no
   * row twice. A trial in which the first copy finished before the second claimed (a slow JVM start on a busy
   * machine) fences nothing; up to three trials, each on a table of its own, until one does.
   */
  private void twoCopiesOfOneJob(String setup, Metastore hms, List<String> hive, String warehouse) throws Exception {
    Path input = writeInput(dir.resolve("twice.jsonl"), 0, 6_000);
    boolean fenced = false;
    for (int trial = 1; trial <= 3 && !fenced; trial++) {
      String table = DB + ".twice_" + trial;
      List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString(), "--table", table,
          "--partition-by", "kind", "--job-id", "twice-" + trial, "--checkpoint-dir",
          dir.resolve("ck-twice-" + trial).toString(), "--checkpoint-every-records", "300",
          "--max-records-per-second", "400", "-C", "warehouse=" + warehouse));
      args.addAll(hive);
      List<String> command = KillLoop.command(FAST_START, args);
      Path firstLog = dir.resolve("twice-" + trial + "-1.log");
      Process older = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(firstLog.toFile()).start();
      KillLoop.awaitOutput(older, firstLog, " complete: ", 2);
      Path secondLog = dir.resolve("twice-" + trial + "-2.log");
      Process newer = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(secondLog.toFile())
          .start();
      assertThat(older.waitFor(5, TimeUnit.MINUTES)).as("%s: the older copy ended", setup).isTrue();
      assertThat(newer.waitFor(5, TimeUnit.MINUTES)).as("%s: the newer copy ended", setup).isTrue();
      String olderOut = Files.readString(firstLog);
      if (older.exitValue() != 0) {
        assertThat(older.exitValue()).as("%s: the older copy is fenced: %s", setup, olderOut).isEqualTo(3);
        assertThat(olderOut).as(setup).contains("fenced");
        fenced = true;
      }
      // with the older copy's log: where it was fenced tells what it did to the files it staged
      assertThat(newer.exitValue()).as("%s: %s\n--- the older copy's log:\n%s", setup, Files.readString(secondLog),
          olderOut).isZero();
      assertExact(setup, hive, input, table, 6_000);
    }
    assertThat(fenced).as("%s: a copy was fenced by a newer one in one of three trials", setup).isTrue();
  }

  /** The metastore killed after the run's first commits, started again after the outage: the run finishes exact. */
  private void anOutageOfTheMetastoreIsRiddenThrough(String setup, Metastore hms, List<String> hive,
      String warehouse) throws Exception {
    Path input = writeInput(dir.resolve("outage.jsonl"), 0, 8_000);
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString(), "--table", DB + ".outage",
        "--partition-by", "kind", "--job-id", "outage", "--checkpoint-dir", dir.resolve("ck-outage").toString(),
        "--checkpoint-every-records", "1000", "--max-records-per-second", "1000", "-C", "warehouse=" + warehouse));
    args.addAll(hive);
    Path log = dir.resolve("outage.log");
    Process run = new ProcessBuilder(KillLoop.command(FAST_START, args)).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    KillLoop.awaitOutput(run, log, "Committed checkpoint 2 ");
    assertThat(run.isAlive()).as("%s: the run is still going when the metastore dies", setup).isTrue();
    hms.kill();
    // The outage's length, not a wait for something to happen: the run is meant to meet a dead metastore.
    run.waitFor(OUTAGE_SECONDS, TimeUnit.SECONDS);
    hms.start();
    assertThat(run.waitFor(5, TimeUnit.MINUTES)).as("%s: the run ended", setup).isTrue();
    String out = Files.readString(log);
    assertThat(run.exitValue()).as("%s: %s", setup, out).isZero();
    assertThat(out).as("%s: commits were retried through the outage", setup).contains("Retrying");
    assertExact(setup, hive, input, DB + ".outage", 8_000);
  }

  private static void assertExact(String setup, List<String> table, Path source, String name, int rows) {
    CliRun verify = cli(table, "verify", "--source", source.toString(), "--table", name, "--key", "id", "--json");
    assertThat(verify.exitCode()).as("%s: %s", setup, verify).isZero();
    assertThat(verify.out()).as(setup).contains("\"tableRows\" : " + rows).contains("\"duplicateKeys\" : 0")
        .contains("\"lostKeys\" : 0");
  }

  /** Each partition's row count is its rows' number, and marked accurate, as the metastore keeps it. */
  private static void assertPartitionStats(String setup, String uri, String table, int rows) throws Exception {
    HiveConf conf = new HiveConf();
    conf.setVar(HiveConf.ConfVars.METASTOREURIS, uri);
    IMetaStoreClient client = CompatibleMetaStoreClient.open(conf);
    try {
      List<Partition> partitions = client.listPartitions(DB, table, (short) -1);
      assertThat(partitions).as(setup).hasSize(7);
      Map<String, Long> expected = new HashMap<>();
      for (int id = 0; id < rows; id++) {
        expected.merge("k" + (id % 7), 1L, Long::sum);
      }
      for (Partition partition : partitions) {
        Map<String, String> params = partition.getParameters();
        assertThat(Long.parseLong(params.get("numRows"))).as("%s: numRows of %s", setup, partition.getValues())
            .isEqualTo(expected.get(partition.getValues().get(0)));
        assertThat(params.get("COLUMN_STATS_ACCURATE")).as("%s: %s", setup, params).contains("\"BASIC_STATS\":\"true\"");
        try (Stream<Path> files = Files.list(Path.of(java.net.URI.create(partition.getSd().getLocation())))) {
          assertThat(files.filter(f -> f.getFileName().toString().endsWith(".parquet")).count())
              .as("%s: numFiles of %s", setup, partition.getValues()).isEqualTo(Long.parseLong(params.get("numFiles")));
        }
      }
    } finally {
      client.close();
    }
  }

  /** Hive's own Parquet reader, on the partitions this metastore lists, finds every row once. */
  private static void assertHiveReads(String setup, String uri, String table, int rows) throws Exception {
    HiveConf conf = new HiveConf();
    conf.setVar(HiveConf.ConfVars.METASTOREURIS, uri);
    IMetaStoreClient client = CompatibleMetaStoreClient.open(conf);
    try {
      List<List<Object>> read = HiveReader.read(client, new Configuration(), DB, table);
      assertThat(read).as(setup).hasSize(rows);
      for (List<Object> row : read) {
        long id = ((Number) row.get(0)).longValue();
        assertThat(row.get(row.size() - 1)).as("%s: the partition of id %s", setup, id).isEqualTo("k" + (id % 7));
      }
      assertThat(read.stream().map(row -> ((Number) row.get(0)).longValue()).distinct().count()).as(setup)
          .isEqualTo(rows);
    } finally {
      client.close();
    }
  }

  private static CliRun cli(List<String> table, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(table);
    return CliRun.of(all.toArray(String[]::new));
  }

  /** JSON lines with ids {@code from} to {@code to - 1}, {@code kind} k0 to k6. */
  private static Path writeInput(Path file, int from, int to) throws IOException {
    Files.createDirectories(file.getParent());
    try (BufferedWriter out = Files.newBufferedWriter(file)) {
      for (int id = from; id < to; id++) {
        out.write("{\"id\": " + id + ", \"kind\": \"k" + (id % 7) + "\", \"value\": " + (id * 31 % 1000) + "}\n");
      }
    }
    return file;
  }
}
