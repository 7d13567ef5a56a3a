package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.staging.StagedFile;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.thrift.TException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One attempt to commit one checkpoint to a Hive table. Every step can be repeated — after a crash, by a retry,
 * or by a racing committer — with the same result, and the watermark is written last:
 *
 * <ol>
 *   <li>read the table: a watermark at or above the checkpoint means it is committed, and nothing is done; a run
 *       epoch of the job other than the committer's means it is fenced ({@link FencedException}), and nothing is
 *       done;
 *   <li>write the commit intent ({@link CommitIntent}) and, for a fenced committer, read the table again: a run
 *       that claims its epoch after that read finds the intent and finishes the commit;
 *   <li>move the staged files into their partition directories (append: the partition's directory; insert-
 *       overwrite: a fresh directory per partition and checkpoint), skipping files already there;
 *   <li>add the new partitions, whole, with their statistics, in batches of {@code add_partitions};
 *   <li>append: add the files' statistics to existing partitions not yet marked with the checkpoint;
 *       insert-overwrite: switch each existing partition to its fresh directory, with exact statistics and the
 *       replaced location recorded, then delete the replaced files;
 *   <li>write the {@code _SUCCESS} markers;
 *   <li>re-read the table, check the watermark and the epoch again, and swap in the watermark (and the statistics
 *       of an unpartitioned table) with a compare-and-swap: of two racing committers, one swaps and the other sees
 *       a conflict, then the watermark; a run claiming an epoch meanwhile changed the same counter, so the swap
 *       fails and the next attempt is fenced;
 *   <li>delete the intent.
 * </ol>
 */
final class CommitAttempt {
  private static final Logger LOG = LoggerFactory.getLogger(CommitAttempt.class);
  private final CommitContext context;
  private final HiveCommittable committable;
  private final CommitId id;
  private final long epoch;
  private final RunFence fence;
  private final Path resumedIntent;
  private Map<String, String> properties = Map.of();
  private Map<String, PendingUploads.Upload> uploads;
  private boolean swapping;

  /** The files of one partition (or of the unpartitioned table) in this checkpoint. */
  private static final class Target {
    final List<String> values;
    final String name;
    final List<StagedFile> files = new ArrayList<>();
    Stats stats = Stats.ZERO;
    Partition existing;
    Path dir;
    Path replaced;

    Target(List<String> values, String name) {
      this.values = values;
      this.name = name;
    }
  }

  /**
   * @param epoch the committer's run epoch for the job, 0 if it is not fenced
   * @param resumedIntent the intent this attempt finishes (a later run rolling a commit forward), or null: then the
   *     attempt writes its own
   */
  CommitAttempt(CommitContext context, HiveCommittable committable, long epoch, Path resumedIntent) {
    this.context = context;
    this.committable = committable;
    this.id = committable.commitId();
    this.epoch = epoch;
    this.fence = new RunFence(context.table(), id, epoch);
    this.resumedIntent = resumedIntent;
  }

  /** Sets these table parameters with the watermark (see {@link HiveAggregatedCommitter#commitProperties}). */
  CommitAttempt properties(Map<String, String> parameters) {
    this.properties = parameters;
    return this;
  }

  /** The pending uploads of the staged files, as the intent this attempt finishes holds them. */
  CommitAttempt uploads(List<PendingUploads.Upload> pending) {
    this.uploads = new HashMap<>();
    pending.forEach(upload -> uploads.put(upload.staged(), upload));
    return this;
  }

  /** Whether a failure happened while the watermark was being swapped in (its effect is then unknown). */
  boolean failedWhileSwapping() {
    return swapping;
  }

  CommitOutcome run() throws TException, IOException, InterruptedException, TableParameters.ConflictException {
    HiveTable info = context.table();
    Table table = context.client().getTable(info.database(), info.name());
    OptionalLong watermark = TableParameters.committed(table.getParameters(), id.jobId());
    if (context.idempotencyCheck() && watermark.isPresent() && watermark.getAsLong() >= id.checkpointId()) {
      return alreadyCommitted(watermark.getAsLong());
    }
    fence.check(table);
    if (context.intents() != null) {
      table = writeIntent(table);
      watermark = TableParameters.committed(table.getParameters(), id.jobId());
      if (context.idempotencyCheck() && watermark.isPresent() && watermark.getAsLong() >= id.checkpointId()) {
        return alreadyCommitted(watermark.getAsLong());
      }
    }
    Map<String, Target> targets = group();
    if (info.isPartitioned()) {
      fetchExisting(targets);
    }
    assignDirectories(table, targets);
    int moved = move(targets);

    PartitionCommits partitions = new PartitionCommits(context, id);
    int added = 0;
    if (info.isPartitioned()) {
      added = addNewPartitions(partitions, table, targets);
      updateExistingPartitions(partitions, targets);
    } else if (context.mode() == WriteMode.INSERT_OVERWRITE) {
      switchTable(table, targets.values().iterator().next());
    }
    if (context.mode() == WriteMode.INSERT_OVERWRITE) {
      deleteReplaced(targets);
    }
    if (context.successFiles()) {
      Set<Path> dirs = new LinkedHashSet<>();
      targets.values().forEach(t -> dirs.add(t.dir));
      context.storage().writeSuccessFiles(dirs);
      context.hook().reached(CommitHook.SUCCESS_FILES, id);
    }
    context.hook().reached(CommitHook.BEFORE_WATERMARK, id);
    OptionalLong racedTo = recordWatermark(targets);
    if (racedTo.isPresent()) {
      return alreadyCommitted(racedTo.getAsLong());
    }
    deleteIntent();
    context.hook().reached(CommitHook.AFTER_WATERMARK, id);
    return CommitOutcome.committed(String.format("%s files (%s moved now) in %s partitions (%s new) of %s",
        committable.fileCount(), moved, info.isPartitioned() ? targets.size() : 0, added, info));
  }

