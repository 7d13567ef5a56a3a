package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Input identity as a user meets it (issue 15, "Input identity"): one input however it is spelled is one job; a
 * landing file replaced under the same name is never resumed at the old offset — the job stops naming the file,
 * or, with {@code --on-changed-input new-job}, ingests it as new input; jobs of earlier versions keep their ids.
 */
class InputIdentityCliTest {
  @TempDir Path dir;

  private String[] ingest(String input, String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input, "--table", "land.events",
        "--warehouse", dir.resolve("wh").toString(), "--checkpoint-every-records", "400"));
    args.addAll(List.of(extra));
    return args.toArray(String[]::new);
  }

  private CliRun verify(Path source) {
    return CliRun.of("verify", "--source", source.toString(), "--table", "land.events", "--warehouse",
        dir.resolve("wh").toString(), "--key", "id", "--json");
  }

  /** A second input's job pointed at the first job's checkpoint location is told whose it is, not "corrupt". */
  @Test
  void aCheckpointLocationOfAnotherJobIsNamedAsSuch() throws Exception {
    Path a = write(dir.resolve("in/a.jsonl"), 1, 1000);
    Path b = write(dir.resolve("in/b.jsonl"), 1001, 2000);
    String checkpoints = dir.resolve("checkpoints").toString();
    CliRun first = CliRun.of(ingest(a.toString(), "--job-id", "job-a", "--checkpoint-dir", checkpoints));
    assertThat(first.exitCode()).as(first.toString()).isZero();

    CliRun second = CliRun.of(ingest(b.toString(), "--job-id", "job-b", "--checkpoint-dir", checkpoints));
    assertThat(second.exitCode()).as(second.toString()).isNotZero();
    assertThat(second.err()).contains("The checkpoint location " + checkpoints, "belongs to job job-a",
        "not to job job-b", "give each job a checkpoint location of its own").doesNotContain("corrupt");
    CliRun untouched = verify(a);
    assertThat(untouched.out()).contains("\"tableRows\" : 1000").contains("\"duplicateKeys\" : 0");
  }

  /** Was: {@code in/a.jsonl}, {@code ./in/a.jsonl} and {@code /abs/in/a.jsonl} were three jobs, every row thrice. */
  @Test
  void threeSpellingsOfOneInputAreOneJob() throws Exception {
    Path file = write(dir.resolve("in/a.jsonl"), 1, 1000);
    String relative = Path.of("").toAbsolutePath().relativize(file).toString();

    CliRun first = CliRun.of(ingest(relative));
    assertThat(first.exitCode()).as(first.toString()).isZero();
    assertThat(first.out()).contains("Committed 1,000 rows");
    for (String spelling : List.of("./" + relative, file.toString(), file.getParent() + "/../in/a.jsonl")) {
      CliRun again = CliRun.of(ingest(spelling));
      assertThat(again.exitCode()).as(again.toString()).isZero();
      assertThat(again.out()).as(spelling).contains("Nothing new to commit");
    }
    CliRun verify = verify(file);
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("\"tableRows\" : 1000", "\"duplicateKeys\" : 0", "\"lostKeys\" : 0");
  }

  /**
   * Was: the next day's file under the same name resumed at the old byte offset: 993 of 1,000 new rows lost, exit 0
   * (with {@code --bad-records} too). Now the rerun stops naming the file and commits nothing; with
   * {@code --on-changed-input new-job} the new file is ingested whole as a new job, once.
   */
  @Test
  void aLandingFileReplacedUnderTheSameNameStopsTheJobOrIsIngestedAsANewJob() throws Exception {
    Path landing = write(dir.resolve("landing/events.jsonl"), 1, 1000);
    Path yesterday = Files.copy(landing, dir.resolve("yesterday.jsonl"));
    CliRun first = CliRun.of(ingest(landing.toString(), "--bad-records", dir.resolve("bad").toString()));
    assertThat(first.exitCode()).as(first.toString()).isZero();

    write(landing, 100_001, 101_000); // the next day's file: other rows, a little longer
    CliRun resumed = CliRun.of(ingest(landing.toString(), "--bad-records", dir.resolve("bad").toString()));
    assertThat(resumed.exitCode()).as(resumed.toString()).isEqualTo(3);
    assertThat(resumed.err()).contains("Input file " + landing + " changed", "replaced or rewritten",
        "--on-changed-input new-job").doesNotContain("\tat ");
    CliRun stillYesterday = verify(yesterday);
    assertThat(stillYesterday.out()).as("nothing of the new file committed").contains("\"tableRows\" : 1000",
        "\"lostKeys\" : 0", "\"duplicateKeys\" : 0");

    CliRun asNew = CliRun.of(ingest(landing.toString(), "--on-changed-input", "new-job"));
    assertThat(asNew.exitCode()).as(asNew.toString()).isZero();
    assertThat(asNew.out()).contains("changed", "-input2", "Committed 1,000 rows");
    CliRun again = CliRun.of(ingest(landing.toString(), "--on-changed-input", "new-job"));
    assertThat(again.exitCode()).as(again.toString()).isZero();
    assertThat(again.out()).contains("Nothing new to commit").contains("-input2");

    CliRun today = verify(landing);
    assertThat(today.out()).contains("\"sourceRows\" : 1000", "\"tableRows\" : 2000", "\"duplicateKeys\" : 0",
        "\"lostKeys\" : 0", "\"unexpectedKeys\" : 1000");
    assertThat(verify(yesterday).out()).contains("\"lostKeys\" : 0", "\"duplicateKeys\" : 0");
  }

  /**
   * Was: only the file a job stopped in was checked on a rerun; an earlier file of the input replaced under its name
   * (same size, other rows) gave "Nothing new to commit", exit 0, its new rows lost. Now the rerun stops naming the
   * file and what changed, commits nothing; with {@code --on-changed-input new-job} the input is ingested again as
   * new input (the unchanged file too: its rows are then in the table twice, as documented).
   */
  @Test
  void anEarlierFileReplacedWithTheSameSizeStopsTheJobOrIsIngestedAsANewJob() throws Exception {
    Path a = write(dir.resolve("landing/a.jsonl"), 100_001, 100_600);
    Path b = write(dir.resolve("landing/b.jsonl"), 100_601, 101_000);
    String landing = dir.resolve("landing").toString();
    CliRun first = CliRun.of(ingest(landing));
    assertThat(first.exitCode()).as(first.toString()).isZero();
    assertThat(first.out()).contains("Committed 1,000 rows");
    Path yesterday = Files.copy(a, dir.resolve("yesterday-a.jsonl"));

    long size = Files.size(a);
    write(a, 200_001, 200_600); // the same count of rows, keys of the same length
    assertThat(Files.size(a)).as("the same size").isEqualTo(size);
    CliRun rerun = CliRun.of(ingest(landing));
    assertThat(rerun.exitCode()).as(rerun.toString()).isEqualTo(3);
    assertThat(rerun.err()).contains("Input file " + a + " changed after the job read it to its end",
        "its modification time", "--on-changed-input new-job").doesNotContain("\tat ", "its size");
    assertThat(rerun.out()).doesNotContain("Nothing new to commit");
    assertThat(verify(yesterday).out()).as("nothing committed").contains("\"tableRows\" : 1000",
        "\"lostKeys\" : 0", "\"duplicateKeys\" : 0");

    CliRun asNew = CliRun.of(ingest(landing, "--on-changed-input", "new-job"));
    assertThat(asNew.exitCode()).as(asNew.toString()).isZero();
    assertThat(asNew.out()).contains(a + " changed", "-input2", "Committed 1,000 rows");
    CliRun today = verify(a);
    assertThat(today.exitCode()).as("b.jsonl's rows twice: " + today).isEqualTo(1);
    assertThat(today.out()).as("the new rows landed, once").contains("\"sourceRows\" : 600", "\"lostKeys\" : 0",
        "\"tableRows\" : 2000", "\"duplicateKeys\" : 400", "\"unexpectedKeys\" : 1000");
    assertThat(verify(b).out()).as("b.jsonl, unchanged, ingested by both jobs").contains("\"lostKeys\" : 0",
        "\"duplicateKeys\" : 400");
  }

  /** A job started by an earlier version (id from the input as typed) is continued, not started afresh. */
  @Test
  void aJobOfAnEarlierVersionKeepsItsId() throws Exception {
    Path file = write(dir.resolve("in/a.jsonl"), 1, 1000);
    String relative = Path.of("").toAbsolutePath().relativize(file).toString();
    String legacy = "ingest-land-events-" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
        .digest((relative + "\n" + "land.events").getBytes(StandardCharsets.UTF_8)), 0, 4);
    CliRun old = CliRun.of(ingest(relative, "--job-id", legacy));
    assertThat(old.exitCode()).as(old.toString()).isZero();

    CliRun upgraded = CliRun.of(ingest(relative));
    assertThat(upgraded.exitCode()).as(upgraded.toString()).isZero();
    assertThat(upgraded.out()).contains("Continuing job " + legacy).contains("Nothing new to commit");
    assertThat(verify(file).out()).contains("\"duplicateKeys\" : 0", "\"lostKeys\" : 0");
  }

  static Path write(Path file, int from, int to) throws Exception {
    Files.createDirectories(file.getParent());
    StringBuilder text = new StringBuilder();
    for (int i = from; i <= to; i++) {
      text.append("{\"id\": ").append(i).append(", \"kind\": \"k").append(i % 7).append("\"}\n");
    }
    return Files.writeString(file, text);
  }
}
