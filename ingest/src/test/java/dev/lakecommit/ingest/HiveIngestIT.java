package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.JobId;
import dev.lakecommit.hive.testing.HiveMetastoreServer;
import dev.lakecommit.staging.StagingLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --target hive} against an in-process Hive Metastore (Derby) with a local warehouse: the sample ingest,
 * a rerun that commits nothing, {@code verify}, {@code status}, {@code cleanup}, a verify that finds a planted
 * duplicate and a planted loss, and the metastore URI given as users of Iceberg's HiveCatalog give it.
 */
class HiveIngestIT {
  static final String SAMPLE = Path.of("../examples/orders.jsonl").toString();

  private static HiveMetastoreServer hms;

  @TempDir Path dir;

  @BeforeAll
  static void start() {
    hms = HiveMetastoreServer.startOnDerby();
  }

  @AfterAll
  static void stop() {
    hms.close();
  }

  private List<String> hive(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--target", "hive", "--metastore-uri", hms.uri()));
    return all;
  }

  private CliRun run(List<String> args) {
    return CliRun.of(args.toArray(String[]::new));
  }

  private List<String> ingest(String table, String job) {
    List<String> args = hive("ingest", "--input", SAMPLE, "--table", table, "--partition-by", "region",
        "--job-id", job, "--checkpoint-every-records", "700", "--checkpoint-dir", checkpoints(job),
        "-C", "warehouse=" + dir.resolve("wh").toUri());
    return args;
  }

  private String checkpoints(String job) {
    return dir.resolve("checkpoints").resolve(job).toString();
  }

  /**
   * {@code maintain --target hive --compact}: the dry run prints the plan and changes nothing; the run merges each
   * partition's small files, verify finds every row once, and the next run deletes the replaced files. An ingest
   * with {@code --maintain-every} merges while it commits, and its table verifies exact.
   */
  @Test
  void maintainMergesTheSmallFilesOfAHiveTable() throws Exception {
    List<String> small = hive("ingest", "--input", SAMPLE, "--table", "shop.small", "--partition-by", "region",
        "--job-id", "small", "--checkpoint-every-records", "200", "--checkpoint-dir", checkpoints("small"),
        "-C", "warehouse=" + dir.resolve("wh").toUri());
    CliRun ingest = run(small);
    assertThat(ingest.exitCode()).as(ingest.toString()).isZero();
    List<Path> before = dataFiles("shop.small");
    String order = outOfOrder("shop.small");

    CliRun plan = run(hive("maintain", "--table", "shop.small", "--compact", "--keep-checkpoints", "2",
        "--dry-run"));
    assertThat(plan.exitCode()).as(plan.toString()).isZero();
    assertThat(plan.out()).contains("Plan for Hive table shop.small")
        .containsPattern("merge: [1-9][0-9]* partition\\(s\\) with small files to merge")
        .containsPattern("partition region=[^:]+: [0-9]+ files, [0-9]+ bytes -> 1 file\\(s\\); [0-9]+ other file\\(s\\) "
            + "copied");
    assertThat(dataFiles("shop.small")).isEqualTo(before);

    CliRun merge = run(hive("maintain", "--table", "shop.small", "--compact", "--keep-checkpoints", "2"));
    assertThat(merge.exitCode()).as(merge.toString()).isZero();
    assertThat(merge.out()).containsPattern("merged [1-9][0-9]* partition\\(s\\)");
    assertThat(dataFiles("shop.small")).hasSizeLessThan(before.size());
    CliRun verify = run(hive("verify", "--table", "shop.small", "--source", SAMPLE, "--key", "order_id"));
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    // merged files keep the checkpoints of their rows: the commit order audit reads the same as before the merge
    assertThat(outOfOrder("shop.small")).isEqualTo(order);

    CliRun next = run(hive("maintain", "--table", "shop.small", "--compact", "--keep-checkpoints", "2"));
    assertThat(next.exitCode()).as(next.toString()).isZero();
    assertThat(next.out()).containsPattern("deleted [1-9][0-9]* file\\(s\\) earlier merges replaced");
    assertThat(run(hive("verify", "--table", "shop.small", "--source", SAMPLE, "--key", "order_id")).exitCode())
        .isZero();

    List<String> maintained = hive("ingest", "--input", SAMPLE, "--table", "shop.maintained", "--partition-by",
        "region", "--job-id", "maintained", "--checkpoint-every-records", "100", "--checkpoint-dir",
        checkpoints("maintained"), "-C", "warehouse=" + dir.resolve("wh").toUri(), "--maintain-every", "4");
    CliRun job = run(maintained);
    assertThat(job.exitCode()).as(job.toString()).isZero();
    assertThat(job.out()).contains("Committed 2,000 rows in 20 checkpoint(s)");
    assertThat(run(hive("verify", "--table", "shop.maintained", "--source", SAMPLE, "--key", "order_id"))
        .exitCode()).isZero();
    assertThat(outOfOrder("shop.maintained")).isEqualTo(order);
    HiveMetaStoreClient client = hms.newClient();
    try {
      List<Partition> partitions = client.listPartitions("shop", "maintained", (short) -1);
      assertThat(partitions).as("partitions a round merged")
          .anyMatch(p -> p.getSd().getLocation().contains("/.lakecommit-merge/"));
    } finally {
      client.close();
    }
  }

