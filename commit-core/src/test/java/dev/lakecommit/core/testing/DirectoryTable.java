package dev.lakecommit.core.testing;

import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.stream.Stream;

/**
 * The reference "table" of the commit-core tests: staged files of record keys (one per line) under {@code
 * staging/<job>/<checkpoint>/}, and an append-only commit log in which each line makes the files it names visible:
 * {@code <job> <checkpoint> <file>,<file>,...}. Honest enough to expose both failure kinds: a checkpoint committed
 * twice shows its keys twice, and a committed file deleted by a bad cleanup shows as lost keys.
 */
public final class DirectoryTable {
  private final Path root;

  public DirectoryTable(Path root) {
    this.root = root;
  }

  public Path root() {
    return root;
  }

  Path stagingDir(JobId jobId, long checkpointId) {
    return root.resolve("staging").resolve(jobId.value()).resolve(Long.toString(checkpointId));
  }

  Path jobStagingDir(JobId jobId) {
    return root.resolve("staging").resolve(jobId.value());
  }

  private Path log() {
    return root.resolve("commit.log");
  }

  /** One committed line of the log. */
  public record Entry(JobId jobId, long checkpointId, List<String> files) {}

  /** The committed entries, in commit order. */
  public List<Entry> entries() {
    List<Entry> entries = new ArrayList<>();
    List<String> lines;
    try {
      lines = Files.readAllLines(log(), StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      return entries;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    for (String line : lines) {
      String[] parts = line.split(" ", 3);
      if (parts.length == 3) {
        entries.add(new Entry(JobId.of(parts[0]), Long.parseLong(parts[1]), List.of(parts[2].split(","))));
      }
    }
    return entries;
  }

  /** The highest committed checkpoint of a job. */
  public OptionalLong watermark(JobId jobId) {
    return entries().stream()
        .filter(e -> e.jobId().equals(jobId))
        .mapToLong(Entry::checkpointId)
        .max();
  }

  private Path epochs() {
    return root.resolve("epochs");
  }

  /** The job's current run epoch: the newest claim in the table's epoch file. */
  public Optional<RunEpoch> epoch(JobId jobId) {
    List<String> lines;
    try {
      lines = Files.readAllLines(epochs(), StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Optional<RunEpoch> current = Optional.empty();
    for (String line : lines) {
      String[] parts = line.split(" ", 2);
      if (parts.length == 2 && parts[0].equals(jobId.value())) {
        current = Optional.of(RunEpoch.parse(jobId, parts[1]));
      }
    }
    return current;
  }

  /** Every job that committed or claimed an epoch. */
  java.util.SortedSet<String> jobs() {
    java.util.SortedSet<String> jobs = new java.util.TreeSet<>();
    entries().forEach(e -> jobs.add(e.jobId().value()));
    try {
      if (Files.exists(epochs())) {
        Files.readAllLines(epochs(), StandardCharsets.UTF_8).forEach(line -> jobs.add(line.split(" ", 2)[0]));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return jobs;
  }

  /** Claims the job's next run epoch under the log's lock: one above the current one. */
  RunEpoch claimEpoch(JobId jobId, String run) throws IOException {
    Files.createDirectories(root);
    try (FileChannel channel = FileChannel.open(log(), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
            StandardOpenOption.APPEND);
        FileLock lock = channel.lock()) {
      RunEpoch claimed = new RunEpoch(epoch(jobId).map(RunEpoch::epoch).orElse(0L) + 1, run.replace('\n', ' '));
      Files.writeString(epochs(), jobId.value() + " " + claimed.value() + "\n", StandardCharsets.UTF_8,
          StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      return claimed;
    }
  }

  /**
   * Appends one commit line, durably, under an exclusive file lock, after running {@code check} under that lock;
   * returns false (and appends nothing) when the check says no.
   *
   * @param epoch the committing run's epoch: the line is appended only while the job's current epoch is not newer
   *     (0: no check)
   * @throws FencedException if a newer run of the job holds its epoch
   */
  boolean appendIf(java.util.function.BooleanSupplier check, JobId jobId, long checkpointId, List<String> files,
      long epoch) throws IOException {
    Files.createDirectories(root);
    try (FileChannel channel = FileChannel.open(log(), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
            StandardOpenOption.APPEND);
        FileLock lock = channel.lock()) {
      Optional<RunEpoch> current = epoch(jobId);
      if (epoch > 0 && current.isPresent() && current.get().epoch() > epoch) {
        throw new FencedException("directory table " + root, jobId, epoch, current.get());
      }
      if (!check.getAsBoolean()) {
        return false;
      }
      String line = jobId.value() + " " + checkpointId + " " + String.join(",", files) + "\n";
      ByteBuffer buffer = ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8));
      while (buffer.hasRemaining()) {
        channel.write(buffer);
      }
      channel.force(true);
      return true;
    }
  }

  /** What a reader sees: the keys of every committed file, in order; committed files that are gone are counted. */
  public Snapshot read() {
    List<Long> keys = new ArrayList<>();
    int missing = 0;
    for (Entry entry : entries()) {
      for (String file : entry.files()) {
        try {
          for (String line : Files.readAllLines(root.resolve(file), StandardCharsets.UTF_8)) {
            if (!line.isEmpty()) {
              keys.add(Long.parseLong(line));
            }
          }
        } catch (NoSuchFileException e) {
          missing++;
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }
    return new Snapshot(keys, missing);
  }

  /** Rows a reader sees, and committed files it could not find. */
  public record Snapshot(List<Long> keys, int missingFiles) {}

  /** Staged files left on disk (committed or not), for cleanup assertions. */
  public List<Path> stagedFiles(JobId jobId) throws IOException {
    Path dir = jobStagingDir(jobId);
    if (!Files.exists(dir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.walk(dir)) {
      return files.filter(Files::isRegularFile).sorted().toList();
    }
  }

  static void deleteRecursively(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(path);
      }
    }
  }
}
