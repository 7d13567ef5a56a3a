package dev.lakecommit.core.testing;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsTarget;
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
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.LongPredicate;

/**
 * The reference sink over a {@link DirectoryTable}: writers stage keys in files named {@code
 * <job>-<checkpoint>-<writer>-<epoch>.<attempt>-<seq>.rows}, one aggregated committer appends one log line per
 * checkpoint after checking, under the log's lock, that the (job, checkpoint) is not there yet and that no newer run
 * of the job claimed an epoch. Crash points of a {@link
 * CrashSchedule} are reached mid-write, inside prepareCommit and after the log accepted a commit.
 */
public final class DirectoryTableSink
    implements Sink<Long, RefManifest, Long>,
        SupportsAggregatedCommitter<RefManifest, RefManifest>,
        SupportsTarget {

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
  public CommitTarget openTarget() {
    return new Target();
  }

  /** The table as a target: its log holds the watermarks, its epoch file the runs, its staging tree the files. */
  private final class Target implements CommitTarget {

    @Override
    public String name() {
      return "directory table " + table.root();
    }

    @Override
    public String identity() {
      return "";
    }

    @Override
    public OptionalLong lastCommittedCheckpoint(JobId jobId) {
      return table.watermark(jobId);
    }

    @Override
    public RunEpoch claimEpoch(JobId jobId, String run) throws IOException {
      return table.claimEpoch(jobId, run);
    }

    @Override
    public Optional<RunEpoch> currentEpoch(JobId jobId) {
      return table.epoch(jobId);
    }

    @Override
    public List<String> listStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
      return names(staged(jobId, ckpt -> ckpt > checkpointId, minEpoch, maxEpoch, Integer.MAX_VALUE));
    }

    @Override
    public long deleteStaged(JobId jobId, long checkpointId, long minEpoch, long maxEpoch) throws IOException {
      return delete(staged(jobId, ckpt -> ckpt > checkpointId, minEpoch, maxEpoch, Integer.MAX_VALUE));
    }

    @Override
    public long deleteStagedOfEarlierAttempts(JobId jobId, long checkpointId, long epoch, int attempt)
        throws IOException {
      return delete(staged(jobId, ckpt -> ckpt > checkpointId, epoch, epoch, attempt));
    }

    @Override
    public List<String> committedLeftovers(JobId jobId) throws IOException {
      return names(leftovers(jobId));
    }

    @Override
    public long deleteCommittedLeftovers(JobId jobId) throws IOException {
      return delete(leftovers(jobId));
    }

    private List<Path> leftovers(JobId jobId) throws IOException {
      long watermark = table.watermark(jobId).orElse(0);
      Set<String> committed = new HashSet<>();
      table.entries().forEach(entry -> committed.addAll(entry.files()));
      return staged(jobId, ckpt -> ckpt <= watermark, 0, Long.MAX_VALUE, Integer.MAX_VALUE).stream()
          .filter(file -> !committed.contains(table.root().relativize(file).toString()))
          .toList();
    }

    /** Staged files of checkpoints {@code checkpoints} accepts, of epochs in range and attempts below a bound. */
    private List<Path> staged(JobId jobId, LongPredicate checkpoints, long minEpoch, long maxEpoch, int belowAttempt)
        throws IOException {
      List<Path> found = new ArrayList<>();
      for (Path file : table.stagedFiles(jobId)) {
        String name = file.getFileName().toString();
        String[] parts = name.substring(0, name.length() - ".rows".length()).split("-");
        String[] epochAttempt = parts[parts.length - 2].split("\\.");
        long epoch = Long.parseLong(epochAttempt[0]);
        int attempt = Integer.parseInt(epochAttempt[1]);
        long checkpoint = Long.parseLong(file.getParent().getFileName().toString());
        if (checkpoints.test(checkpoint) && epoch >= minEpoch && epoch <= maxEpoch && attempt < belowAttempt) {
          found.add(file);
        }
      }
      return found;
    }

    private List<String> names(List<Path> files) {
      return files.stream().map(file -> table.root().relativize(file).toString()).toList();
    }

    private long delete(List<Path> files) throws IOException {
      long deleted = 0;
      for (Path file : files) {
        if (Files.deleteIfExists(file)) {
          deleted++;
        }
      }
      return deleted;
    }

    @Override
    public SortedMap<String, JobState> jobs() {
      SortedMap<String, JobState> jobs = new TreeMap<>();
      for (String job : table.jobs()) {
        JobId jobId = JobId.of(job);
        jobs.put(job, new JobState(table.watermark(jobId), table.epoch(jobId)));
      }
      return jobs;
    }

    @Override
    public void close() {}
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
        current = dir.resolve(String.format("%s-%d-%d-%d.%d-%d.rows", context.jobId(), label,
            context.writerIndex(), context.epoch(), context.attempt(), seq++));
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
      implements SinkAggregatedCommitter<RefManifest, RefManifest> {
    private long epoch;

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
        boolean applied = table.appendIf(() -> skipIdempotencyCheck || isNew(commit), commit.jobId(),
            commit.checkpointId(), commit.files(), epoch);
        if (!applied) {
          return CommitOutcome.alreadyCommitted("found in the commit log");
        }
      } catch (FencedException e) {
        return CommitOutcome.fatal(e);
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
    public void fence(JobId jobId, long epoch) {
      this.epoch = epoch;
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
