package dev.lakecommit.spark;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.WriterContext;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shipped to executors: opens the sink there (once per JVM, see {@link SinkCache}) and creates one core writer per
 * task attempt. The writer's attempt is Spark's task attempt id, unique among all attempts of the application
 * (retries, speculative copies and stage re-runs alike), and the names carry the run's epoch: no two attempts of
 * one run, and no two runs, ever stage the same file name.
 */
final class StagingWriterFactory implements DataWriterFactory {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(StagingWriterFactory.class);

  private final SinkRecipe target;
  private final StructType schema;
  private final String jobId;
  private final long checkpointId;
  private final long epoch;
  private final int firstWriter;
  private final int numPartitions;

  /**
   * @param firstWriter the writer index of partition 0 (the DataFrames of one write number their writers one after
   *     another)
   */
  StagingWriterFactory(SinkRecipe target, StructType schema, JobId jobId, long checkpointId, long epoch,
      int firstWriter, int numPartitions) {
    this.target = target;
    this.schema = schema;
    this.jobId = jobId.value();
    this.checkpointId = checkpointId;
    this.epoch = epoch;
    this.firstWriter = firstWriter;
    this.numPartitions = numPartitions;
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
    int attempt = (int) Math.floorMod(taskId, (long) Integer.MAX_VALUE);
    TaskContext task = TaskContext.get();
    if (task != null) {
      LOG.debug("Partition {} of job {}: task attempt {} (attempt number {}, stage attempt {})", partitionId,
          jobId, taskId, task.attemptNumber(), task.stageAttemptNumber());
    }
    SinkCache.Lease sink = SinkCache.open(target, schema);
    int writer = firstWriter + partitionId;
    WriterContext context = new WriterContext(JobId.of(jobId), writer, firstWriter + Math.max(numPartitions,
        partitionId + 1), attempt, checkpointId - 1, epoch);
    StagingDataWriter<?> created = null;
    try {
      created = StagingDataWriter.create(sink, context, checkpointId, partitionId);
      return created;
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot create a writer for partition " + partitionId + " of "
          + target.describe() + " (job " + jobId + ")", e);
    } finally {
      if (created == null) {
        sink.close(); // the writer closes it otherwise
      }
    }
  }
}