  /**
   * Writes the intent before the first move. A fenced committer then reads the table again: a run that claimed a
   * newer epoch before this read may have listed the intents before it was written, so the commit stops here (and
   * takes its intent back: nothing moved); a run that claims after this read lists the intent and finishes it.
   *
   * @return the table as read last
   */
  private Table writeIntent(Table read) throws IOException, TException, InterruptedException {
    Path intent = resumedIntent;
    if (intent == null) {
      loadUploads();
      intent = context.intents().write(
          new CommitIntent(context.mode(), epoch, committable, List.copyOf(uploads.values())));
    }
    context.hook().reached(CommitHook.INTENT_WRITTEN, id);
    if (epoch == 0 || resumedIntent != null) {
      return read;
    }
    HiveTable info = context.table();
    Table table = context.client().getTable(info.database(), info.name());
    OptionalLong watermark = TableParameters.committed(table.getParameters(), id.jobId());
    if (context.idempotencyCheck() && watermark.isPresent() && watermark.getAsLong() >= id.checkpointId()) {
      return table;
    }
    try {
      fence.check(table);
    } catch (FencedException | FatalCommitException e) {
      context.intents().delete(intent);
      throw e;
    }
    return table;
  }

  /**
   * The pending uploads of the staged files, before the intent is written: from this run's intent if an earlier
   * attempt wrote it (it may have completed some, whose {@code .pending} files are gone), else from the staged files.
   */
  private void loadUploads() throws IOException, InterruptedException {
    if (uploads != null || context.storage().uploads() == null) {
      uploads = uploads == null ? Map.of() : uploads;
      return;
    }
    Path own = context.intents().location(id, epoch);
    if (context.storage().fs().exists(own)) {
      uploads(context.intents().read(own).uploads());
      return;
    }
    List<Path> pending = new ArrayList<>();
    committable.files().forEach(file -> {
      if (PendingUploads.isPending(new Path(file.path()))) {
        pending.add(new Path(file.path()));
      }
    });
    uploads = context.storage().loadUploads(pending);
  }

  /**
   * The commit is in the table: its intent is done. Best effort: a leftover at or below the watermark is deleted by
   * the next run's claim.
   */
  void deleteIntent() {
    if (context.intents() == null) {
      return;
    }
    Path intent = resumedIntent != null ? resumedIntent : context.intents().location(id, epoch);
    try {
      context.intents().delete(intent);
    } catch (IOException e) {
      LOG.warn("Could not delete the commit intent {} of {} in {}; the next run of the job deletes it", intent, id,
          context.table(), e);
    }
  }

  private CommitOutcome alreadyCommitted(long watermark) {
    deleteIntent();
    return CommitOutcome.alreadyCommitted(
        "watermark " + CommitId.watermarkKey(id.jobId()) + "=" + watermark);
  }

  /** The checkpoint's files by partition, in the order they were staged. */
  private Map<String, Target> group() {
    HiveTable info = context.table();
    Map<String, Target> targets = new LinkedHashMap<>();
    committable.files().forEach(file -> {
      List<String> values = info.isPartitioned()
          ? PartitionValues.of(file, info.spec(), context.defaultPartitionName())
          : List.of();
      String name = HivePaths.partitionName(info.partitionColumns(), values, context.defaultPartitionName());
      Target target = targets.computeIfAbsent(name, n -> new Target(values, n));
      target.files.add(file);
      target.stats = target.stats.plusFile(file.recordCount(), file.fileSizeInBytes());
    });
    return targets;
  }

  private void fetchExisting(Map<String, Target> targets) throws TException {
    for (Partition partition : new PartitionCommits(context, id).fetch(new ArrayList<>(targets.keySet()))) {
      String name = HivePaths.partitionName(context.table().partitionColumns(), partition.getValues(),
          context.defaultPartitionName());
      Target target = targets.get(name);
      if (target != null) {
        target.existing = partition;
      }
    }
  }

