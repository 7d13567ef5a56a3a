package dev.lakecommit.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.testing.CrashSchedule;
import dev.lakecommit.core.testing.DirectoryTable;
import dev.lakecommit.core.testing.DirectoryTableSink;
import dev.lakecommit.core.testing.RefManifest;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The run of a job on a target, against the reference table: claims, fencing, cleanup by epoch, settling. */
class TargetRunTest {
  private static final JobId JOB = JobId.of("run-job");

  @TempDir Path dir;

  private DirectoryTableSink sink() {
    return new DirectoryTableSink(new DirectoryTable(dir), CrashSchedule.none(), 10);
  }

  /** Stages {@code rows} rows of checkpoint {@code checkpointId} as the run of {@code epoch} does. */
  private RefManifest stage(DirectoryTableSink sink, long epoch, long checkpointId, int rows) throws IOException {
    try (SinkWriter<Long, RefManifest, Long> writer =
        sink.createWriter(new WriterContext(JOB, 0, 1, 0, checkpointId - 1, epoch))) {
      for (long key = 0; key < rows; key++) {
        writer.write(key);
      }
      return writer.prepareCommit(checkpointId).orElseThrow();
    }
  }

  @Test
  void aNewerClaimFencesTheOlderRunsCommitsAndSaysWho() throws Exception {
    DirectoryTableSink sink = sink();
    try (TargetRun first = TargetRun.open(sink, JOB); TargetRun second = TargetRun.open(sink, JOB)) {
      assertThat(first.claim("first").epoch()).isEqualTo(1);
      assertThat(first.fencedMessage("Job " + JOB)).isNull();
      RefManifest staged = stage(sink, first.epoch(), 1, 5);
      assertThat(second.claim("second").epoch()).isEqualTo(2);

      SinkAggregatedCommitter<RefManifest, RefManifest> committer = sink.createAggregatedCommitter();
      first.fence(committer);
      CommitOutcome outcome = committer.commit(committer.combine(new CommitId(JOB, 1), List.of(staged)));

      assertThat(outcome).isInstanceOf(CommitOutcome.Fatal.class);
      assertThat(((CommitOutcome.Fatal) outcome).cause()).isInstanceOf(FencedException.class);
      assertThat(second.lastCommitted()).isEmpty();
      assertThat(first.fencedBy()).map(RunEpoch::epoch).hasValue(2L);
      assertThat(first.fencedMessage("Job " + JOB)).contains("Job run-job stopped").contains("epoch 1")
          .contains("fenced").contains(sink.table().root().toString());
      assertThat(second.fencedBy()).isEmpty();
    }
  }

  @Test
  void beforeStagingARunAlsoDeletesLeftoversThatCarryItsOwnEpoch() throws Exception {
    DirectoryTableSink sink = sink();
    // staged as epoch 1 by a run on an earlier table of the same name: the epochs of a new table start over
    stage(sink, 1, 1, 5);
    try (TargetRun run = TargetRun.open(sink, JOB)) {
      assertThat(run.claim("run").epoch()).isEqualTo(1);

      assertThat(run.deleteOlderRuns(0)).as("older runs only: the leftover carries this run's epoch").isZero();
      assertThat(run.deleteBeforeStaging(0)).isEqualTo(1);
      assertThat(run.target().listStaged(JOB, 0, 0, Long.MAX_VALUE)).isEmpty();
    }
  }

  @Test
  void aRunDeletesWhatOlderRunsStagedAboveTheWatermarkAndNeverWhatItStagedItself() throws Exception {
    DirectoryTableSink sink = sink();
    try (TargetRun older = TargetRun.open(sink, JOB); TargetRun newer = TargetRun.open(sink, JOB)) {
      older.claim("older");
      SinkAggregatedCommitter<RefManifest, RefManifest> committer = sink.createAggregatedCommitter();
      older.fence(committer);
      committer.commit(committer.combine(new CommitId(JOB, 1), List.of(stage(sink, older.epoch(), 1, 5))));
      stage(sink, older.epoch(), 2, 5);
      newer.claim("newer");
      stage(sink, newer.epoch(), 2, 5);
      assertThat(newer.target().listStaged(JOB, 1, 0, Long.MAX_VALUE)).hasSize(2);

      assertThat(newer.deleteOlderRuns(newer.lastCommitted().orElse(0))).isEqualTo(1);

      assertThat(newer.target().listStaged(JOB, 1, 0, Long.MAX_VALUE)).singleElement()
          .satisfies(name -> assertThat(name).contains("-2-0-2.0-"));
      assertThat(sink.table().read().keys()).hasSize(5).as("the committed checkpoint is untouched");
      assertThat(newer.deleteOwn(1)).isEqualTo(1);
      assertThat(newer.target().listStaged(JOB, 1, 0, Long.MAX_VALUE)).isEmpty();
    }
  }

  @Test
  void anUnknownOutcomeIsSettledByReadingTheTargetOnce() throws Exception {
    DirectoryTableSink sink = sink();
    try (TargetRun run = TargetRun.open(sink, JOB)) {
      run.claim("settling");
      CommitOutcome lost = CommitOutcome.unknown(new SocketTimeoutException("read timed out"));
      assertThat(run.settle(1, lost)).as("nothing landed: still unknown").isSameAs(lost);

      SinkAggregatedCommitter<RefManifest, RefManifest> committer = sink.createAggregatedCommitter();
      run.fence(committer);
      committer.commit(committer.combine(new CommitId(JOB, 1), List.of(stage(sink, run.epoch(), 1, 3))));

      assertThat(run.settle(1, lost)).isInstanceOf(CommitOutcome.AlreadyCommitted.class);
      CommitOutcome fatal = CommitOutcome.fatal(new IllegalStateException("bad"));
      assertThat(run.settle(1, fatal)).as("a known outcome stays").isSameAs(fatal);
    }
  }

  @Test
  void aRunWithoutAnEpochNeitherCommitsNorDeletes() throws Exception {
    DirectoryTableSink sink = sink();
    assertThatThrownBy(() -> TargetRun.open(sink, JOB, 0, ""))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("No run epoch was claimed for job run-job");
    try (TargetRun unclaimed = TargetRun.open(sink, JOB)) {
      stage(sink, 0, 1, 3);
      assertThatThrownBy(() -> unclaimed.fence(sink.createAggregatedCommitter()))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("refusing to commit unfenced");
      assertThat(unclaimed.deleteOlderRuns(0)).isZero();
      assertThat(unclaimed.deleteOwn(0)).isZero();
      assertThat(unclaimed.fencedBy()).isEqualTo(Optional.empty());
      assertThat(unclaimed.target().listStaged(JOB, 0, 0, 0)).hasSize(1);
    }
  }
}
