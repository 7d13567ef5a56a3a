package dev.lakecommit.spark;

import java.util.Optional;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * What one successful task attempt sends to the driver: its staging manifest, serialized with the sink's versioned
 * serializer ({@code VersionedSerialization} bytes), or nothing when its partition was empty.
 *
 * @param partition the Spark partition, the writer index
 * @param attempt the attempt number in the staged file names (Spark's unique task attempt id)
 * @param manifest the serialized manifest, null if the task staged nothing
 */
record StagedMessage(int partition, int attempt, byte[] manifest) implements WriterCommitMessage {
  private static final long serialVersionUID = 1L;

  Optional<byte[]> manifestBytes() {
    return Optional.ofNullable(manifest);
  }
}
