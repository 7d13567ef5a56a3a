package dev.lakecommit.flink;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.TargetRun;
import dev.lakecommit.core.SupportsDeletes;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.WriterManifest;
import dev.lakecommit.staging.StagingWriterState;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.table.data.RowData;
import org.apache.flink.types.RowKind;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Flink writer around Lakecommit's staging writer. Flink calls {@link #prepareCommit} right before each
 * checkpoint barrier (and at end of input) without telling the checkpoint id, so the writer names what it stages
 * after a provisional Lakecommit checkpoint id: {@code offset + last Flink checkpoint + 1}, never above the id
 * the aggregation operator will give the commit that reports it (it gives at least {@code offset + checkpoint}).
 *
 * <p>File names also carry the run's epoch and Flink's attempt number ({@link WriterContext}): a writer restored
 * from an old savepoint names its files after checkpoints that an earlier run may have committed, and only the
 * epoch keeps those names apart, so that nothing it writes, and nothing its teardown deletes, is a committed file.
 *
 * <p>Row kinds (a changelog: an aggregate's retractions, a CDC source), as Iceberg's own upsert sink writes them:
 * into a target that deletes by key (an Iceberg table in mode UPSERT, {@link SupportsDeletes}), INSERT and
 * UPDATE_AFTER replace the row of their key, UPDATE_BEFORE is skipped (the UPDATE_AFTER that follows replaces the
 * row) and DELETE deletes the key. Any other target only adds rows: a row that is not an INSERT fails the job,
 * naming its kind, instead of being added as if it were one.
 */
final class LakecommitWriter
    implements CommittingSinkWriter<RowData, WriterManifest>, StatefulSinkWriter<RowData, WriterState> {
  private static final Logger LOG = LoggerFactory.getLogger(LakecommitWriter.class);

  private final dev.lakecommit.core.SinkWriter<RowData, ? extends WriterManifest, StagingWriterState> writer;
  /** The writer's deletes by key, if the target has them; null for a target that only adds rows. */
  private final SupportsDeletes<RowData> deletes;
  private final String target;
  private final int index;
  private final JobId jobId;
  private final long offset;
  private long lastFlinkCheckpoint;
  private long lastPrepared;
  private long rowsSincePrepare;

  @SuppressWarnings("unchecked")
  private LakecommitWriter(dev.lakecommit.core.SinkWriter<RowData, ? extends WriterManifest, StagingWriterState> writer,
      String target, int index, JobId jobId, long offset, long lastFlinkCheckpoint, long lastPrepared) {
    this.writer = writer;
    this.deletes = writer instanceof SupportsDeletes<?> d ? (SupportsDeletes<RowData>) d : null;
    this.target = target;
    this.index = index;
    this.jobId = jobId;
    this.offset = offset;
    this.lastFlinkCheckpoint = lastFlinkCheckpoint;
    this.lastPrepared = lastPrepared;
  }

  /**
   * Opens the target and a staging writer for this subtask of the run of {@code epoch}. Without state (a fresh
   * start, or a subtask added by rescaling), the offset is the job's watermark in the target, read now.
   *
   * @throws IllegalStateException if the target has run epochs but the run claimed none (the sink was not
   *     translated by Flink, see {@link LakecommitFlinkSink})
   */
  static LakecommitWriter open(SinkRecipe target, org.apache.flink.table.types.logical.RowType rowType, JobId jobId,
      long epoch, WriterInitContext context, Collection<WriterState> states) throws IOException {
    SinkRecipe.CoreSink core = target.open(rowType);
    long committed;
    try (TargetRun run = core.openRun(jobId, epoch, "", target.table(), "a writer without it could stage the names"
        + " of committed files")) {
      committed = states.isEmpty() ? run.lastCommitted().orElse(0) : 0;
    }
    int index = context.getTaskInfo().getIndexOfThisSubtask();
    int parallelism = context.getTaskInfo().getNumberOfParallelSubtasks();
    int attempt = context.getTaskInfo().getAttemptNumber();
    long offset;
    long flinkCheckpoint;
    long restored;
    List<StagingWriterState> staging = new ArrayList<>();
    if (states.isEmpty()) {
      offset = committed;
      flinkCheckpoint = context.getRestoredCheckpointId().orElse(0);
      restored = offset + flinkCheckpoint;
    } else {
      offset = 0;
      flinkCheckpoint = 0;
      restored = 0;
      for (WriterState state : states) {
        offset = Math.max(offset, state.offset());
        flinkCheckpoint = Math.max(flinkCheckpoint, state.flinkCheckpointId());
        restored = Math.max(restored, state.staging().checkpointId());
        staging.add(state.staging());
      }
      restored = Math.max(restored, offset + flinkCheckpoint);
    }
    WriterContext writerContext = new WriterContext(jobId, index, parallelism, attempt, restored, epoch);
    LOG.info("Writer {} of {} for job {} on {} starts after checkpoint {} (Flink checkpoint {}, offset {}, run"
        + " epoch {}, attempt {})", index, parallelism, jobId, target.table(), restored, flinkCheckpoint, offset,
        epoch, attempt);
    var writer = states.isEmpty()
        ? core.sink().createWriter(writerContext)
        : core.sink().restoreWriter(writerContext, staging);
    return new LakecommitWriter(writer, target.describe(), index, jobId, offset, flinkCheckpoint, restored);
  }

  /**
   * Writes the row as its kind says (see the class comment).
   *
   * @throws IllegalArgumentException naming the row kind, if the row is not an INSERT and the target cannot
   *     delete by key
   */
  @Override
  public void write(RowData element, Context context) throws IOException {
    long row = rowsSincePrepare++;
    RowKind kind = element.getRowKind();
    if (kind == RowKind.INSERT) {
      writer.write(element);
      return;
    }
    if (deletes == null) {
      throw new IllegalArgumentException(String.format(
          "Row %s of writer %s (job %s, after checkpoint %s) has row kind %s (%s), but %s only adds rows: a changelog"
              + " (UPDATE_BEFORE, UPDATE_AFTER and DELETE rows) can only be written to an Iceberg table in mode"
              + " UPSERT, keyed by the changelog's key; write an insert-only stream here", row, index, jobId,
          lastPrepared, kind, kind.shortString(), target));
    }
    switch (kind) {
      case UPDATE_AFTER -> writer.write(element);
      case UPDATE_BEFORE -> { } // the UPDATE_AFTER of the same key replaces the row
      case DELETE -> deletes.delete(element);
      default -> throw new IllegalStateException("Unknown row kind " + kind);
    }
  }

  @Override
  public void flush(boolean endOfInput) {
    // prepareCommit closes every open file; nothing is buffered outside them.
  }

  /** Closes the open files and reports them under a provisional checkpoint id (see the class comment). */
  @Override
  public Collection<WriterManifest> prepareCommit() throws IOException {
    long provisional = Math.max(lastPrepared + 1, offset + lastFlinkCheckpoint + 1);
    Optional<? extends WriterManifest> manifest = writer.prepareCommit(provisional);
    lastPrepared = provisional;
    rowsSincePrepare = 0;
    return manifest.<Collection<WriterManifest>>map(List::of).orElse(List.of());
  }

  @Override
  public List<WriterState> snapshotState(long checkpointId) throws IOException {
    lastFlinkCheckpoint = Math.max(lastFlinkCheckpoint, checkpointId);
    return List.of(new WriterState(offset, checkpointId, writer.snapshotState(lastPrepared)));
  }

  /**
   * Deletes what was staged since the last {@code prepareCommit} (reported nowhere, so no commit can need it),
   * then closes. Those are files this writer created in this attempt, named with its run's epoch and attempt, so
   * no other run's file (and no committed one) is touched. On a normal end there is nothing unreported.
   */
  @Override
  public void close() throws IOException {
    try {
      writer.abortPrepare();
    } finally {
      writer.close();
    }
  }
}
