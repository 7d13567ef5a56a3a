package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import dev.lakecommit.ingest.cli.LakecommitCommand;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The tool commands in {@code docker/compose.yaml} are never run here (no Docker engine), so their options are
 * parsed by the tool's own command line: a renamed or removed option, or a value its converter refuses, fails here
 * instead of in a user's {@code docker compose up}.
 */
class DockerComposeCommandsTest {
  private static final String JAR = "lakecommit.jar";

  @Test
  void everyToolCommandInTheComposeFileParses() throws Exception {
    List<String> commands = commands(Files.readAllLines(Path.of("../docker/compose.yaml")));
    assertThat(commands).as("tool commands in docker/compose.yaml").hasSizeGreaterThanOrEqualTo(2);
    for (String command : commands) {
      List<String> args = words(command.substring(command.indexOf(JAR) + JAR.length()));
      assertThatCode(() -> LakecommitCommand.commandLine().parseArgs(args.toArray(String[]::new)))
          .as(command).doesNotThrowAnyException();
    }
  }

  /** Each {@code java -jar …lakecommit.jar …} command, its folded ({@code >-}) lines joined. */
  private static List<String> commands(List<String> lines) {
    List<String> commands = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      if (!line.contains("java -jar") || !line.contains(JAR)) {
        continue;
      }
      int indent = indent(line);
      StringBuilder command = new StringBuilder(line.trim());
      while (i + 1 < lines.size() && !lines.get(i + 1).isBlank() && indent(lines.get(i + 1)) >= indent) {
        command.append(' ').append(lines.get(++i).trim());
      }
      commands.add(command.toString());
    }
    return commands;
  }

  private static int indent(String line) {
    int n = 0;
    while (n < line.length() && line.charAt(n) == ' ') {
      n++;
    }
    return n;
  }

  /** Shell words: whitespace-separated, double quotes grouping. */
  private static List<String> words(String text) {
    List<String> words = new ArrayList<>();
    Matcher word = Pattern.compile("\"([^\"]*)\"|(\\S+)").matcher(text);
    while (word.find()) {
      words.add(word.group(1) != null ? word.group(1) : word.group(2));
    }
    return words;
  }
}
