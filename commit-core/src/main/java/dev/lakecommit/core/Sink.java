package dev.lakecommit.core;

import java.io.IOException;
import java.util.List;

/**
 * A factory of writers for one target. The writers' commit infos of a checkpoint are combined into one commit of
 * the target by the sink's {@link SupportsAggregatedCommitter aggregated committer}; what the sink knows of its
 * target (epochs, watermark, staged files) is its {@link SupportsTarget target}.
 *
 * <p>Call order, driven by the runtime (standalone, Flink or Spark):
 *
 * <ol>
 *   <li>{@link #createWriter} on a fresh start, or {@link #restoreWriter} with the states of the last complete
 *       checkpoint after a restart;
 *   <li>per checkpoint: {@link SinkWriter#prepareCommit}, then {@link SinkWriter#snapshotState};
 *   <li>once the checkpoint is durably persisted, and only then: the committer commits the infos.
 * </ol>
 *
 * <p>A sink is configuration: it is created once and may be serialized to remote workers by an engine.
 *
 * @param <IN> records written
 * @param <C> commit info a writer emits per checkpoint (for example a manifest of staged files)
 * @param <S> writer state kept in a checkpoint: references and positions, never the data itself
 */
public interface Sink<IN, C, S> extends AutoCloseable {

  /** A writer for a fresh start of the job (no state to restore). */
  SinkWriter<IN, C, S> createWriter(WriterContext context) throws IOException;

  /**
   * A writer that resumes from states of the last complete checkpoint. With unchanged parallelism a writer gets
   * the state of the writer with its own index; after a rescale the states are spread over the new writers.
   */
  SinkWriter<IN, C, S> restoreWriter(WriterContext context, List<S> states) throws IOException;

  /** Serializer of the commit infos (they are persisted in checkpoints until committed). */
  SimpleVersionedSerializer<C> commitInfoSerializer();

  /** Serializer of the writer states. */
  SimpleVersionedSerializer<S> writerStateSerializer();

  /**
   * Releases what the sink holds (a catalog's connections, a metastore client). Called by whoever built the sink,
   * once it is done with it and with every writer, committer and target it made; a runtime never closes a sink it
   * was given. The default holds nothing.
   */
  @Override
  default void close() throws IOException {}
}