  /** What {@code verify --event-time} counts out of order in {@code table} (the source is read in file order). */
  /**
   * {@code verify} of a Hive table opens one file system per pass over the table and closes it, not one per data
   * file: with a scheme's cache off (as the S3 tests set S3A up) every {@code Path.getFileSystem} is a new instance,
   * and one per file that nobody closed kept thousands of S3A clients alive in a full-size audit.
   */
  @Test
  void verifyOfAHiveTableClosesTheFileSystemsItOpens() throws Exception {
    CliRun ingest = run(hive("ingest", "--input", SAMPLE, "--table", "shop.counted", "--partition-by", "region",
        "--job-id", "counted", "--checkpoint-every-records", "500", "--checkpoint-dir", checkpoints("counted"),
        "-C", "warehouse=" + dir.resolve("wh").toUri()));
    assertThat(ingest.exitCode()).as(ingest.toString()).isZero();
    int files = dataFiles("shop.counted").size();

    CountingLocalFileSystem.reset();
    CliRun verify = run(hive("verify", "--table", "shop.counted", "--source", SAMPLE, "--key", "order_id",
        "--event-time", "ordered_at", "-C", "fs.file.impl=" + CountingLocalFileSystem.class.getName(),
        "-C", "fs.file.impl.disable.cache=true"));
    int opened = CountingLocalFileSystem.initialized();
    int closed = CountingLocalFileSystem.closed();

    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("PASSED");
    // the key pass and the event-time pass over the table, and the source's storage: each one file system
    assertThat(opened).as("file systems opened by verify over %s data files", files).isPositive()
        .isLessThanOrEqualTo(3).isLessThan(files);
    assertThat(closed).as("file systems closed of %s opened", opened).isEqualTo(opened);
  }

  private String outOfOrder(String table) {
    CliRun verify = run(hive("verify", "--table", table, "--source", SAMPLE, "--key", "order_id", "--event-time",
        "ordered_at", "--json"));
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    java.util.regex.Matcher count = java.util.regex.Pattern.compile("\"outOfOrderRows\" : ([0-9]+)")
        .matcher(verify.out());
    assertThat(count.find()).as(verify.toString()).isTrue();
    return count.group(1);
  }

  /** The visible data files of a table's partitions, where the metastore says they are. */
  private List<Path> dataFiles(String table) throws Exception {
    String[] name = table.split("\\.");
    List<Path> files = new ArrayList<>();
    HiveMetaStoreClient client = hms.newClient();
    try {
      for (Partition partition : client.listPartitions(name[0], name[1], (short) -1)) {
        try (Stream<Path> list = Files.list(Path.of(java.net.URI.create(partition.getSd().getLocation())))) {
          list.filter(Files::isRegularFile).filter(f -> !f.getFileName().toString().startsWith("."))
              .filter(f -> !f.getFileName().toString().startsWith("_")).forEach(files::add);
        }
      }
    } finally {
      client.close();
    }
    files.sort(null);
    return files;
  }

