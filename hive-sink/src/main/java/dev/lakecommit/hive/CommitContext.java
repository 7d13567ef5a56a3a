package dev.lakecommit.hive;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;

/**
 * What every commit attempt of one committer shares.
 *
 * @param client the committer's metastore client (used from the committer's thread only)
 * @param table the checked table
 * @param mode append or insert-overwrite
 * @param storage the table's file system
 * @param hook test-only step hook
 * @param idempotencyCheck test-only when false: no watermark or partition-marker checks
 * @param successFiles whether to write {@code _SUCCESS} markers
 * @param batchSize partitions per {@code add_partitions} / {@code alter_partitions} / lookup call
 * @param defaultPartitionName the partition value of null and empty values
 * @param conflicts conflicts seen (a racing committer changed the table or added a partition first)
 * @param intents where commits write their intents before the first move; null when test-only disabled
 * @param fencing how the sink's table changes stay compare-and-swaps on this metastore (probed once per sink)
 */
record CommitContext(
    IMetaStoreClient client,
    HiveTable table,
    WriteMode mode,
    TableStorage storage,
    CommitHook hook,
    boolean idempotencyCheck,
    boolean successFiles,
    int batchSize,
    String defaultPartitionName,
    AtomicInteger conflicts,
    CommitIntents intents,
    TableFencing.Probed fencing) {

  /** The same, applying commits in {@code writeMode} (a later run finishes an intent in the mode it was made). */
  CommitContext withMode(WriteMode writeMode) {
    return new CommitContext(client, table, writeMode, storage, hook, idempotencyCheck, successFiles, batchSize,
        defaultPartitionName, conflicts, intents, fencing);
  }
}
