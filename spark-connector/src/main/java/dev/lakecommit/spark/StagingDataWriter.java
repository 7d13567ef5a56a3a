package dev.lakecommit.spark;

import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.VersionedSerialization;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.staging.WriterManifest;
import java.io.IOException;
import java.util.Optional;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task attempt's writer: a core {@link SinkWriter} staging Parquet files. {@link #commit} prepares the one
 * checkpoint of the write and hands its manifest to the driver; {@link #abort} deletes what this attempt staged.
 * Spark's commit coordinator lets one attempt per partition commit, so the driver sees exactly one manifest (or
 * none) per partition.
 */
final class StagingDataWriter<M extends WriterManifest> implements DataWriter<InternalRow> {
  private static final Logger LOG = LoggerFactory.getLogger(StagingDataWriter.class);

  private final SinkCache.Lease sink;
  private final SinkWriter<InternalRow, M, ?> writer;
  private final SimpleVersionedSerializer<M> serializer;
  private final long checkpointId;
  private final int partition;
  private final int attempt;

  private StagingDataWriter(SinkCache.Lease sink, SinkWriter<InternalRow, M, ?> writer,
      SimpleVersionedSerializer<M> serializer, long checkpointId, int partition, int attempt) {
    this.sink = sink;
    this.writer = writer;
    this.serializer = serializer;
    this.checkpointId = checkpointId;
    this.partition = partition;
    this.attempt = attempt;
  }

  /**
   * A writer of the leased sink for one task attempt ({@code context}'s attempt); it closes the lease when it is
   * closed.
   */
  static StagingDataWriter<?> create(SinkCache.Lease sink, WriterContext context, long checkpointId, int partition)
      throws IOException {
    return create(sink, sink.opened().sink(), context, checkpointId, partition);
  }

  private static <M extends WriterManifest> StagingDataWriter<M> create(SinkCache.Lease lease,
      Sink<InternalRow, M, ?> sink, WriterContext context, long checkpointId, int partition) throws IOException {
    return new StagingDataWriter<>(lease, sink.createWriter(context), sink.commitInfoSerializer(), checkpointId,
        partition, context.attempt());
  }

  @Override
  public void write(InternalRow row) throws IOException {
    writer.write(row);
  }

  @Override
  public StagedMessage commit() throws IOException {
    Optional<M> manifest = writer.prepareCommit(checkpointId);
    byte[] bytes = manifest.isPresent() ? VersionedSerialization.toBytes(serializer, manifest.get()) : null;
    LOG.debug("Partition {} (attempt {}) staged {} files for checkpoint {}", partition, attempt,
        manifest.map(WriterManifest::fileCount).orElse(0L), checkpointId);
    return new StagedMessage(partition, attempt, bytes);
  }

  @Override
  public void abort() throws IOException {
    writer.abortPrepare();
  }

  @Override
  public void close() throws IOException {
    try {
      writer.close();
    } finally {
      sink.close();
    }
  }
}