  /**
   * Where each partition's files go. It depends only on the checkpoint and on state this checkpoint does not
   * change, so that every attempt picks the same directory: append into an existing partition's location (or
   * Hive's usual directory for a new one); insert-overwrite into a fresh directory of this checkpoint.
   */
  private void assignDirectories(Table table, Map<String, Target> targets) {
    HiveTable info = context.table();
    Path tableLocation = new Path(table.getSd().getLocation());
    for (Target target : targets.values()) {
      Path usual = info.isPartitioned() ? HivePaths.partitionDir(tableLocation, target.name) : info.baseLocation();
      if (context.mode() == WriteMode.INSERT_OVERWRITE) {
        target.dir = HivePaths.overwriteDir(usual, id.jobId().value(), id.checkpointId());
      } else if (!info.isPartitioned()) {
        target.dir = tableLocation;
      } else if (target.existing != null && target.existing.getSd().getLocation() != null) {
        target.dir = new Path(target.existing.getSd().getLocation());
      } else {
        target.dir = usual;
      }
    }
  }

  /**
   * Where each file of the checkpoint goes (or went), as this attempt would move it: for a later run that undoes an
   * intent it cannot finish.
   *
   * @return the destinations by partition name ("" for an unpartitioned table)
   */
  Map<String, List<Path>> destinations() throws TException {
    HiveTable info = context.table();
    Table table = context.client().getTable(info.database(), info.name());
    Map<String, Target> targets = group();
    if (info.isPartitioned()) {
      fetchExisting(targets);
    }
    assignDirectories(table, targets);
    Map<String, List<Path>> destinations = new LinkedHashMap<>();
    for (Target target : targets.values()) {
      List<Path> paths = destinations.computeIfAbsent(target.name, n -> new ArrayList<>());
      target.files.forEach(file -> paths.add(new Path(target.dir, file.fileName())));
    }
    return destinations;
  }

  private int move(Map<String, Target> targets) throws IOException, InterruptedException {
    List<TableStorage.Move> moves = new ArrayList<>(committable.fileCount());
    for (Target target : targets.values()) {
      // An earlier attempt may have moved files to where the partition was before a merge switched it.
      String merged = target.existing == null || target.existing.getParameters() == null ? null
          : target.existing.getParameters().get(HiveMaintenance.MERGED_FROM_KEY);
      Path before = merged == null || HivePaths.sameLocation(new Path(merged), target.dir) ? null : new Path(merged);
      for (StagedFile file : target.files) {
        moves.add(new TableStorage.Move(new Path(file.path()), new Path(target.dir, file.fileName()),
            file.fileSizeInBytes(), before == null ? null : new Path(before, file.fileName()),
            uploads == null ? null : uploads.get(new Path(file.path()).toString())));
      }
    }
    int moved = context.storage().moveAll(moves, () -> context.hook().reached(CommitHook.FILE_MOVED, id));
    context.hook().reached(CommitHook.FILES_MOVED, id);
    return moved;
  }

  private int addNewPartitions(PartitionCommits partitions, Table table, Map<String, Target> targets)
      throws TException, IOException {
    List<Partition> fresh = new ArrayList<>();
    Map<String, Target> byName = new HashMap<>();
    for (Target target : targets.values()) {
      if (target.existing == null) {
        Map<String, String> params = new HashMap<>();
        TableParameters.setExactStats(params, target.stats);
        TableParameters.setCommitted(params, id);
        fresh.add(partitions.newPartition(table, target.values, target.dir, params));
        byName.put(target.name, target);
      }
    }
    // Partitions a racing committer (or another job) added meanwhile are updated like existing ones.
    for (Partition raced : partitions.add(fresh)) {
      Target target = byName.get(HivePaths.partitionName(context.table().partitionColumns(), raced.getValues(),
          context.defaultPartitionName()));
      if (!HivePaths.sameLocation(new Path(raced.getSd().getLocation()), target.dir)) {
        throw new FatalCommitException(String.format(
            "Partition %s of %s was added by another writer at %s while %s moved its files to %s", target.name,
            context.table(), raced.getSd().getLocation(), id, target.dir));
      }
      target.existing = raced;
    }
    context.hook().reached(CommitHook.PARTITIONS_ADDED, id);
    return fresh.size();
  }

