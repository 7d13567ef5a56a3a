package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 15, "Bad records": an unreadable input file under {@code --bad-records} became one dead-letter "record",
 * later files moved the checkpoint past it, and after fixing the permissions the rerun said "Nothing new to
 * commit": 3,000 of 9,000 rows lost for good. Now the job stops at the file (exit 3) keeping what it committed, and
 * the rerun after {@code chmod} ingests it: {@code verify} finds every row once.
 *
 * <p>The tool runs as a child JVM without the capabilities that let root read any file ({@code setpriv}), so the
 * permission is enforced also when the tests run as root.
 */
class UnreadableInputIT {
  @TempDir Path dir;

  @Test
  void anUnreadableFileFailsTheJobAndIsIngestedAfterTheFix() throws Exception {
    Path in = Files.createDirectories(dir.resolve("in"));
    for (int f = 0; f < 3; f++) {
      StringBuilder text = new StringBuilder();
      for (int i = 0; i < 3000; i++) {
        text.append("{\"id\": ").append(f * 3000 + i).append("}\n");
      }
      Files.writeString(in.resolve("part-" + f + ".jsonl"), text);
    }
    Path locked = in.resolve("part-1.jsonl");
    Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("---------"));
    List<String> args = List.of("ingest", "--input", in.toString(), "--table", "land.parts", "--warehouse",
        dir.resolve("wh").toString(), "--schema", "id long", "--checkpoint-every-records", "1000",
        "--bad-records", dir.resolve("bad").toString());

    List<String> command = new ArrayList<>(List.of("setpriv", "--bounding-set=-dac_override,-dac_read_search",
        "--inh-caps=-dac_override,-dac_read_search", "--"));
    command.addAll(KillLoop.command(List.of("-XX:TieredStopAtLevel=1"), args));
    Path log = dir.resolve("run.log");
    Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    assertThat(process.waitFor(3, TimeUnit.MINUTES)).isTrue();
    String out = Files.readString(log);
    assertThat(process.exitValue()).as(out).isEqualTo(3);
    assertThat(out).contains("Cannot read input file " + locked + ": permission denied")
        .doesNotContain("\tat ");
    assertThat(dir.resolve("bad")).as("nothing diverted").doesNotExist();

    Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("rw-r--r--"));
    CliRun rerun = CliRun.of(args.toArray(String[]::new));
    assertThat(rerun.exitCode()).as(rerun.toString()).isZero();
    assertThat(rerun.out()).contains("Resuming after checkpoint 3");
    CliRun verify = CliRun.of("verify", "--source", in.toString(), "--table", "land.parts", "--warehouse",
        dir.resolve("wh").toString(), "--key", "id", "--json");
    assertThat(verify.exitCode()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("\"sourceRows\" : 9000", "\"tableRows\" : 9000", "\"duplicateKeys\" : 0",
        "\"lostKeys\" : 0");
  }
}
