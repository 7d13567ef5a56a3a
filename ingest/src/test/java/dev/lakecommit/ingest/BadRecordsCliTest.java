package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.ingest.cli.LakecommitCommand;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad records as a user meets them (issue 15, "Bad records"): a stray CSV quote costs one line, not the rest of
 * the file; the run says how many records it diverted and exits 4; {@code --max-bad-records} bounds them;
 * {@code verify} audits a source with bad rows.
 */
class BadRecordsCliTest {
  @TempDir Path dir;

  private String[] ingest(Path input, String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString(), "--table", "land.rows",
        "--warehouse", dir.resolve("wh").toString(), "--job-id", "rows"));
    args.addAll(List.of(extra));
    return args.toArray(String[]::new);
  }

  /** Was: 25,000 rows after an unterminated quote went to the dead-letter file as one record, exit 0, no count. */
  @Test
  void anUnterminatedCsvQuoteDivertsOneRecordAndTheRunSaysSo() throws Exception {
    StringBuilder text = new StringBuilder("id,name\n");
    for (int i = 1; i <= 25_000; i++) {
      text.append(i).append(i == 7 ? ",\"no closing quote\n" : ",n" + i + "\n");
    }
    Path input = Files.writeString(dir.resolve("rows.csv"), text);

    CliRun run = CliRun.of(ingest(input, "--bad-records", dir.resolve("bad").toString(),
        "--checkpoint-every-records", "5000"));

    assertThat(run.exitCode()).as(run.toString()).isEqualTo(LakecommitCommand.COMPLETED_WITH_BAD_RECORDS);
    assertThat(run.out()).contains("Committed 24,999 rows")
        .contains("checkpoint 1 complete: 5,000 rows, 1 record(s) to dead-letter files (1 in all)")
        .contains("1 record(s) of this job went to dead-letter files in " + dir.resolve("bad") + " (1 in this run)");
    try (var files = Files.list(dir.resolve("bad"))) {
      List<String> letters = Files.readAllLines(files.findFirst().orElseThrow());
      assertThat(letters).singleElement().asString().contains("\"line\":8", "unterminated quoted field");
    }

    CliRun verify = CliRun.of("verify", "--source", input.toString(), "--table", "land.rows", "--warehouse",
        dir.resolve("wh").toString(), "--key", "id", "--json");
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("\"sourceRows\" : 24999", "\"unparseableSourceRows\" : 1",
        "\"duplicateKeys\" : 0", "\"lostKeys\" : 0");
    CliRun table = CliRun.of("verify", "--source", input.toString(), "--table", "land.rows", "--warehouse",
        dir.resolve("wh").toString(), "--key", "id");
    assertThat(table.out()).contains("unparseable source rows").contains("1 row left out of the audit");

    CliRun status = CliRun.of("status", "--table", "land.rows", "--warehouse", dir.resolve("wh").toString(),
        "--job-id", "rows", "--json");
    assertThat(status.out()).contains("\"diverted-records\" : 1");

    CliRun rerun = CliRun.of(ingest(input, "--bad-records", dir.resolve("bad").toString(),
        "--checkpoint-every-records", "5000"));
    assertThat(rerun.exitCode()).as("the job's records are still diverted: " + rerun)
        .isEqualTo(LakecommitCommand.COMPLETED_WITH_BAD_RECORDS);
    assertThat(rerun.out()).contains("Nothing new to commit").contains("(0 in this run)");
  }

  @Test
  void moreBadRecordsThanAllowedFailTheJobKeepingEarlierCheckpoints() throws Exception {
    StringBuilder text = new StringBuilder();
    for (int i = 1; i <= 30; i++) {
      text.append(i % 10 == 5 ? "{\"id\": \"bad " + i + "\"}" : "{\"id\": " + i + "}").append('\n');
    }
    Path input = Files.writeString(dir.resolve("rows.jsonl"), text);
    String[] limited = ingest(input, "--schema", "id long", "--checkpoint-every-records", "10", "--bad-records",
        dir.resolve("bad").toString(), "--max-bad-records", "1");

    CliRun run = CliRun.of(limited);

    assertThat(run.exitCode()).as(run.toString()).isEqualTo(LakecommitCommand.JOB_FAILED);
    assertThat(run.err()).contains("More bad records than allowed", "already diverted 1 record(s)",
        "rows.jsonl line 15").doesNotContain("\tat ");
    CliRun status = CliRun.of("status", "--table", "land.rows", "--warehouse", dir.resolve("wh").toString(),
        "--job-id", "rows", "--json");
    assertThat(status.out()).contains("\"last-committed-checkpoint\" : 1", "\"diverted-records\" : 1");

    CliRun usage = CliRun.of(ingest(input, "--max-bad-records", "3"));
    assertThat(usage.exitCode()).as(usage.toString()).isEqualTo(LakecommitCommand.USAGE);
    assertThat(usage.err()).contains("--max-bad-records needs --bad-records");

    CliRun unlimited = CliRun.of(ingest(input, "--schema", "id long", "--checkpoint-every-records", "10",
        "--bad-records", dir.resolve("bad").toString()));
    assertThat(unlimited.exitCode()).as(unlimited.toString()).isEqualTo(LakecommitCommand.COMPLETED_WITH_BAD_RECORDS);
    assertThat(unlimited.out()).contains("3 record(s) of this job went to dead-letter files");
  }

  /**
   * {@code --max-bad-records 1%}: a source that turns bad (10 % of its rows from row 3,001 on) stops the job once
   * more than 1 % of what it read was bad; what it committed stays, and a rerun with a higher limit ingests the
   * rest exactly once. A small input over the rate fails at its end.
   */
  @Test
  void aBadRecordRateStopsTheJobAndNothingAcceptedIsLost() throws Exception {
    StringBuilder text = new StringBuilder();
    int bad = 0;
    for (int i = 1; i <= 5000; i++) {
      boolean isBad = i <= 3000 ? i % 500 == 0 : i % 10 == 0;
      bad += isBad ? 1 : 0;
      text.append(isBad ? "{\"id\": \"bad " + i + "\"}" : "{\"id\": " + i + "}").append('\n');
    }
    Path input = Files.writeString(dir.resolve("rows.jsonl"), text);
    String badDir = dir.resolve("bad").toString();

    CliRun run = CliRun.of(ingest(input, "--schema", "id long", "--checkpoint-every-records", "1000",
        "--bad-records", badDir, "--max-bad-records", "1%"));

    assertThat(run.exitCode()).as(run.toString()).isEqualTo(LakecommitCommand.JOB_FAILED);
    assertThat(run.err()).contains("More bad records than allowed:", "more than the limit of 1 % "
        + "(--max-bad-records)", "rows.jsonl line 3").doesNotContain("\tat ");
    CliRun status = CliRun.of("status", "--table", "land.rows", "--warehouse", dir.resolve("wh").toString(),
        "--job-id", "rows", "--json");
    assertThat(status.out()).as("what was accepted before is committed").contains(
        "\"last-committed-checkpoint\" : 3", "\"records-read\" : 3000", "\"diverted-records\" : 6");

    CliRun rest = CliRun.of(ingest(input, "--schema", "id long", "--checkpoint-every-records", "1000",
        "--bad-records", badDir, "--max-bad-records", "20%"));
    assertThat(rest.exitCode()).as(rest.toString()).isEqualTo(LakecommitCommand.COMPLETED_WITH_BAD_RECORDS);
    CliRun verify = CliRun.of("verify", "--source", input.toString(), "--table", "land.rows", "--warehouse",
        dir.resolve("wh").toString(), "--key", "id", "--schema", "id long", "--json");
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("\"sourceRows\" : " + (5000 - bad), "\"unparseableSourceRows\" : " + bad,
        "\"duplicateKeys\" : 0", "\"lostKeys\" : 0");

    Path small = Files.writeString(dir.resolve("small.jsonl"), "{\"id\": 1}\n{\"id\": \"x\"}\n{\"id\": 3}\n");
    CliRun atEnd = CliRun.of("ingest", "--input", small.toString(), "--table", "land.small", "--warehouse",
        dir.resolve("wh").toString(), "--schema", "id long", "--bad-records", badDir, "--max-bad-records", "5%");
    assertThat(atEnd.exitCode()).as(atEnd.toString()).isEqualTo(LakecommitCommand.JOB_FAILED);
    assertThat(atEnd.err()).contains("1 of the 3 records the job read (33.33 %) were bad, more than the limit of 5 % "
        + "(--max-bad-records) at the end of the input");

    for (String value : List.of("1.5x", "-1", "101%", "%")) {
      CliRun usage = CliRun.of(ingest(input, "--bad-records", badDir, "--max-bad-records", value));
      assertThat(usage.exitCode()).as(usage.toString()).isEqualTo(LakecommitCommand.USAGE);
      assertThat(usage.err()).contains("Invalid value for option --max-bad-records: '" + value + "'");
    }
  }
}
