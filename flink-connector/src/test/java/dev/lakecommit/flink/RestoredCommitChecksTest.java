package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.staging.WriterManifest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.iceberg.Table;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The committer's checks of what it is handed (DESIGN.md rule 13), without a cluster: a commit made for another
 * table is refused; a restored commit whose staged file is gone is refused unless the table already holds it.
 */
class RestoredCommitChecksTest {
  private static final String TABLE = "db.checks";

  @TempDir
  Path dir;

  private final List<Throwable> failures = new ArrayList<>();

  private SinkRecipe target() {
    String warehouse = dir.toString();
    return SinkRecipe.iceberg(() -> IcebergFlinkSinkIT.config(warehouse, TABLE));
  }

  /** A combined commit of 100 staged rows (ids from {@code from}) for checkpoint {@code checkpoint}. */
  private CheckpointCommittable staged(SinkRecipe target, JobId job, long epoch, long checkpoint, long from,
      String identity) throws Exception {
    LakecommitWriter writer = LakecommitWriter.open(target, TestJobs.ROW_TYPE, job, epoch,
        RunEpochTest.context(0, 1, 0, OptionalLong.empty()), List.of());
    for (long i = from; i < from + 100; i++) {
      writer.write(GenericRowData.of(i, StringData.fromString(TestJobs.partitionOf(i)),
          StringData.fromString("row-" + i)), null);
    }
    WriterManifest manifest = writer.prepareCommit().iterator().next();
    writer.close();
    CommitId id = new CommitId(job, checkpoint);
    try (SinkAggregatedCommitter<WriterManifest, Object> combiner =
        target.open(TestJobs.ROW_TYPE).committers().createAggregatedCommitter()) {
      return new CheckpointCommittable(checkpoint, id, combiner.combine(id, List.of(CommitAggregator.restamp(
          manifest, checkpoint))), identity);
    }
  }

  private List<String> commit(LakecommitCommitter committer, CheckpointCommittable committable) throws Exception {
    Request request = new Request(committable);
    committer.commit(List.of(request));
    return request.signals;
  }

  @Test
  void aCommitMadeForAnotherTableIsRefused() throws Exception {
    SinkRecipe target = target();
    JobId job = JobId.of("other-table");
    long epoch = TestJobs.claimEpoch(target, job, "test");
    String now = TestJobs.identity(target);
    String old = "iceberg-table-uuid:00000000-0000-0000-0000-000000000001";
    CheckpointCommittable committable = staged(target, job, epoch, 1, 0, old);
    LakecommitCommitter committer = new LakecommitCommitter(target, TestJobs.ROW_TYPE, RetryPolicy.defaults(), job,
        epoch, OptionalLong.of(1), TestJobs.noMetrics());

    assertThat(commit(committer, committable)).containsExactly("failed-unknown");
    committer.close();

    assertThat(failures).singleElement().satisfies(e -> assertThat(e.getMessage())
        .contains("Pending commit " + committable + " was made for another table than " + TABLE + " is now")
        .contains("identity " + old + ", now " + now)
        .contains("Nothing of it is committed")
        .contains("start the job without this savepoint or checkpoint")
        .contains("--allowNonRestoredState"));
    assertThat(IcebergFlinkSinkIT.load(dir.toString(), TABLE).currentSnapshot()).isNull();
  }

  @Test
  void aRestoredCommitWhoseStagedFileIsGoneIsNotCommitted() throws Exception {
    SinkRecipe target = target();
    JobId job = JobId.of("missing");
    long epoch = TestJobs.claimEpoch(target, job, "test");
    String identity = TestJobs.identity(target);
    CheckpointCommittable committable = staged(target, job, epoch, 1, 0, identity);
    String gone = firstFile(committable);
    Files.delete(Path.of(java.net.URI.create(gone.startsWith("file:") ? gone : "file:" + gone)));
    LakecommitCommitter committer = new LakecommitCommitter(target, TestJobs.ROW_TYPE, RetryPolicy.defaults(), job,
        epoch, OptionalLong.of(1), TestJobs.noMetrics());

    assertThat(commit(committer, committable)).containsExactly("failed-unknown");
    committer.close();

    assertThat(failures).singleElement().satisfies(e -> assertThat(e.getMessage())
        .contains("Pending commit " + committable + " restored from Flink checkpoint 1 is not in table " + TABLE)
        .contains("its staged file " + gone + " no longer exists")
        .contains("Nothing was committed"));
    assertThat(IcebergFlinkSinkIT.load(dir.toString(), TABLE).currentSnapshot()).isNull();
  }

  @Test
  void aRestoredCommitTheTableHoldsIsAcknowledgedEvenWithItsFileGone() throws Exception {
    SinkRecipe target = target();
    JobId job = JobId.of("held");
    long epoch = TestJobs.claimEpoch(target, job, "test");
    String identity = TestJobs.identity(target);
    CheckpointCommittable committable = staged(target, job, epoch, 1, 0, identity);
    LakecommitCommitter running = new LakecommitCommitter(target, TestJobs.ROW_TYPE, RetryPolicy.defaults(), job,
        epoch, OptionalLong.empty(), TestJobs.noMetrics());
    assertThat(commit(running, committable)).isEmpty();
    running.close();
    Table table = IcebergFlinkSinkIT.load(dir.toString(), TABLE);
    long snapshot = table.currentSnapshot().snapshotId();

    // A restored copy of the same commit whose staged file (here the table's data file) is gone since: the table
    // holds the commit, so it is only acknowledged; the missing file is not the restore's to report.
    String gone = firstFile(committable);
    Files.delete(Path.of(java.net.URI.create(gone.startsWith("file:") ? gone : "file:" + gone)));
    LakecommitCommitter restored = new LakecommitCommitter(target, TestJobs.ROW_TYPE, RetryPolicy.defaults(), job,
        epoch, OptionalLong.of(1), TestJobs.noMetrics());
    assertThat(commit(restored, committable)).containsExactly("already-committed");
    restored.close();
    assertThat(failures).isEmpty();
    table.refresh();
    assertThat(table.currentSnapshot().snapshotId()).isEqualTo(snapshot);
  }

  private static String firstFile(CheckpointCommittable committable) {
    return ((dev.lakecommit.iceberg.IcebergCommittable) committable.committable()).manifests().get(0).files().get(0)
        .path();
  }

  /** A request that records its signals and the failure it was signalled with. */
  private final class Request extends ReplayTest.Request {
    Request(CheckpointCommittable committable) {
      super(committable);
    }

    @Override
    public void signalFailedWithUnknownReason(Throwable t) {
      failures.add(t);
      super.signalFailedWithUnknownReason(t);
    }
  }
}
