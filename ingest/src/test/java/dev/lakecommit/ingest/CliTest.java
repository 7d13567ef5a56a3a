package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

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

  @ParameterizedTest
  @ValueSource(strings = {"ingest", "verify", "status", "cleanup"})
  void everyCommandHasHelp(String command) {
    CliRun help = CliRun.of(command, "--help");
    assertThat(help.exitCode()).isZero();
    assertThat(help.out()).contains("Usage: lakecommit " + command).contains("--table");
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
    assertThat(run.exitCode()).isNotZero();
    assertThat(run.err()).contains("nope.jsonl");
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
    assertThat(dry.out()).contains("1 orphan staged file(s) of job orders above checkpoint 4 from runs before the"
        + " newest (epoch 2)").contains("orders-9-e1-0-0-0.parquet").doesNotContain("orders-9-e2");
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
}
