package dev.lakecommit.hive;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingLayout;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.thrift.TException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One round of {@link HiveMaintenance}: its metastore client, its view of the table, and the steps. */
final class MergeRound implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(MergeRound.class);
  /** Hidden directory, inside a partition's usual directory, that holds the directories merges write. */
  static final String MERGE_DIR = ".lakecommit-merge";
  /** Names of merged files: merged again when small, whatever their age. */
  static final String MERGED_PREFIX = "lakecommit-merged-";
  /** How often a merge copies files that arrived meanwhile before it gives up on the partition for this round. */
  private static final int CATCH_UP_PASSES = 3;

  private final IMetaStoreClient client;
  private final FileSystem fs;
  private final Configuration conf;
  private final HiveTable table;
  private final Table read;
  private final HiveMaintenance.Options options;
  private final MergeHook hook;
  private final long targetFileSize;
  private final String defaultPartitionName;
  private final CommitIntents intents;
  private final String roundId = System.currentTimeMillis() + "-" + UUID.randomUUID().toString().substring(0, 8);
  private final long now = System.currentTimeMillis();
  private final MergeCleanup cleanup;
  private int caughtUp;

  MergeRound(IMetaStoreClient client, FileSystem fs, HiveConf conf, HiveTable table, Table read,
      HiveMaintenance.Options options, MergeHook hook) {
    this.client = client;
    this.fs = fs;
    this.conf = conf;
    this.table = table;
    this.read = read;
    this.options = options;
    this.hook = hook;
    this.targetFileSize = HiveMaintenance.targetFileSize(options, read);
    this.defaultPartitionName = conf.getVar(HiveConf.ConfVars.DEFAULTPARTITIONNAME);
    this.intents = new CommitIntents(fs, table.stagingRoot());
    this.cleanup = new MergeCleanup(fs, table, new Path(read.getSd().getLocation()), hook,
        options.minAge().toMillis(), now);
  }

  /** A partition's merge as planned: the files its location held, and what to do with each. */
  private record Planned(Partition partition, String name, Path location, Map<String, Long> listing,
      List<List<FileStatus>> bins, List<FileStatus> copied) {
    HiveMaintenance.PartitionPlan summary() {
      int merged = bins.stream().mapToInt(List::size).sum();
      long bytes = bins.stream().flatMap(List::stream).mapToLong(FileStatus::getLen).sum();
      return new HiveMaintenance.PartitionPlan(name, location.toString(), merged, bytes, bins.size(),
          copied.size());
    }
  }

  HiveMaintenance.Plan plan() throws IOException {
    Set<String> busy = busyPartitions();
    List<HiveMaintenance.PartitionPlan> planned = new ArrayList<>();
    List<String> skipped = new ArrayList<>();
    int pendingDeletes = 0;
    for (Partition partition : partitions()) {
      String name = name(partition);
      int pending = cleanup.replacedLeft(partition);
      pendingDeletes += pending;
      if (busy.contains(name)) {
        skipped.add(name);
      } else if (pending == 0) {
        planPartition(partition).ifPresent(p -> planned.add(p.summary()));
      }
    }
    return new HiveMaintenance.Plan(targetFileSize, planned, skipped, pendingDeletes);
  }

  HiveMaintenance.Result run() throws IOException {
    Set<String> busy = busyPartitions();
    int deleted = 0;
    int leftovers = 0;
    for (Partition partition : partitions()) {
      String name = name(partition);
      if (!busy.contains(name) && MergeCleanup.mergedFrom(partition) != null) {
        deleted += cleanup.deleteReplaced(partition, name, fetch(partition));
      }
      leftovers += cleanup.deleteLeftovers(partition, name);
    }
    int merged = 0;
    int filesMerged = 0;
    int filesWritten = 0;
    Map<String, String> dropped = new LinkedHashMap<>();
    for (Partition partition : partitions()) {
      String name = name(partition);
      if (busy.contains(name) || cleanup.replacedLeft(partition) > 0) {
        continue;
      }
      java.util.Optional<Planned> planned = planPartition(partition);
      if (planned.isEmpty()) {
        continue;
      }
      String reason = execute(planned.get());
      if (reason == null) {
        merged++;
        filesMerged += planned.get().summary().filesMerged();
        filesWritten += planned.get().bins().size();
      } else {
        dropped.put(name, reason);
      }
    }
    return new HiveMaintenance.Result(merged, filesMerged, filesWritten, caughtUp, cleanup.stragglers(), dropped,
        deleted, leftovers);
  }

  private List<Partition> partitions() throws IOException {
    if (!table.isPartitioned()) {
      return List.of();
    }
    try {
      List<Partition> partitions = new ArrayList<>(client.listPartitions(table.database(), table.name(),
          (short) -1));
      partitions.removeIf(p -> p.getSd() == null || p.getSd().getLocation() == null);
      return partitions;
    } catch (TException e) {
      throw new IOException("Cannot list the partitions of table " + table + ": " + e.getMessage(), e);
    }
  }

  private String name(Partition partition) {
    return HivePaths.partitionName(table.partitionColumns(), partition.getValues(), defaultPartitionName);
  }

  /**
   * The partitions an unfinished commit intent names (a checkpoint above its job's watermark): a commit is moving
   * files into them, or a crashed one left them for its next run to finish.
   */
  private Set<String> busyPartitions() throws IOException {
    Table fresh = readTable();
    Set<String> busy = new HashSet<>();
    for (Map.Entry<String, CommitTarget.JobState> job : HiveMaintenance.jobs(fresh).entrySet()) {
      long watermark = job.getValue().committed().orElse(-1);
      for (CommitIntents.Stored stored : intents.list(JobId.of(job.getKey()))) {
        if (stored.checkpointId() <= watermark) {
          continue;
        }
        CommitIntent intent;
        try {
          intent = intents.read(stored.path());
        } catch (FileNotFoundException e) {
          continue; // finished meanwhile
        }
        for (StagedFile file : (Iterable<StagedFile>) intent.committable().files()::iterator) {
          busy.add(HivePaths.partitionName(table.partitionColumns(),
              PartitionValues.of(file, table.spec(), defaultPartitionName), defaultPartitionName));
        }
      }
    }
    return busy;
  }

  private java.util.Optional<Planned> planPartition(Partition partition) throws IOException {
    Path location = new Path(partition.getSd().getLocation());
    List<FileStatus> files = cleanup.visibleFiles(location);
    Map<String, CommitTarget.JobState> jobs = HiveMaintenance.jobs(read);
    List<FileStatus> small = new ArrayList<>();
    List<FileStatus> copied = new ArrayList<>();
    for (FileStatus file : files) {
      if (file.getLen() < targetFileSize * 3 / 4 && eligible(file, jobs)) {
        small.add(file);
      } else {
        copied.add(file);
      }
    }
    small.sort(Comparator.comparing(f -> f.getPath().getName()));
    List<List<FileStatus>> bins = new ArrayList<>();
    List<FileStatus> bin = new ArrayList<>();
    long binBytes = 0;
    for (FileStatus file : small) {
      if (!bin.isEmpty() && binBytes + file.getLen() > targetFileSize) {
        bins.add(bin);
        bin = new ArrayList<>();
        binBytes = 0;
      }
      bin.add(file);
      binBytes += file.getLen();
    }
    if (!bin.isEmpty()) {
      bins.add(bin);
    }
    for (List<FileStatus> one : bins) {
      if (one.size() == 1) {
        copied.add(one.get(0));
      }
    }
    bins.removeIf(b -> b.size() < 2);
    if (bins.isEmpty()) {
      return java.util.Optional.empty();
    }
    return java.util.Optional.of(new Planned(partition, name(partition), location, sizes(files), bins, copied));
  }

  /**
   * Whether a file may be merged: a committed checkpoint's file older than the job's newest N checkpoints, a
   * merged file, or a file of another writer older than the minimum age.
   */
  private boolean eligible(FileStatus file, Map<String, CommitTarget.JobState> jobs) {
    String name = file.getPath().getName();
    if (name.startsWith(MERGED_PREFIX)) {
      return true;
    }
    for (Map.Entry<String, CommitTarget.JobState> job : jobs.entrySet()) {
      OptionalLong checkpoint = StagingLayout.checkpointInName(JobId.of(job.getKey()), name);
      if (checkpoint.isPresent()) {
        OptionalLong watermark = job.getValue().committed();
        return watermark.isPresent()
            && checkpoint.getAsLong() <= watermark.getAsLong() - options.keepCheckpoints();
      }
    }
    return now - file.getModificationTime() >= options.minAge().toMillis();
  }

  /**
   * Writes the partition's merged directory, checks that nothing changed, and switches the partition to it.
   *
   * @return null if switched, else why the merge was dropped
   */
  private String execute(Planned planned) throws IOException {
    Path usual = HivePaths.partitionDir(new Path(read.getSd().getLocation()), planned.name());
    Path dir = new Path(new Path(usual, MERGE_DIR), roundId);
    Map<String, Long> written = new LinkedHashMap<>();
    long rows = 0;
    MergeWriter writer = new MergeWriter(table, conf);
    java.util.Set<String> jobs = HiveMaintenance.jobs(read).keySet();
    for (int i = 0; i < planned.bins().size(); i++) {
      Path out = new Path(dir, MERGED_PREFIX + roundId + "-" + i + ".parquet");
      rows += writer.merge(planned.bins().get(i), out, jobs);
      written.put(out.getName(), fs.getFileStatus(out).getLen());
    }
    for (FileStatus file : planned.copied()) {
      rows += copy(file, dir, written);
    }
    Map<String, Long> listing = new LinkedHashMap<>(planned.listing());
    new MergeManifest(planned.location(), listing, written).write(fs, dir);
    hook.reached(MergeHook.FILES_WRITTEN, planned.name());

    // A failure from here on leaves the directory to a later round (as a crash would): it may have been switched.
    Partition fresh;
    for (int pass = 1; ; pass++) {
      Check check = check(planned, listing);
      if (check.conflict() == null && check.added().isEmpty()) {
        fresh = check.partition();
        break;
      }
      String conflict = check.conflict() != null ? check.conflict()
          : pass > CATCH_UP_PASSES ? "files keep arriving: " + check.added().keySet() : null;
      if (conflict != null) {
        LOG.info("Merge of partition {} of {} dropped: {}; the next round tries again", planned.name(), table,
            conflict);
        deleteQuietly(dir);
        return conflict;
      }
      // Files of commits that completed since the plan: copied too, so that the switch loses none of their rows.
      for (FileStatus file : check.added().values()) {
        rows += copy(file, dir, written);
        caughtUp++;
      }
      listing.putAll(sizes(List.copyOf(check.added().values())));
      new MergeManifest(planned.location(), listing, written).write(fs, dir);
    }
    hook.reached(MergeHook.BEFORE_SWITCH, planned.name());
    switchTo(planned, fresh, dir, new Stats(written.size(), rows, written.values().stream().mapToLong(v -> v).sum()));
    hook.reached(MergeHook.SWITCHED, planned.name());
    // A commit still in flight moves its own files on (it sees the switch), or its partition update, read before
    // the switch, puts the partition back where its files are; the next round moves what is left.
    if (!busyPartitions().contains(planned.name())) {
      cleanup.moveStragglers(planned.name(), planned.location(), listing.keySet(), dir);
    }
    LOG.info("Merged {} files of partition {} of {} into {} (and copied {}) at {}; the {} replaced files go in the "
        + "next round", planned.summary().filesMerged(), planned.name(), table, planned.bins().size(),
        written.size() - planned.bins().size(), dir, listing.size());
    return null;
  }

  private long copy(FileStatus file, Path dir, Map<String, Long> written) throws IOException {
    Path copy = new Path(dir, file.getPath().getName());
    if (!FileUtil.copy(fs, file.getPath(), fs, copy, false, true, conf)) {
      throw new IOException("Cannot copy " + file.getPath() + " to " + copy);
    }
    written.put(copy.getName(), file.getLen());
    return rowCount(file);
  }

  /**
   * What changed since the plan.
   *
   * @param conflict why the partition must not be switched, or null
   * @param added files that arrived since, all of checkpoints their job has recorded (the commit is complete)
   */
  private record Check(String conflict, Map<String, FileStatus> added, Partition partition) {
    static Check conflict(String why) {
      return new Check(why, Map.of(), null);
    }
  }

  /**
   * Right before the switch: whether the partition is as planned, or only grew by complete commits. The check for
   * commits in flight comes last, right before the switch, on the partition as read here: a commit would have to
   * write its intent, move its files and update the partition between that check and the switch to be missed, and
   * even then its files are moved on ({@link MergeCleanup#moveStragglers}).
   */
  private Check check(Planned planned, Map<String, Long> listing) throws IOException {
    Partition fresh = fetch(planned.partition());
    if (fresh == null) {
      return Check.conflict("it was dropped");
    }
    if (!HivePaths.sameLocation(new Path(fresh.getSd().getLocation()), planned.location())) {
      return Check.conflict("its location changed to " + fresh.getSd().getLocation());
    }
    Map<String, FileStatus> added = new LinkedHashMap<>();
    Map<String, Long> seen = new HashMap<>();
    for (FileStatus file : cleanup.visibleFiles(planned.location())) {
      seen.put(file.getPath().getName(), file.getLen());
      if (!listing.containsKey(file.getPath().getName())) {
        added.put(file.getPath().getName(), file);
      }
    }
    for (Map.Entry<String, Long> file : listing.entrySet()) {
      if (!file.getValue().equals(seen.get(file.getKey()))) {
        return Check.conflict("file " + file.getKey() + " was removed or rewritten meanwhile");
      }
    }
    if (!added.isEmpty()) {
      Map<String, CommitTarget.JobState> jobs = HiveMaintenance.jobs(readTable());
      for (String name : added.keySet()) {
        if (!committed(name, jobs)) {
          return Check.conflict("file " + name + " arrived meanwhile, of no checkpoint its job has recorded");
        }
      }
      return new Check(null, added, fresh);
    }
    if (busyPartitions().contains(planned.name())) {
      return Check.conflict("a commit into it is in flight");
    }
    return new Check(null, Map.of(), fresh);
  }

  /** Whether a file is of a checkpoint its job has recorded as committed. */
  private static boolean committed(String name, Map<String, CommitTarget.JobState> jobs) {
    for (Map.Entry<String, CommitTarget.JobState> job : jobs.entrySet()) {
      OptionalLong checkpoint = StagingLayout.checkpointInName(JobId.of(job.getKey()), name);
      if (checkpoint.isPresent()) {
        OptionalLong watermark = job.getValue().committed();
        return watermark.isPresent() && checkpoint.getAsLong() <= watermark.getAsLong();
      }
    }
    return false;
  }

  private Table readTable() throws IOException {
    try {
      return client.getTable(table.database(), table.name());
    } catch (TException e) {
      throw new IOException("Cannot read table " + table + ": " + e.getMessage(), e);
    }
  }

  private void switchTo(Planned planned, Partition fresh, Path dir, Stats stats) throws IOException {
    try {
      Partition changed = fresh.deepCopy();
      changed.getSd().setLocation(dir.toString());
      Map<String, String> params = changed.getParameters() == null ? new HashMap<>()
          : new HashMap<>(changed.getParameters());
      params.put(HiveMaintenance.MERGED_FROM_KEY, planned.location().toString());
      // Exact as far as the merge knows; not marked accurate: a commit racing the switch may add files unseen.
      TableParameters.setExactStats(params, stats);
      params.remove(TableParameters.STATS_ACCURATE);
      changed.setParameters(params);
      client.alter_partitions(table.database(), table.name(), List.of(changed), TableParameters.keepStats());
    } catch (TException e) {
      throw new IOException("Cannot switch partition " + planned.name() + " of " + table + " to " + dir + ": "
          + e.getMessage(), e);
    }
  }

  private Partition fetch(Partition partition) throws IOException {
    try {
      List<Partition> found = client.getPartitionsByNames(table.database(), table.name(),
          List.of(name(partition)));
      return found.isEmpty() ? null : found.get(0);
    } catch (TException e) {
      throw new IOException("Cannot read partition " + name(partition) + " of " + table + ": " + e.getMessage(), e);
    }
  }

  private long rowCount(FileStatus file) throws IOException {
    try (ParquetFileReader reader = ParquetFileReader.open(
        org.apache.parquet.hadoop.util.HadoopInputFile.fromStatus(file, conf))) {
      return reader.getRecordCount();
    }
  }

  private static Map<String, Long> sizes(List<FileStatus> files) {
    Map<String, Long> sizes = new LinkedHashMap<>();
    files.forEach(f -> sizes.put(f.getPath().getName(), f.getLen()));
    return sizes;
  }

  private void deleteQuietly(Path dir) {
    try {
      fs.delete(dir, true);
    } catch (IOException e) {
      LOG.warn("Could not delete {}, a dropped merge's directory; a later round deletes it", dir, e);
    }
  }

  @Override
  public void close() {
    client.close();
  }
}