  @Test
  void ingestsTheSampleIntoAPartitionedHiveTableExactlyOnce() throws Exception {
    CliRun first = run(ingest("shop.orders", "orders"));
    assertThat(first.exitCode()).as(first.toString()).isZero();
    assertThat(first.out()).contains("Committed 2,000 rows in 3 checkpoint(s) (3 commit(s), 0 already committed)")
        .contains("Hive table shop.orders").contains("checkpoint 3 of job orders");

    CliRun again = run(ingest("shop.orders", "orders"));
    assertThat(again.exitCode()).as(again.toString()).isZero();
    assertThat(again.out()).contains("Nothing new to commit: job orders already committed up to checkpoint 3");

    // What a Hive reader sees: the table at the warehouse location, one partition per region of the sample.
    Set<String> regions = new TreeSet<>();
    try (Stream<String> lines = Files.lines(Path.of(SAMPLE))) {
      lines.forEach(line -> regions.add(line.replaceAll(".*\"region\": \"([^\"]+)\".*", "$1")));
    }
    HiveMetaStoreClient client = hms.newClient();
    try {
      Table table = client.getTable("shop", "orders");
      assertThat(table.getSd().getLocation()).endsWith("/wh/shop.db/orders");
      assertThat(table.getParameters()).containsEntry("lakecommit.committed.orders", "3");
      List<Partition> partitions = client.listPartitions("shop", "orders", (short) -1);
      assertThat(partitions).extracting(p -> p.getValues().get(0)).containsExactlyInAnyOrderElementsOf(regions);
      long rows = partitions.stream().mapToLong(p -> Long.parseLong(p.getParameters().get("numRows"))).sum();
      assertThat(rows).isEqualTo(2000);
    } finally {
      client.close();
    }

    CliRun verify = run(hive("verify", "--source", SAMPLE, "--table", "shop.orders", "--key", "order_id",
        "--event-time", "ordered_at", "--json"));
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("\"sourceRows\" : 2000").contains("\"tableRows\" : 2000")
        .contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0").contains("\"outOfOrderRows\" : 0");

    // The key may also be the partition column: its values come from the partitions, as Hive reads them.
    CliRun byRegion = run(hive("verify", "--source", SAMPLE, "--table", "shop.orders", "--key", "region",
        "--json"));
    assertThat(byRegion.out()).as(byRegion.toString()).contains("\"tableRows\" : 2000")
        .contains("\"lostKeys\" : 0").doesNotContain("\"duplicateKeys\" : 0");

