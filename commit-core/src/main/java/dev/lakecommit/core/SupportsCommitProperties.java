package dev.lakecommit.core;

import java.io.IOException;
import java.util.Map;

/**
 * An aggregated committer that can carry more of a commit's identity into the table, in the commit's own
 * transaction: extra table properties (Iceberg) or table parameters (Hive) set next to the job's watermark, so they
 * are in the table exactly when the commit is. Engine adapters use it for what they need to map their own ids onto
 * checkpoint ids (the Spark adapter: which streaming query a job's checkpoint ids belong to); the standalone runtime
 * for the source position of each checkpoint ({@link CommitId#sourcePositionKey}).
 */
public interface SupportsCommitProperties {

  /**
   * From now on, every commit of this committer sets these table properties in its transaction (a commit found
   * already committed sets nothing). Called before the commits, on the committer's thread.
   *
   * @throws IllegalArgumentException if a key is one the committer writes itself (a watermark or an epoch)
   */
  void commitProperties(Map<String, String> properties);

  /**
   * The table's properties as the catalog holds them now (read fresh, like the watermark lookup).
   *
   * @throws IOException if the table cannot be read; the caller must not guess
   */
  Map<String, String> currentProperties() throws IOException;
}
