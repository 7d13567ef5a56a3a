package dev.lakecommit.core.testing;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsCommitLookup;
import dev.lakecommit.core.SupportsStagingCleanup;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.WriterContext;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.stream.Stream;

/**
 * The reference sink over a {@link DirectoryTable}: writers stage keys in files named {@code
 * <job>-<checkpoint>-<writer>-<attempt>-<seq>.rows}, one aggregated committer appends one log line per checkpoint
 * after checking, under the log's lock, that the (job, checkpoint) is not there yet. Crash points of a {@link
 * CrashSchedule} are reached mid-write, inside prepareCommit and after the log accepted a commit.
 */
public final class DirectoryTableSink
    implements Sink<Long, RefManifest, Long>,
        SupportsAggregatedCommitter<RefManifest, RefManifest>,
        SupportsStagingCleanup {

  private final DirectoryTable table;
  private final CrashSchedule crashes;
  private final int rowsPerFile;
  private boolean skipIdempotencyCheck;

  public DirectoryTableSink(DirectoryTable table, CrashSchedule crashes, int rowsPerFile) {
    this.table = table;
    this.crashes = crashes;
    this.rowsPerFile = rowsPerFile;
  }

  public DirectoryTable table() {
    return table;
  }

  /** Test-only: commit without checking the log first; replays then show as duplicates. */
  public DirectoryTableSink skipIdempotencyCheck(boolean skip) {
    this.skipIdempotencyCheck = skip;
    return this;
  }

  @Override
  public SinkWriter<Long, RefManifest, Long> createWriter(WriterContext context) {
    return new Writer(context, 0);
  }

  @Override
  public SinkWriter<Long, RefManifest, Long> restoreWriter(WriterContext context, List<Long> states) {
    return new Writer(context, states.stream().mapToLong(Long::longValue).sum());
  }

  @Override
  public SimpleVersionedSerializer<RefManifest> commitInfoSerializer() {
    return RefManifest.SERIALIZER;
  }

  @Override
  public SimpleVersionedSerializer<Long> writerStateSerializer() {
    return LONG_SERIALIZER;
  }

  @Override
  public SinkAggregatedCommitter<RefManifest, RefManifest> createAggregatedCommitter() {
    return new Committer();
  }

  @Override
  public SimpleVersionedSerializer<RefManifest> aggregatedCommitSerializer() {
    return RefManifest.SERIALIZER;
  }

  @Override
  public long deleteStagedAfter(JobId jobId, long checkpointId) throws IOException {
    Path dir = table.jobStagingDir(jobId);
    if (!Files.exists(dir)) {
      return 0;
    }
    long deleted = 0;
    try (Stream<Path> checkpoints = Files.list(dir)) {
      for (Path checkpointDir : checkpoints.toList()) {
        if (Long.parseLong(checkpointDir.getFileName().toString()) > checkpointId) {
          try (Stream<Path> files = Files.list(checkpointDir)) {
            deleted += files.count();
          }
          DirectoryTable.deleteRecursively(checkpointDir);
        }
      }
    }
    return deleted;
  }

  private final class Writer implements SinkWriter<Long, RefManifest, Long> {
    private final WriterContext context;
    private final List<String> files = new ArrayList<>();
    private final StringBuilder buffer = new StringBuilder();
    private long recordsWritten;
    private long lastPrepared;
    private long inFile;
    private long inCheckpoint;
    private int seq;
    private Path current;

    Writer(WriterContext context, long recordsWritten) {
      this.context = context;
      this.recordsWritten = recordsWritten;
      this.lastPrepared = context.restoredCheckpointId();
    }

    @Override
    public void write(Long key) throws IOException {
      crashes.reach(CrashSchedule.WRITE, lastPrepared + 1);
      if (current == null) {
        // Named after the next checkpoint: if it never completes, a restore finds the file by prefix.
        long label = lastPrepared + 1;
        Path dir = table.stagingDir(context.jobId(), label);
        Files.createDirectories(dir);
        current = dir.resolve(String.format("%s-%d-%d-%d-%d.rows", context.jobId(), label,
            context.writerIndex(), context.attempt(), seq++));
      }
      buffer.append(key).append('\n');
      inFile++;
      inCheckpoint++;
      recordsWritten++;
      if (buffer.length() > 256) {
        flush();
      }
      if (inFile >= rowsPerFile) {
        roll();
      }
    }

    private void flush() throws IOException {
      Files.write(current, buffer.toString().getBytes(StandardCharsets.UTF_8),
          StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      buffer.setLength(0);
    }

    private void roll() throws IOException {
      flush();
      files.add(table.root().relativize(current).toString());
      current = null;
      inFile = 0;
    }

    @Override
    public Optional<RefManifest> prepareCommit(long id) throws IOException {
      if (current != null) {
        roll();
      }
      crashes.reach(CrashSchedule.PREPARE, id);
      List<String> staged = List.copyOf(files);
      files.clear();
      long records = inCheckpoint;
      inCheckpoint = 0;
      lastPrepared = id;
      seq = 0;
      return staged.isEmpty()
          ? Optional.empty()
          : Optional.of(new RefManifest(context.jobId(), id, context.writerIndex(), staged, records));
    }

    @Override
    public Long snapshotState(long id) {
      return recordsWritten;
    }

    @Override
    public void abortPrepare() throws IOException {
      for (String file : files) {
        Files.deleteIfExists(table.root().resolve(file));
      }
      if (current != null) {
        Files.deleteIfExists(current);
      }
      files.clear();
    }

    @Override
    public void close() {}
  }

  private final class Committer
      implements SinkAggregatedCommitter<RefManifest, RefManifest>, SupportsCommitLookup {

    @Override
    public RefManifest combine(CommitId commitId, List<RefManifest> infos) {
      List<String> files = new ArrayList<>();
      long records = 0;
      for (RefManifest info : infos) {
        files.addAll(info.files());
        records += info.records();
      }
      return new RefManifest(commitId.jobId(), commitId.checkpointId(), -1, files, records);
    }

    @Override
    public CommitOutcome commit(RefManifest commit) {
      try {
        boolean applied = table.appendIf(
            () -> skipIdempotencyCheck || isNew(commit), commit.jobId(), commit.checkpointId(), commit.files());
        if (!applied) {
          return CommitOutcome.alreadyCommitted("found in the commit log");
        }
      } catch (IOException e) {
        return CommitOutcome.unknown(e);
      }
      crashes.reach(CrashSchedule.COMMIT_APPLIED, commit.checkpointId());
      return CommitOutcome.committed("log line of checkpoint " + commit.checkpointId());
    }

    private boolean isNew(RefManifest commit) {
      return table.watermark(commit.jobId()).orElse(0) < commit.checkpointId();
    }

    @Override
    public CommitId commitId(RefManifest commit) {
      return new CommitId(commit.jobId(), commit.checkpointId());
    }

    @Override
    public OptionalLong lastCommittedCheckpoint(JobId jobId) {
      return table.watermark(jobId);
    }
  }

  static final SimpleVersionedSerializer<Long> LONG_SERIALIZER =
      new SimpleVersionedSerializer<>() {
        @Override
        public int version() {
          return 1;
        }

        @Override
        public byte[] serialize(Long value) {
          return ByteBuffer.allocate(8).putLong(value).array();
        }

        @Override
        public Long deserialize(int version, byte[] serialized) throws IOException {
          if (version != 1) {
            throw VersionedSerialization.unknownVersion("writer state", version);
          }
          try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(serialized))) {
            return in.readLong();
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      };
}