    CliRun status = run(hive("status", "--table", "shop.orders", "--job-id", "orders", "--checkpoint-dir",
        checkpoints("orders"), "--json"));
    assertThat(status.exitCode()).as(status.toString()).isZero();
    assertThat(status.out()).contains("\"target\" : \"hive\"").contains("\"orders\" : 3")
        .contains("\"partitions\" : " + regions.size()).contains("\"latest-checkpoint\" : 3")
        .contains("\"pending-checkpoints\" : [ ]");
    CliRun plain = run(hive("status", "--table", "shop.orders"));
    assertThat(plain.out()).as(plain.toString()).contains("Hive table shop.orders at ")
        .contains("job orders: last committed checkpoint 3");
  }

  @Test
  void cleanupFindsOrphanStagedFilesOnlyDeletingWhenAskedAndVerifyFindsPlantedDuplicatesAndLosses() throws Exception {
    CliRun ingest = run(ingest("shop.cleaned", "cleaned"));
    assertThat(ingest.exitCode()).as(ingest.toString()).isZero();
    // Leftovers of crashed attempts: one in a committed checkpoint, one above every durable checkpoint; and a
    // file of another job, which must stay.
    StagingLayout layout = StagingLayout.under(dir.resolve("wh/shop.db/cleaned/.lakecommit-staging").toString());
    Path committed = plant(layout.checkpointPrefix(JobId.of("cleaned"), 2) + "region=eu/cleaned-2-0-7-0.parquet");
    Path above = plant(layout.checkpointPrefix(JobId.of("cleaned"), 9) + "cleaned-9-1-7-0.parquet");
    Path otherJob = plant(layout.checkpointPrefix(JobId.of("other"), 9) + "other-9-1-0-0.parquet");

    List<String> cleanup = hive("cleanup", "--table", "shop.cleaned", "--job-id", "cleaned", "--checkpoint-dir",
        checkpoints("cleaned"));
    CliRun dryRun = run(cleanup);
    assertThat(dryRun.exitCode()).as(dryRun.toString()).isZero();
    assertThat(dryRun.out()).contains("2 orphan staged file(s) of job cleaned in shop.cleaned")
        .contains("committed up to checkpoint 3").contains("1 above checkpoint 3").contains("1 left over").contains("run with --delete")
        .contains(committed.getFileName().toString()).contains(above.getFileName().toString())
        .doesNotContain(otherJob.getFileName().toString());
    assertThat(committed).exists();
    assertThat(above).exists();

    cleanup.add("--delete");
    CliRun delete = run(cleanup);
    assertThat(delete.out()).as(delete.toString()).contains("Deleted 2 orphan staged file(s) of job cleaned");
    assertThat(committed).doesNotExist();
    assertThat(above).doesNotExist();
    assertThat(otherJob).exists();

    // The table is untouched.
    List<String> verify = hive("verify", "--source", SAMPLE, "--table", "shop.cleaned", "--key", "order_id",
        "--json");
    CliRun intact = run(verify);
    assertThat(intact.exitCode()).as(intact.toString()).isZero();

    // verify can fail: a data file copied within its partition (duplicates) and another one deleted (losses).
    List<Path> files;
    try (Stream<Path> walk = Files.walk(dir.resolve("wh/shop.db/cleaned"))) {
      files = walk.filter(f -> f.toString().endsWith(".parquet") && !f.toString().contains("/.")).sorted()
          .toList();
    }
    assertThat(files).hasSizeGreaterThanOrEqualTo(2);
    Files.copy(files.get(0), files.get(0).resolveSibling("copy-of-" + files.get(0).getFileName()));
    Files.delete(files.get(files.size() - 1));
    CliRun planted = run(verify);
    assertThat(planted.exitCode()).as(planted.toString()).isEqualTo(1);
    assertThat(planted.out()).doesNotContain("\"duplicateKeys\" : 0").doesNotContain("\"lostKeys\" : 0");
  }

  @Test
  void acceptsTheMetastoreAsIcebergHiveCatalogUsersPassIt() {
    List<String> args = new ArrayList<>(List.of("ingest", "--target", "hive", "--input", SAMPLE,
        "--table", "shop.by_uri", "--job-id", "by-uri", "--checkpoint-dir", checkpoints("by-uri"),
        "-C", "type=hive", "-C", "uri=" + hms.uri(), "-C", "warehouse=" + dir.resolve("wh").toUri()));
    CliRun ingest = run(args);
    assertThat(ingest.exitCode()).as(ingest.toString()).isZero();
    assertThat(ingest.out()).contains("Committed 2,000 rows in 1 checkpoint(s)");
    CliRun status = run(List.of("status", "--target", "hive", "--table", "shop.by_uri",
        "-C", "hive.metastore.uris=" + hms.uri()));
    assertThat(status.out()).as(status.toString()).contains("job by-uri: last committed checkpoint 1");

    CliRun missing = run(List.of("status", "--target", "hive", "--metastore-uri", hms.uri(),
        "--table", "shop.nope"));
    assertThat(missing.exitCode()).as(missing.toString()).isEqualTo(2);
    assertThat(missing.err()).contains("Table shop.nope does not exist");
  }

  @Test
  void theOutOfOrderRateFollowsTheCheckpointsOfTheFileNames() throws Exception {
    // The sample's order times rise strictly; reversed, every checkpoint after the first is entirely late.
    List<String> lines = new ArrayList<>(Files.readAllLines(Path.of(SAMPLE)));
    java.util.Collections.reverse(lines);
    Path reversed = Files.write(dir.resolve("reversed.jsonl"), lines);
    CliRun ingest = run(hive("ingest", "--input", reversed.toString(), "--table", "shop.reversed", "--job-id",
        "reversed", "--checkpoint-every-records", "700", "--parallelism", "1", "--checkpoint-dir",
        checkpoints("reversed"), "-C", "warehouse=" + dir.resolve("wh").toUri()));
    assertThat(ingest.exitCode()).as(ingest.toString()).isZero();
    assertThat(ingest.out()).contains("in 3 checkpoint(s)");
    CliRun verify = run(hive("verify", "--source", reversed.toString(), "--table", "shop.reversed", "--key",
        "order_id", "--event-time", "ordered_at", "--json"));
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("\"lostKeys\" : 0").contains("\"outOfOrderRows\" : 1300");
  }

  private static Path plant(String location) throws IOException {
    Path file = Path.of(location.startsWith("file:") ? java.net.URI.create(location).getPath() : location);
    Files.createDirectories(file.getParent());
    Files.writeString(file, "leftover");
    return file;
  }
}
