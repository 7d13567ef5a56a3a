package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The configuration reference in {@code docs/reference.md} is the tool's own {@code --help}, command by command: it
 * fails when an option is added, renamed or described differently without the reference. {@code
 * -Dlakecommit.docs.update=true} writes the reference from the help instead.
 */
class ReferenceDocTest {
  private static final Path REFERENCE = Path.of("..", "docs", "reference.md");
  private static final List<String> COMMANDS = List.of("ingest", "verify", "status", "cut", "cleanup", "maintain");

  static String reference() {
    StringBuilder doc = new StringBuilder()
        .append("# Configuration reference\n\n")
        .append("The options of every command of `bin/lakecommit`, as its `--help` prints them. The page is generated\n")
        .append("from the help itself (a test fails when the two differ), so it is what the tool of this version\n")
        .append("accepts. Exit codes and what to do about each are in [operating a job](operating.md#exit-codes).\n");
    doc.append("\n## lakecommit\n\n").append(block(CliRun.of("--help")));
    for (String command : COMMANDS) {
      doc.append("\n## lakecommit ").append(command).append("\n\n").append(block(CliRun.of(command, "--help")));
    }
    return doc.toString();
  }

  private static String block(CliRun help) {
    assertThat(help.exitCode()).as(help.toString()).isZero();
    return "```text\n" + help.out().stripTrailing() + "\n```\n";
  }

  @Test
  void theReferenceIsTheToolsHelp() throws IOException {
    String expected = reference();
    if (Boolean.getBoolean("lakecommit.docs.update")) {
      Files.writeString(REFERENCE, expected, StandardCharsets.UTF_8);
    }
    assertThat(REFERENCE).exists();
    assertThat(Files.readString(REFERENCE, StandardCharsets.UTF_8))
        .as("docs/reference.md differs from the tool's --help; regenerate it with "
            + "mvn -o -pl ingest test -Dtest=ReferenceDocTest -Dlakecommit.docs.update=true")
        .isEqualTo(expected);
  }
}
