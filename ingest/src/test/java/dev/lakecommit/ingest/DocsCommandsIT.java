package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * The guide's commands as a new user types them: every {@code sh} block of README.md and docs/*.md, in page order,
 * in a fresh directory per page (holding the repository's {@code examples/}), with {@code bin/lakecommit} running
 * the shaded jar. A block whose paragraph before it starts with "Needs" names a server it needs (a broker, S3, a
 * metastore) and is not run here; servers' tests run those paths. In a run block, a {@code bin/lakecommit} line
 * must exit 0, or the code its trailing comment names ({@code # exits 1}); a line with a {@code <placeholder>}
 * is a template and is skipped; the build commands ({@code mvn}) are what runs this test and are skipped.
 */
class DocsCommandsIT {
  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final Path JAR = Path.of("target", "lakecommit.jar").toAbsolutePath();
  private static final Pattern FENCE = Pattern.compile("^```(\\S*)\\s*$");
  private static final Pattern EXITS = Pattern.compile("#.*\\bexits? (\\d)\\b");
  private static final Pattern PLACEHOLDER = Pattern.compile("<[a-z][a-z0-9-]*>");

  @TempDir Path dir;

  /** One command of a page, and where it is. */
  record Command(String page, int line, String text, int expectedExit) {}

  /** The page's commands to run, in order. */
  static List<Command> commands(Path page) throws IOException {
    List<String> lines = Files.readAllLines(page, StandardCharsets.UTF_8);
    String name = ROOT.relativize(page).toString();
    List<Command> commands = new ArrayList<>();
    String before = "";
    for (int i = 0; i < lines.size(); i++) {
      Matcher fence = FENCE.matcher(lines.get(i));
      if (!fence.matches()) {
        if (!lines.get(i).isBlank()) {
          before = paragraphStart(lines, i);
        }
        continue;
      }
      boolean shell = fence.group(1).equals("sh") || fence.group(1).equals("bash");
      boolean needsServer = before.toLowerCase(java.util.Locale.ROOT).startsWith("needs");
      int end = i + 1;
      while (end < lines.size() && !lines.get(end).startsWith("```")) {
        end++;
      }
      if (shell && !needsServer) {
        commands.addAll(blockCommands(name, lines, i + 1, end));
      }
      i = end;
      before = "";
    }
    return commands;
  }

  /** The first line of the paragraph that line {@code i} belongs to. */
  private static String paragraphStart(List<String> lines, int i) {
    int start = i;
    while (start > 0 && !lines.get(start - 1).isBlank() && !lines.get(start - 1).startsWith("```")) {
      start--;
    }
    return lines.get(start).replaceAll("^[*_>\\s]+", "");
  }

  private static List<Command> blockCommands(String page, List<String> lines, int from, int to) {
    List<Command> commands = new ArrayList<>();
    StringBuilder command = new StringBuilder();
    int startLine = from;
    for (int i = from; i < to; i++) {
      String line = lines.get(i);
      if (command.length() == 0) {
        startLine = i + 1;
        if (line.isBlank() || line.strip().startsWith("#")) {
          continue;
        }
      }
      if (line.endsWith("\\")) {
        command.append(line, 0, line.length() - 1).append(' ');
        continue;
      }
      command.append(line);
      String text = command.toString().strip();
      command.setLength(0);
      if (!text.startsWith("bin/lakecommit") || PLACEHOLDER.matcher(text).find()) {
        continue;
      }
      Matcher exits = EXITS.matcher(text);
      commands.add(new Command(page, startLine, text, exits.find() ? Integer.parseInt(exits.group(1)) : 0));
    }
    return commands;
  }

  static List<Path> pages() throws IOException {
    List<Path> pages = new ArrayList<>(List.of(ROOT.resolve("README.md")));
    try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
      docs.filter(path -> path.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    return pages;
  }

  @TestFactory
  Stream<DynamicTest> everyCommandOfTheGuideThatNeedsNoServerRunsAsWritten() throws IOException {
    assertThat(JAR).as("the shaded jar, built by the package phase").exists();
    List<DynamicTest> tests = new ArrayList<>();
    int total = 0;
    for (Path page : pages()) {
      List<Command> commands = commands(page);
      total += commands.size();
      if (commands.isEmpty()) {
        continue;
      }
      Path work = dir.resolve(page.getFileName().toString().replace(".md", ""));
      tests.add(DynamicTest.dynamicTest(ROOT.relativize(page) + " (" + commands.size() + " commands)",
          () -> runPage(work, commands)));
    }
    assertThat(total).as("commands found in the guide's blocks").isGreaterThanOrEqualTo(5);
    return tests.stream();
  }

  private static void runPage(Path work, List<Command> commands) throws Exception {
    Path bin = Files.createDirectories(work.resolve("bin"));
    Path tool = bin.resolve("lakecommit");
    Files.writeString(tool, "#!/usr/bin/env bash\nexec \"" + javaBin() + "\" -Xmx512m -XX:TieredStopAtLevel=1 -jar \""
        + JAR + "\" \"$@\"\n");
    Files.setPosixFilePermissions(tool, PosixFilePermissions.fromString("rwxr-xr-x"));
    copyTree(ROOT.resolve("examples"), work.resolve("examples"));
    for (Command command : commands) {
      Path log = Files.createTempFile(work, "run-", ".log");
      Process process = new ProcessBuilder("bash", "-c", command.text()).directory(work.toFile())
          .redirectErrorStream(true).redirectOutput(log.toFile()).start();
      if (!process.waitFor(3, TimeUnit.MINUTES)) {
        process.destroyForcibly().waitFor();
      }
      assertThat(process.exitValue())
          .as("%s line %d: %s%n%s", command.page(), command.line(), command.text(), Files.readString(log))
          .isEqualTo(command.expectedExit());
    }
  }

  private static String javaBin() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  private static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> files = Files.walk(from)) {
      for (Path file : (Iterable<Path>) files::iterator) {
        Path target = to.resolve(from.relativize(file).toString());
        if (Files.isDirectory(file)) {
          Files.createDirectories(target);
        } else {
          Files.copy(file, target);
        }
      }
    }
  }
}
