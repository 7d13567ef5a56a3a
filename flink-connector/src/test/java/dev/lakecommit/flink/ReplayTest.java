package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.WriterManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flink hands a committer the same combined commit again after a restore (from its state) or a retry: the
 * second delivery must change nothing in the table.
 */
class ReplayTest {
  @TempDir
  Path dir;

  /** A commit request as Flink's committer operator makes them, recording what the committer signals. */
  static class Request implements Committer.CommitRequest<CheckpointCommittable> {
    final CheckpointCommittable committable;
    final List<String> signals = new ArrayList<>();
    /** What Flink would report: how often the request was left pending before. */
    int retries;

    Request(CheckpointCommittable committable) {
      this.committable = committable;
    }

    @Override
    public CheckpointCommittable getCommittable() {
      return committable;
    }

    @Override
    public int getNumberOfRetries() {
      return retries;
    }

    @Override
    public void signalFailedWithKnownReason(Throwable t) {
      signals.add("failed-known");
    }

    @Override
    public void signalFailedWithUnknownReason(Throwable t) {
      signals.add("failed-unknown");
    }

    @Override
    public void retryLater() {
      signals.add("retry-later");
    }

    @Override
    public void updateAndRetryLater(CheckpointCommittable committable) {
      signals.add("update-retry-later");
    }

    @Override
    public void signalAlreadyCommitted() {
      signals.add("already-committed");
    }
  }

  @Test
  void aRedeliveredCombinedCommitCommitsNothing() throws Exception {
    String warehouse = dir.toString();
    SinkRecipe target = SinkRecipe.iceberg(() -> IcebergFlinkSinkIT.config(warehouse, "db.replay"));
    SinkRecipe.CoreSink core = target.open(TestJobs.ROW_TYPE);
    JobId job = JobId.of("replay");
    CommitId id = new CommitId(job, 1);
    Object combined;
    try (SinkWriter<RowData, ? extends WriterManifest, StagingWriterState> writer =
        core.sink().createWriter(new WriterContext(job, 0, 1, 0, 0));
        SinkAggregatedCommitter<WriterManifest, Object> committer =
            core.committers().createAggregatedCommitter()) {
      for (long i = 0; i < 100; i++) {
        writer.write(GenericRowData.of(i, StringData.fromString(TestJobs.partitionOf(i)),
            StringData.fromString("row-" + i)));
      }
      combined = committer.combine(id, List.of(writer.prepareCommit(1).orElseThrow()));
    }
    CheckpointCommittable committable = new CheckpointCommittable(1, id, combined, TestJobs.identity(target));
    CheckpointCommittable.Serializer serializer = new CheckpointCommittable.Serializer(
        target.committableSerializer());
    // As Flink keeps it in the committer's state and hands it back after a restore.
    CheckpointCommittable restored = VersionedSerialization.fromBytes(serializer,
        VersionedSerialization.toBytes(serializer, committable));

    long epoch = TestJobs.claimEpoch(target, job, "ReplayTest");
    LakecommitCommitter committer =
        new LakecommitCommitter(target, TestJobs.ROW_TYPE, RetryPolicy.defaults(), job, epoch,
            java.util.OptionalLong.empty(), TestJobs.noMetrics());
    Request first = new Request(committable);
    committer.commit(List.of(first));
    Table table = IcebergFlinkSinkIT.load(warehouse, "db.replay");
    long snapshotAfterFirst = table.currentSnapshot().snapshotId();

    Request again = new Request(restored);
    Request thirdTime = new Request(committable);
    committer.commit(List.of(again));
    committer.commit(List.of(thirdTime));
    committer.close();

    table.refresh();
    assertThat(first.signals).isEmpty();
    assertThat(again.signals).containsExactly("already-committed");
    assertThat(thirdTime.signals).containsExactly("already-committed");
    assertThat(table.currentSnapshot().snapshotId()).isEqualTo(snapshotAfterFirst);
    assertThat(table.currentSnapshot().summary()).containsEntry(CommitId.CHECKPOINT_ID_KEY, "1");
    try (CloseableIterable<Record> records = IcebergGenerics.read(table).build()) {
      TestJobs.Audit audit = TestJobs.Audit.of(records, TestJobs.range(0, 100));
      assertThat(audit.duplicates()).isZero();
      assertThat(audit.losses()).isZero();
      assertThat(audit.rows()).isEqualTo(100);
    }
  }
}
