package dev.lakecommit.core.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.testing.ForwardingSinkWriter;
import dev.lakecommit.core.testing.Audit;
import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.DirectoryTable;
import dev.lakecommit.core.testing.DirectoryTableSink;
import dev.lakecommit.core.testing.RangeSource;
import dev.lakecommit.core.testing.RefManifest;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StandaloneJobTest {
  private static final JobId JOB = JobId.of("job");

  @TempDir Path dir;

  private DirectoryTable table() {
    return new DirectoryTable(dir.resolve("table"));
  }

  private StandaloneJob.Builder<Long> job(Sink<Long, ?, ?> sink, long rows) throws IOException {
    return StandaloneJob.builder(sink, new RangeSource(rows))
        .jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints"))))
        .parallelism(3)
        .checkpointEveryRecords(100);
  }

  private DirectoryTableSink sink() {
    return new DirectoryTableSink(table(), CrashSchedule.none(), 25);
  }

  @Test
  void writesEveryRowOnceWithOneCommitPerCheckpoint() throws Exception {
    JobResult result = job(sink(), 1000).build().run();

    assertThat(result.checkpoints()).isEqualTo(10);
    assertThat(result.commits()).isEqualTo(10);
    assertThat(result.recordsRead()).isEqualTo(1000);
    assertThat(table().entries()).extracting(DirectoryTable.Entry::checkpointId)
        .containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L);
    assertThat(Audit.of(1000, table().read().keys()).exact()).isTrue();
  }

  @Test
  void aSecondRunOfAFinishedJobCommitsNothingNew() throws Exception {
    job(sink(), 250).build().run();
    int entries = table().entries().size();

    JobResult again = job(sink(), 250).build().run();

    assertThat(again.restoredCheckpointId()).isEqualTo(3);
    assertThat(again.checkpoints()).isZero();
    assertThat(again.commits()).isZero();
    assertThat(again.recordsRead()).isZero();
    assertThat(again.attempt()).isEqualTo(1);
    assertThat(table().entries()).hasSize(entries);
  }

  @Test
  void aGrownSourceIsResumedWhereItStopped() throws Exception {
    job(sink(), 250).build().run();
    JobResult more = job(sink(), 420).build().run();

    assertThat(more.recordsRead()).isEqualTo(170);
    assertThat(more.recordCount()).isEqualTo(420);
    assertThat(Audit.of(420, table().read().keys()).exact()).isTrue();
  }

  @Test
  void checkpointsByInterval() throws Exception {
    JobResult result = job(sink(), 50).checkpointEveryRecords(Long.MAX_VALUE)
        .checkpointInterval(Duration.ofNanos(1)).build().run();

    assertThat(result.checkpoints()).as("an interval shorter than a record: one checkpoint per record")
        .isEqualTo(50);
    assertThat(Audit.of(50, table().read().keys()).exact()).isTrue();
  }

  @Test
  void restoresWithAnotherParallelism() throws Exception {
    CrashSchedule crashes = CrashSchedule.at(CrashSchedule.PERSISTED, 4);
    crashes.newLife();
    StandaloneJob.Builder<Long> first = job(new DirectoryTableSink(table(), crashes, 25), 1000)
        .listener(new JobListener() {
          @Override
          public void onCheckpointPersisted(long checkpointId) {
            crashes.reach(CrashSchedule.PERSISTED, checkpointId);
          }
        });
    assertThatThrownBy(() -> first.build().run()).hasMessageContaining("simulated crash");

    JobResult result = job(sink(), 1000).parallelism(5).build().run();

    assertThat(result.restoredCheckpointId()).isEqualTo(4);
    assertThat(Audit.of(1000, table().read().keys()).exact()).isTrue();
  }

  @Test
  void aFailingWriterFailsTheJobAndCommitsNothingOfItsCheckpoint() throws Exception {
    Sink<Long, RefManifest, Long> failing = new FailingSink(sink(), 333);
    assertThatThrownBy(() -> job(failing, 1000).build().run())
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining("Writer 0 of job job failed")
        .hasMessageContaining("record 333 is bad");

    assertThat(table().watermark(JOB)).hasValue(3);
    assertThat(Audit.of(300, table().read().keys()).exact()).isTrue();

    // With the input fixed, the rerun resumes after checkpoint 3 and leaves no file of the failed attempt.
    JobResult rerun = job(sink(), 1000).build().run();
    assertThat(rerun.restoredCheckpointId()).isEqualTo(3);
    assertThat(Audit.of(1000, table().read().keys()).exact()).isTrue();
    assertThat(table().stagedFiles(JOB)).isNotEmpty()
        .noneMatch(p -> p.getFileName().toString().matches("job-\\d+-\\d+-\\d+\\.0-\\d+\\.rows")
            && !p.toString().matches(".*/staging/job/[123]/.*"));
  }

  @Test
  void aFreshCheckpointStoreBehindTheTargetIsRefused() throws Exception {
    job(sink(), 300).build().run();
    StandaloneJob<Long> elsewhere = StandaloneJob.builder((Sink<Long, ?, ?>) sink(), new RangeSource(300))
        .jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("other-checkpoints"))))
        .build();

    assertThatThrownBy(elsewhere::run)
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining("already holds checkpoint 3 of job job")
        .hasMessageContaining("other-checkpoints (none)");
    assertThat(Audit.of(300, table().read().keys()).exact()).isTrue();
  }

  @Test
  void aCommitThatKeepsFailingFailsTheJobAndIsRetriedByTheNextRun() throws Exception {
    List<String> outcomes = Collections.synchronizedList(new ArrayList<>());
    DirectoryTableSink sink = sink();
    Sink<Long, ?, ?> conflicting = new ConflictingSink(sink, 2);
    assertThatThrownBy(() -> job(conflicting, 300)
        .commitRetry(RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ZERO).build())
        .build().run())
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining("Could not commit checkpoint 1 of job job after 2 attempts")
        .hasMessageContaining("run the job again");
    assertThat(table().entries()).isEmpty();

    JobResult rerun = job(sink(), 300).listener(new JobListener() {
      @Override
      public void onCommitted(long checkpointId, CommitOutcome outcome, long durationNanos) {
        outcomes.add(checkpointId + ":" + outcome.getClass().getSimpleName());
      }
    }).build().run();

    assertThat(rerun.restoredCheckpointId()).isEqualTo(1);
    assertThat(outcomes).startsWith("1:Committed", "2:Committed");
    assertThat(Audit.of(300, table().read().keys()).exact()).isTrue();
  }

  @Test
  void aSinkWithoutACommitterIsRefused() throws Exception {
    DirectoryTableSink twoLevel = sink();
    Sink<Long, RefManifest, Long> bare = new Sink<>() {
      @Override
      public SinkWriter<Long, RefManifest, Long> createWriter(WriterContext context) throws IOException {
        return twoLevel.createWriter(context);
      }

      @Override
      public SinkWriter<Long, RefManifest, Long> restoreWriter(WriterContext context, List<Long> states)
          throws IOException {
        return twoLevel.restoreWriter(context, states);
      }

      @Override
      public SimpleVersionedSerializer<RefManifest> commitInfoSerializer() {
        return RefManifest.SERIALIZER;
      }

      @Override
      public SimpleVersionedSerializer<Long> writerStateSerializer() {
        return twoLevel.writerStateSerializer();
      }
    };
    assertThatThrownBy(() -> job(bare, 10).build().run())
        .hasMessageContaining("must implement SupportsAggregatedCommitter");
  }

  @Test
  void checksItsSettings() {
    assertThatThrownBy(() -> StandaloneJob.builder(sink(), new RangeSource(1)).parallelism(0))
        .hasMessage("Invalid writer count: 0 (must be > 0)");
    assertThatThrownBy(() -> StandaloneJob.builder(sink(), new RangeSource(1)).build())
        .hasMessage("Missing job id: set jobId(...)");
  }

  /** Delegates to the reference sink; writer 0 fails on one record. */
  private record FailingSink(DirectoryTableSink delegate, long badKey) implements Sink<Long, RefManifest, Long>,
      dev.lakecommit.core.SupportsAggregatedCommitter<RefManifest, RefManifest>, SupportsTarget {
    @Override
    public CommitTarget openTarget() {
      return delegate.openTarget();
    }

    @Override
    public SinkWriter<Long, RefManifest, Long> createWriter(WriterContext context) throws IOException {
      SinkWriter<Long, RefManifest, Long> writer = delegate.createWriter(context);
      return new ForwardingSinkWriter<>(writer) {
        @Override
        public void write(Long record) throws IOException {
          if (record == badKey) {
            throw new IllegalArgumentException("record " + record + " is bad");
          }
          writer.write(record);
        }

      };
    }

    @Override
    public SinkWriter<Long, RefManifest, Long> restoreWriter(WriterContext context, List<Long> states)
        throws IOException {
      return createWriter(context);
    }

    @Override
    public SimpleVersionedSerializer<RefManifest> commitInfoSerializer() {
      return delegate.commitInfoSerializer();
    }

    @Override
    public SimpleVersionedSerializer<Long> writerStateSerializer() {
      return delegate.writerStateSerializer();
    }

    @Override
    public dev.lakecommit.core.SinkAggregatedCommitter<RefManifest, RefManifest> createAggregatedCommitter() {
      return delegate.createAggregatedCommitter();
    }

    @Override
    public SimpleVersionedSerializer<RefManifest> aggregatedCommitSerializer() {
      return delegate.aggregatedCommitSerializer();
    }
  }

  /** The reference sink whose commits conflict the first {@code conflicts} times. */
  @Test
  void aCommitOfUnknownOutcomeThatLandedIsSettledAndOneThatDidNotIsReportedAsUnknown() throws Exception {
    DirectoryTableSink sink = sink();
    // every attempt lands, and every answer is lost: the job settles it by reading the target once
    JobResult landed = job(new UnknownOutcomeSink(sink, true), 300)
        .commitRetry(RetryPolicy.builder().maxAttempts(1).initialBackoff(Duration.ZERO).build())
        .build().run();
    assertThat(landed.skippedCommits()).as("settled as committed by the lookup").isEqualTo(3);
    assertThat(Audit.of(300, table().read().keys()).exact()).isTrue();

    // attempts that never land and never answer: reported as unknown, never as "could not commit"
    assertThatThrownBy(() -> job(new UnknownOutcomeSink(sink(), false), 600)
        .commitRetry(RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ZERO).build())
        .build().run())
        .isInstanceOf(JobFailedException.class)
        .hasMessageContaining("The outcome of the commit of checkpoint 4 of job job is unknown after 2 attempts")
        .hasMessageContaining("committed once either way")
        .hasMessageNotContaining("Could not commit");
    JobResult rerun = job(sink(), 600).build().run();
    assertThat(rerun.restoredCheckpointId()).isEqualTo(4);
    assertThat(Audit.of(600, table().read().keys()).exact()).isTrue();
  }

  /** Commits land (or not), and their answer is always lost; lookups read the real target. */
  private static final class UnknownOutcomeSink extends ForwardingSink
      implements dev.lakecommit.core.SupportsAggregatedCommitter<RefManifest, RefManifest> {
    private final boolean land;

    UnknownOutcomeSink(DirectoryTableSink delegate, boolean land) {
      super(delegate);
      this.land = land;
    }

    @Override
    public dev.lakecommit.core.SinkAggregatedCommitter<RefManifest, RefManifest> createAggregatedCommitter() {
      var real = delegate.createAggregatedCommitter();
      return new UnknownCommitter(real, land);
    }

    @Override
    public SimpleVersionedSerializer<RefManifest> aggregatedCommitSerializer() {
      return RefManifest.SERIALIZER;
    }
  }

  private record UnknownCommitter(dev.lakecommit.core.SinkAggregatedCommitter<RefManifest, RefManifest> real,
      boolean land) implements dev.lakecommit.core.SinkAggregatedCommitter<RefManifest, RefManifest> {
    @Override
    public RefManifest combine(dev.lakecommit.core.CommitId commitId, List<RefManifest> infos) {
      return real.combine(commitId, infos);
    }

    @Override
    public CommitOutcome commit(RefManifest committable) {
      if (land && !(real.commit(committable) instanceof CommitOutcome.Committed)) {
        return CommitOutcome.alreadyCommitted("found");
      }
      return CommitOutcome.unknown(new java.net.SocketTimeoutException("read timed out"));
    }

    @Override
    public dev.lakecommit.core.CommitId commitId(RefManifest committable) {
      return real.commitId(committable);
    }

    @Override
    public void fence(dev.lakecommit.core.JobId jobId, long epoch) {
      real.fence(jobId, epoch);
    }
  }

  private static final class ConflictingSink extends ForwardingSink
      implements dev.lakecommit.core.SupportsAggregatedCommitter<RefManifest, RefManifest> {
    private int conflicts;

    ConflictingSink(DirectoryTableSink delegate, int conflicts) {
      super(delegate);
      this.conflicts = conflicts;
    }

    @Override
    public dev.lakecommit.core.SinkAggregatedCommitter<RefManifest, RefManifest> createAggregatedCommitter() {
      var real = delegate.createAggregatedCommitter();
      return new dev.lakecommit.core.SinkAggregatedCommitter<>() {
        @Override
        public RefManifest combine(dev.lakecommit.core.CommitId commitId, List<RefManifest> infos) {
          return real.combine(commitId, infos);
        }

        @Override
        public CommitOutcome commit(RefManifest committable) {
          if (conflicts-- > 0) {
            return CommitOutcome.retryable(new IOException("conflict"));
          }
          return real.commit(committable);
        }

        @Override
        public dev.lakecommit.core.CommitId commitId(RefManifest committable) {
          return real.commitId(committable);
        }
      };
    }

    @Override
    public SimpleVersionedSerializer<RefManifest> aggregatedCommitSerializer() {
      return RefManifest.SERIALIZER;
    }
  }

  /** Writers of the reference sink, committed one writer's info at a time (the two-level path). */
  abstract static class ForwardingSink implements Sink<Long, RefManifest, Long>, SupportsTarget {
    final DirectoryTableSink delegate;

    ForwardingSink(DirectoryTableSink delegate) {
      this.delegate = delegate;
    }

    @Override
    public CommitTarget openTarget() {
      return delegate.openTarget();
    }

    @Override
    public SinkWriter<Long, RefManifest, Long> createWriter(WriterContext context) {
      return delegate.createWriter(context);
    }

    @Override
    public SinkWriter<Long, RefManifest, Long> restoreWriter(WriterContext context, List<Long> states) {
      return delegate.restoreWriter(context, states);
    }

    @Override
    public SimpleVersionedSerializer<RefManifest> commitInfoSerializer() {
      return delegate.commitInfoSerializer();
    }

    @Override
    public SimpleVersionedSerializer<Long> writerStateSerializer() {
      return delegate.writerStateSerializer();
    }
  }

  /**
   * A source that keeps groups of 7 records whole: every checkpoint due by count waits for the end of its group, so
   * each checkpoint ends at a multiple of 7 (but the last, at the end of the input).
   */
  @Test
  void aCheckpointWaitsForTheEndOfAUnitTheSourceKeepsWhole() throws Exception {
    List<Long> cuts = new java.util.ArrayList<>();
    CheckpointedSource<Long> grouped = position -> {
      CheckpointedSource.SourceReader<Long> reader = new RangeSource(1000).open(position);
      return new CheckpointedSource.SourceReader<>() {
        private long read;

        @Override
        public Long next() throws IOException {
          Long next = reader.next();
          read += next == null ? 0 : 1;
          return next;
        }

        @Override
        public boolean atBoundary() {
          return read % 7 == 0;
        }

        @Override
        public byte[] position() {
          cuts.add(read);
          return reader.position();
        }

        @Override
        public void close() throws IOException {
          reader.close();
        }
      };
    };
    JobResult result = StandaloneJob.builder(sink(), grouped).jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints"))))
        .parallelism(3).checkpointEveryRecords(100).build().run();

    assertThat(result.checkpoints()).isEqualTo(10);
    assertThat(cuts).startsWith(105L, 210L, 315L).endsWith(1000L);
    assertThat(cuts.subList(0, cuts.size() - 1)).allMatch(read -> read % 7 == 0);
    assertThat(Audit.of(1000, table().read().keys()).exact()).isTrue();
  }

  /**
   * A source whose units end with a poll that returns no record (a source database's transaction ends with a
   * marker, not a row): a checkpoint due by record count is taken at that poll, not only one due by interval.
   */
  @Test
  void aCheckpointDueByRecordCountIsTakenAtAUnitsEndThatCarriesNoRecord() throws Exception {
    List<Long> cuts = new java.util.ArrayList<>();
    CheckpointedSource<Long> units = position -> {
      CheckpointedSource.SourceReader<Long> reader = new RangeSource(1000).open(position);
      return new CheckpointedSource.SourceReader<>() {
        private long read;
        private boolean endOfUnitPending;
        private boolean atEnd;

        @Override
        public Long next() throws IOException {
          throw new UnsupportedOperationException("polled");
        }

        @Override
        public Long poll(java.time.Duration maxWait) throws IOException {
          if (endOfUnitPending) {
            endOfUnitPending = false;
            atEnd = true;
            return null; // the unit's end marker: no record
          }
          Long next = reader.next();
          if (next != null) {
            read++;
            atEnd = false;
            endOfUnitPending = read % 7 == 0;
          }
          return next;
        }

        @Override
        public boolean ended() {
          return !endOfUnitPending && read == 1000;
        }

        @Override
        public boolean atBoundary() {
          return atEnd || read == 1000;
        }

        @Override
        public byte[] position() {
          cuts.add(read);
          return reader.position();
        }

        @Override
        public void close() throws IOException {
          reader.close();
        }
      };
    };
    JobResult result = StandaloneJob.builder(sink(), units).jobId(JOB)
        .checkpointStore(new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints"))))
        .parallelism(3).checkpointEveryRecords(100).checkpointInterval(java.time.Duration.ofHours(1)).build().run();

    assertThat(cuts).startsWith(105L, 210L, 315L).endsWith(1000L);
    assertThat(result.checkpoints()).isEqualTo(10);
    assertThat(Audit.of(1000, table().read().keys()).exact()).isTrue();
  }
}