  private void updateExistingPartitions(PartitionCommits partitions, Map<String, Target> targets)
      throws TException, FatalCommitException, TableParameters.ConflictException {
    // Read them again right before replacing them: alter_partitions replaces the whole partition.
    List<String> names = new ArrayList<>();
    targets.values().stream().filter(t -> t.existing != null).forEach(t -> names.add(t.name));
    Map<String, Partition> fresh = new HashMap<>();
    for (Partition partition : partitions.fetch(names)) {
      fresh.put(HivePaths.partitionName(context.table().partitionColumns(), partition.getValues(),
          context.defaultPartitionName()), partition);
    }
    List<Partition> changed = new ArrayList<>();
    for (Target target : targets.values()) {
      if (target.existing == null) {
        continue;
      }
      Partition partition = fresh.get(target.name);
      if (partition == null) {
        throw new FatalCommitException(String.format("Partition %s of %s was dropped while %s was committed to it",
            target.name, context.table(), id));
      }
      Map<String, String> params = partition.getParameters() == null
          ? new HashMap<>() : new HashMap<>(partition.getParameters());
      OptionalLong marked = TableParameters.committed(params, id.jobId());
      boolean done = context.idempotencyCheck() && marked.isPresent() && marked.getAsLong() >= id.checkpointId();
      if (context.mode() == WriteMode.INSERT_OVERWRITE) {
        Path current = new Path(partition.getSd().getLocation());
        if (HivePaths.sameLocation(current, target.dir)) {
          target.replaced = replacedLocation(params);
          continue;
        }
        target.replaced = current;
        partition.getSd().setLocation(target.dir.toString());
        params.put(TableParameters.REPLACED_LOCATION_KEY, current.toString());
        TableParameters.setExactStats(params, target.stats);
      } else if (done) {
        continue;
      } else if (!HivePaths.sameLocation(new Path(partition.getSd().getLocation()), target.dir)) {
        // A merge switched the partition after this attempt read it: the next attempt moves the files on.
        throw new TableParameters.ConflictException(String.format("Partition %s of %s was switched to %s by a merge"
            + " while %s moved its files to %s", target.name, context.table(), partition.getSd().getLocation(), id,
            target.dir), null);
      } else {
        TableParameters.addStats(params, target.stats);
      }
      TableParameters.setCommitted(params, id);
      partition.setParameters(params);
      changed.add(partition);
    }
    partitions.alter(changed);
    context.hook().reached(CommitHook.STATS_UPDATED, id);
  }

  /** Insert-overwrite of an unpartitioned table: point the table at the checkpoint's fresh directory. */
  private void switchTable(Table read, Target target) throws TException, TableParameters.ConflictException {
    Path current = new Path(read.getSd().getLocation());
    if (HivePaths.sameLocation(current, target.dir)) {
      target.replaced = replacedLocation(read.getParameters());
    } else {
      Table changed = read.deepCopy();
      changed.getSd().setLocation(target.dir.toString());
      changed.getParameters().put(TableParameters.REPLACED_LOCATION_KEY, current.toString());
      TableParameters.setExactStats(changed.getParameters(), target.stats);
      TableParameters.swap(context.client(), context.fencing().of(context.client()), read, changed);
      target.replaced = current;
    }
    context.hook().reached(CommitHook.STATS_UPDATED, id);
  }

  private static Path replacedLocation(Map<String, String> params) {
    String replaced = params == null ? null : params.get(TableParameters.REPLACED_LOCATION_KEY);
    return replaced == null ? null : new Path(replaced);
  }

  private void deleteReplaced(Map<String, Target> targets) throws IOException {
    for (Target target : targets.values()) {
      if (target.replaced != null) {
        context.storage().deleteReplaced(target.replaced, target.dir);
      }
    }
    context.hook().reached(CommitHook.REPLACED_DELETED, id);
  }

  /**
   * Swaps in the watermark, on a fresh read of the table: the check sees the state the swap lands on.
   *
   * @return the watermark a racing committer recorded first, if it did
   */
  private OptionalLong recordWatermark(Map<String, Target> targets)
      throws TException, FatalCommitException, TableParameters.ConflictException {
    HiveTable info = context.table();
    Table read = context.client().getTable(info.database(), info.name());
    OptionalLong watermark = TableParameters.committed(read.getParameters(), id.jobId());
    if (context.idempotencyCheck() && watermark.isPresent() && watermark.getAsLong() >= id.checkpointId()) {
      return watermark;
    }
    // Fenced here, the moved files stay: the run that fenced this one claimed after the intent was written, so it
    // finishes this commit (DESIGN.md rule 12).
    fence.check(read);
    Table changed = read.deepCopy();
    if (changed.getParameters() == null) {
      changed.setParameters(new HashMap<>());
    }
    if (!info.isPartitioned() && context.mode() == WriteMode.APPEND) {
      TableParameters.addStats(changed.getParameters(), targets.values().iterator().next().stats);
    }
    TableParameters.setCommitted(changed.getParameters(), id);
    changed.getParameters().putAll(properties);
    swapping = true;
    TableParameters.swap(context.client(), context.fencing().of(context.client()), read, changed);
    swapping = false;
    return OptionalLong.empty();
  }
}
