package dev.lakecommit.core.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.testing.MemoryTarget;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.testing.RangeSource;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several pending checkpoints at a restore: the runtime asks the committer for the next commit
 * ({@code SinkAggregatedCommitter.coalesce}); by default each checkpoint is its own commit, oldest first, and a
 * committer that merges them makes one commit that retires every checkpoint it covers.
 */
class CoalescedCommitTest {
  private static final JobId JOB = JobId.of("coalesce-job");

  @TempDir Path dir;

  /** A combined commit is the list of checkpoint ids it covers; the newest is its id. */
  private static final class RecordingSink
      implements Sink<Long, List<Long>, Long>, SupportsAggregatedCommitter<List<Long>, List<Long>>, SupportsTarget {
    final List<List<Long>> commits = new ArrayList<>();
    final Function<List<List<Long>>, List<Long>> coalesce;

    RecordingSink(Function<List<List<Long>>, List<Long>> coalesce) {
      this.coalesce = coalesce;
    }

    @Override
    public CommitTarget openTarget() {
      return new MemoryTarget(job -> commits.stream().flatMap(List::stream).mapToLong(Long::longValue).max());
    }

    @Override
    public SinkWriter<Long, List<Long>, Long> createWriter(WriterContext context) {
      return new SinkWriter<>() {
        @Override
        public void write(Long record) {}

        @Override
        public Optional<List<Long>> prepareCommit(long checkpointId) {
          return Optional.empty();
        }

        @Override
        public Long snapshotState(long checkpointId) {
          return checkpointId;
        }

        @Override
        public void abortPrepare() {}

        @Override
        public void close() {}
      };
    }

    @Override
    public SinkWriter<Long, List<Long>, Long> restoreWriter(WriterContext context, List<Long> states) {
      return createWriter(context);
    }

    @Override
    public SimpleVersionedSerializer<List<Long>> commitInfoSerializer() {
      return IDS;
    }

    @Override
    public SimpleVersionedSerializer<Long> writerStateSerializer() {
      return LONG;
    }

    @Override
    public SinkAggregatedCommitter<List<Long>, List<Long>> createAggregatedCommitter() {
      return new SinkAggregatedCommitter<>() {
        @Override
        public List<Long> combine(CommitId commitId, List<List<Long>> infos) {
          return List.of(commitId.checkpointId());
        }

        @Override
        public CommitOutcome commit(List<Long> committable) {
          commits.add(committable);
          return CommitOutcome.committed("commit " + commits.size());
        }

        @Override
        public CommitId commitId(List<Long> committable) {
          return new CommitId(JOB, committable.get(committable.size() - 1));
        }

        @Override
        public List<Long> coalesce(List<List<Long>> pending) {
          return coalesce == null ? SinkAggregatedCommitter.super.coalesce(pending) : coalesce.apply(pending);
        }
      };
    }

    @Override
    public SimpleVersionedSerializer<List<Long>> aggregatedCommitSerializer() {
      return IDS;
    }
  }

  private static final SimpleVersionedSerializer<Long> LONG = new SimpleVersionedSerializer<>() {
    @Override
    public int version() {
      return 1;
    }

    @Override
    public byte[] serialize(Long value) {
      return ByteBuffer.allocate(8).putLong(value).array();
    }

    @Override
    public Long deserialize(int version, byte[] serialized) {
      return ByteBuffer.wrap(serialized).getLong();
    }
  };

  private static final SimpleVersionedSerializer<List<Long>> IDS = VersionedSerialization.listOf(LONG);

  /** A durable checkpoint 3 of a job that read 30 records, with checkpoints 1, 2 and 3 still pending. */
  private CheckpointStore storeWithThreePending() throws IOException {
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir));
    TreeMap<Long, byte[]> pending = new TreeMap<>();
    for (long id = 1; id <= 3; id++) {
      pending.put(id, VersionedSerialization.toBytes(IDS, List.of(id)));
    }
    byte[] position = ByteBuffer.allocate(8).putLong(30).array();
    store.persist(new CheckpointRecord(JOB, 3, 0, 30, position, List.of(), pending));
    return store;
  }

  private List<Long> run(RecordingSink sink) throws Exception {
    List<Long> committed = new ArrayList<>();
    StandaloneJob.builder(sink, new RangeSource(30))
        .jobId(JOB)
        .checkpointStore(storeWithThreePending())
        .listener(new JobListener() {
          @Override
          public void onCommitted(long checkpointId, CommitOutcome outcome, long durationNanos) {
            committed.add(checkpointId);
          }
        })
        .build()
        .run();
    return committed;
  }

  @Test
  void byDefaultEachPendingCheckpointIsItsOwnCommitOldestFirst() throws Exception {
    RecordingSink sink = new RecordingSink(null);

    List<Long> committed = run(sink);

    assertThat(sink.commits).containsExactly(List.of(1L), List.of(2L), List.of(3L));
    assertThat(committed).containsExactly(1L, 2L, 3L);
  }

  @Test
  void aCoalescedCommitRetiresEveryCheckpointItCovers() throws Exception {
    RecordingSink sink = new RecordingSink(pending -> pending.stream().flatMap(List::stream).toList());

    List<Long> committed = run(sink);

    assertThat(sink.commits).containsExactly(List.of(1L, 2L, 3L));
    assertThat(committed).containsExactly(1L, 2L, 3L);
  }

  @Test
  void aCommitterMayCoalesceOnlyAPrefix() throws Exception {
    RecordingSink sink = new RecordingSink(pending -> pending.size() == 3
        ? List.of(pending.get(0).get(0), pending.get(1).get(0)) : pending.get(0));

    run(sink);

    assertThat(sink.commits).containsExactly(List.of(1L, 2L), List.of(3L));
  }

  @Test
  void aCoalescedCommitMustCarryAPendingCheckpoint() {
    RecordingSink sink = new RecordingSink(pending -> List.of(7L));

    assertThatThrownBy(() -> run(sink))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("coalesced pending checkpoints [1, 2, 3] into a commit of checkpoint 7");
    assertThat(sink.commits).isEmpty();
  }
}
