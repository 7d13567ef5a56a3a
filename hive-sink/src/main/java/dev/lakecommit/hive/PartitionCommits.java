package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.api.AlreadyExistsException;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.thrift.TException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The partition calls of a commit, in bounded batches. */
final class PartitionCommits {
  private static final Logger LOG = LoggerFactory.getLogger(PartitionCommits.class);

  private final CommitContext context;
  private final CommitId id;

  PartitionCommits(CommitContext context, CommitId id) {
    this.context = context;
    this.id = id;
  }

  /** The partitions of these names that exist. */
  List<Partition> fetch(List<String> names) throws TException {
    List<Partition> found = new ArrayList<>();
    HiveTable table = context.table();
    for (List<String> batch : batches(names)) {
      found.addAll(context.client().getPartitionsByNames(table.database(), table.name(), batch));
    }
    return found;
  }

  /** A partition of {@code table} at {@code dir}: the table's storage descriptor with the partition's location. */
  Partition newPartition(Table table, List<String> values, Path dir, java.util.Map<String, String> params) {
    StorageDescriptor sd = new StorageDescriptor(table.getSd());
    sd.setLocation(dir.toString());
    Partition partition = new Partition();
    partition.setDbName(table.getDbName());
    partition.setTableName(table.getTableName());
    partition.setValues(new ArrayList<>(values));
    partition.setSd(sd);
    partition.setParameters(new HashMap<>(params));
    return partition;
  }

  /**
   * Adds the partitions, one {@code add_partitions} call per batch; each call adds all of its partitions or
   * none. A batch refused because one of its partitions exists (a racing committer, or a replay of an attempt
   * that added it) is a conflict: the ones that exist are fetched and the others added.
   *
   * @return the partitions that turned out to exist already
   */
  List<Partition> add(List<Partition> partitions) throws TException {
    HiveTable table = context.table();
    List<Partition> existing = new ArrayList<>();
    for (List<Partition> batch : batches(partitions)) {
      try {
        context.client().add_partitions(batch, false, false);
      } catch (AlreadyExistsException e) {
        context.conflicts().incrementAndGet();
        List<String> names = new ArrayList<>();
        for (Partition partition : batch) {
          names.add(HivePaths.partitionName(table.partitionColumns(), partition.getValues(),
              context.defaultPartitionName()));
        }
        List<Partition> found = fetch(names);
        LOG.info("{} of {} partitions of {} for {} were added by another writer meanwhile; adding the others",
            found.size(), batch.size(), table, id);
        existing.addAll(found);
        List<Partition> rest = new ArrayList<>(batch);
        rest.removeIf(p -> found.stream().anyMatch(f -> f.getValues().equals(p.getValues())));
        if (!rest.isEmpty()) {
          List<Partition> added = context.client().add_partitions(rest, true, true);
          if (added.size() < rest.size()) {
            // Some were added by another writer between the lookup and this call.
            List<String> late = new ArrayList<>();
            for (Partition partition : rest) {
              if (added.stream().noneMatch(a -> a.getValues().equals(partition.getValues()))) {
                late.add(HivePaths.partitionName(table.partitionColumns(), partition.getValues(),
                    context.defaultPartitionName()));
              }
            }
            existing.addAll(fetch(late));
          }
        }
      }
    }
    return existing;
  }

  /** Replaces the partitions, one {@code alter_partitions} call per batch, keeping the statistics given. */
  void alter(List<Partition> partitions) throws TException {
    HiveTable table = context.table();
    for (List<Partition> batch : batches(partitions)) {
      context.client().alter_partitions(table.database(), table.name(), batch, TableParameters.keepStats());
    }
  }

  private <T> List<List<T>> batches(List<T> items) {
    List<List<T>> batches = new ArrayList<>();
    for (int from = 0; from < items.size(); from += context.batchSize()) {
      batches.add(items.subList(from, Math.min(items.size(), from + context.batchSize())));
    }
    return batches;
  }
}
