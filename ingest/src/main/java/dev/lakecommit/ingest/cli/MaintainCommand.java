package dev.lakecommit.ingest.cli;

import dev.lakecommit.hive.HiveMaintenance;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.iceberg.Compaction;
import dev.lakecommit.iceberg.IcebergMaintenance;
import dev.lakecommit.iceberg.IcebergSink;
import dev.lakecommit.iceberg.MaintenanceLock;
import dev.lakecommit.iceberg.ManifestRewrite;
import dev.lakecommit.iceberg.OrphanFiles;
import dev.lakecommit.iceberg.SnapshotExpiry;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.apache.iceberg.data.Record;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code lakecommit maintain}: one round of table maintenance, each operation its own commit, safe while jobs
 * write the table and safe to run again after a crash (every step is planned from the table anew). Order:
 * manifest rewrite (so that compaction edits few manifests), compaction, snapshot expiry (which deletes the files
 * compaction replaced once no snapshot needs them), orphan removal; for Iceberg all under the table's maintenance lease ({@link MaintenanceLock}): while
 * another maintenance holds it, nothing is done (exit 3); it is renewed before each step. A Hive table:
 * {@code --compact} merges each partition's small files ({@link HiveMaintenance}), after deleting what the previous
 * round's merges replaced.
 */
@Command(name = "maintain", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Maintains an Iceberg table that jobs commit to every checkpoint: compacts small data files, "
        + "rewrites small manifests, expires old snapshots (keeping what every job's restart needs) and removes "
        + "orphan files (never the staged files of a checkpoint a live run may still commit). Each step is one "
        + "commit, safe while jobs run; run it again after a crash. --dry-run prints the plan and changes nothing.",
        "Hive tables (--target hive): --compact merges each partition's small files into new files and switches the "
            + "partition to them; the replaced files are deleted by the next run."})
public final class MaintainCommand implements Callable<Integer> {
  @Spec picocli.CommandLine.Model.CommandSpec spec;

  @Mixin TableOptions table;

  @Option(names = "--compact", description = "Bin-pack small data files per partition to the table's "
      + "write.target-file-size-bytes (Hive: merge them, see --target-file-size).")
  boolean compact;

  @Option(names = "--target-file-size", paramLabel = "SIZE", converter = WriteOptions.SizeConverter.class,
      description = "Hive: the size merged files aim at, e.g. 64m (default: the table parameter "
          + HiveMaintenance.TARGET_FILE_SIZE_KEY + ", else 128m); files below 3/4 of it are merged.")
  Long targetFileSize;

  @Option(names = "--min-age", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "Hive: files no job of the table wrote, and directories of crashed merges, are touched only "
          + "once older than this (default: 1h).")
  Duration minAge;

  @Option(names = "--keep-checkpoints", paramLabel = "N", description = "Do not compact files of the newest N "
      + "checkpoint commits (default: ${DEFAULT-VALUE}).")
  int keepCheckpoints = IcebergMaintenance.DEFAULT_KEEP_CHECKPOINTS;

  @Option(names = "--expire-older-than", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "Expire snapshots older than this (e.g. 7d, 12h); with --retain-last alone: all beyond the "
          + "newest N.")
  Duration expireOlderThan;

  @Option(names = "--retain-last", paramLabel = "N", description = "Keep at least the newest N snapshots of each "
      + "branch when expiring (default 1).")
  Integer retainLast;

  @Option(names = "--remove-orphans", description = "Delete files under the table referenced by no snapshot.")
  boolean removeOrphans;

  @Option(names = "--orphan-age", paramLabel = "DURATION", converter = DurationConverter.class,
      description = "Only orphans older than this (default: 3d); younger files may belong to commits in flight.")
  Duration orphanAge;

  @Option(names = "--rewrite-manifests", description = "Rewrite the current snapshot's small manifests, clustered "
      + "by partition, when there are at least --min-small-manifests of them or one lists deleted files; with "
      + "--compact, again after a compaction that committed.")
  boolean rewriteManifests;

  @Option(names = "--min-small-manifests", paramLabel = "N", description = "(default: ${DEFAULT-VALUE})")
  int minSmallManifests = IcebergMaintenance.DEFAULT_MIN_SMALL_MANIFESTS;

  private boolean compactionCommitted;

  @Option(names = "--dry-run", description = "Print what would be done; change nothing.")
  boolean dryRun;

  @Override
  public Integer call() throws Exception {
    boolean expire = expireOlderThan != null || retainLast != null;
    checkOptions(expire);
    PrintWriter out = spec.commandLine().getOut();
    if (table.target() == TableKind.HIVE) {
      merge(new HiveAccess(table).maintenance(), out);
      out.flush();
      return 0;
    }
    int exit = 0;
    try (IcebergSink<Record> sink = IcebergSink.forRecords(table.sinkConfig().build())) {
      IcebergMaintenance maintenance = sink.maintenance();
      out.printf("%s table %s%n", dryRun ? "Plan for" : "Maintaining", table.table());
      Optional<MaintenanceLock.Lease> lease = dryRun ? Optional.empty()
          : maintenance.lock(MaintenanceLock.DEFAULT_DURATION).tryAcquire("lakecommit maintain, "
              + RunEpoch.thisProcess());
      if (!dryRun && lease.isEmpty()) {
        out.printf("Another maintenance holds the table's lease (%s): nothing done; run again later%n",
            maintenance.lock(MaintenanceLock.DEFAULT_DURATION).holder().map(Object::toString).orElse("released"));
        out.flush();
        return LakecommitCommand.JOB_FAILED;
      }
      try {
        if (rewriteManifests) {
          manifests(maintenance, out);
        }
        if (compact && (!rewriteManifests || renewed(lease, out))) {
          exit = Math.max(exit, compact(maintenance, out));
          // the compaction's commit left its files as deleted entries in the manifests that listed them
          if (rewriteManifests && compactionCommitted && renewed(lease, out)) {
            manifests(maintenance, out);
          }
        }
        if (expire && renewed(lease, out)) {
          expire(maintenance, out);
        }
        if (removeOrphans && renewed(lease, out)) {
          orphans(maintenance, out);
        }
        if (lease.isPresent() && !lease.get().renew()) {
          exit = LakecommitCommand.JOB_FAILED;
        }
      } finally {
        lease.ifPresent(MaintenanceLock.Lease::close);
      }
    }
    out.flush();
    return exit;
  }

  private void checkOptions(boolean expire) {
    table.checkTableAndCatalog();
    if (table.target() == TableKind.HIVE) {
      table.metastoreUri();
      if (expire || removeOrphans || rewriteManifests || orphanAge != null) {
        throw new IllegalArgumentException("A Hive table has no snapshots, manifests or orphan listing: give "
            + "--compact (merging each partition's small files), with --keep-checkpoints, --target-file-size, "
            + "--min-age and --dry-run");
      }
      if (!compact) {
        throw new IllegalArgumentException("Nothing to do: give --compact");
      }
    } else if (targetFileSize != null || minAge != null) {
      throw new IllegalArgumentException("--target-file-size and --min-age are for --target hive; an Iceberg "
          + "table's compaction aims at its write.target-file-size-bytes");
    }
    if (targetFileSize != null && targetFileSize <= 0) {
      throw new IllegalArgumentException("Invalid --target-file-size: " + targetFileSize + " (must be > 0)");
    }
    if (minAge != null && minAge.isNegative()) {
      throw new IllegalArgumentException("Invalid --min-age: " + minAge + " (must be >= 0)");
    }
    if (!compact && !expire && !removeOrphans && !rewriteManifests) {
      throw new IllegalArgumentException("Nothing to do: give --compact, --rewrite-manifests, --expire-older-than "
          + "and/or --retain-last, or --remove-orphans");
    }
    if (keepCheckpoints < 0) {
      throw new IllegalArgumentException("Invalid --keep-checkpoints: " + keepCheckpoints + " (must be >= 0)");
    }
    if (retainLast != null && retainLast < 1) {
      throw new IllegalArgumentException("Invalid --retain-last: " + retainLast + " (must be >= 1)");
    }
    if (expireOlderThan != null && expireOlderThan.isNegative()) {
      throw new IllegalArgumentException("Invalid --expire-older-than: " + expireOlderThan + " (must be >= 0)");
    }
    if (orphanAge != null && (!removeOrphans || orphanAge.isNegative())) {
      throw new IllegalArgumentException(orphanAge.isNegative() ? "Invalid --orphan-age: " + orphanAge
          + " (must be >= 0)" : "--orphan-age needs --remove-orphans");
    }
    if (minSmallManifests < 2) {
      throw new IllegalArgumentException("Invalid --min-small-manifests: " + minSmallManifests + " (must be >= 2)");
    }
  }

  /** {@code --compact} of a Hive table: one merge round (or its plan). */
  private void merge(HiveMaintenance maintenance, PrintWriter out) throws java.io.IOException {
    HiveMaintenance.Options options = HiveMaintenance.Options.defaults().keepCheckpoints(keepCheckpoints)
        .targetFileSize(targetFileSize == null ? 0 : targetFileSize)
        .minAge(minAge == null ? HiveMaintenance.DEFAULT_MIN_AGE : minAge);
    out.printf("%s Hive table %s%n", dryRun ? "Plan for" : "Maintaining", table.table());
    out.flush();
    HiveMaintenance.Plan plan = maintenance.plan(options);
    out.printf("merge: %d partition(s) with small files to merge (target %d bytes; newest %d checkpoint(s) left "
        + "alone); %d file(s) replaced by earlier merges to delete first%n", plan.partitions().size(),
        plan.targetFileSize(), keepCheckpoints, plan.pendingDeletes());
    for (HiveMaintenance.PartitionPlan partition : plan.partitions()) {
      out.printf("  partition %s: %d files, %d bytes -> %d file(s); %d other file(s) copied%n",
          partition.partition(), partition.filesMerged(), partition.bytesMerged(), partition.bins(),
          partition.filesCopied());
    }
    plan.busy().forEach(p -> out.printf("  partition %s skipped: a commit into it is in flight%n", p));
    if (dryRun) {
      return;
    }
    HiveMaintenance.Result result = maintenance.merge(options);
    out.printf("  merged %d partition(s): %d files into %d; deleted %d file(s) earlier merges replaced and %d "
        + "leftover director(ies)%n", result.merged(), result.filesMerged(), result.filesWritten(),
        result.filesDeleted(), result.leftoversDeleted());
    result.dropped().forEach((partition, reason) -> out.printf("  partition %s dropped (run again): %s%n", partition,
        reason));
  }

  /** Whether the next step may run: no lease (dry run), or the lease renewed; says so when it was lost. */
  private static boolean renewed(Optional<MaintenanceLock.Lease> lease, PrintWriter out) {
    if (lease.isEmpty() || lease.get().renew()) {
      return true;
    }
    out.println("The table's maintenance lease was taken over (it expired): the remaining steps are not run");
    return false;
  }

  private int compact(IcebergMaintenance maintenance, PrintWriter out) throws java.io.IOException {
    Compaction.Plan plan = maintenance.planCompaction(keepCheckpoints);
    out.printf("compaction: %d small file(s) in %d bin(s) (target %d bytes; newest %d checkpoint(s) left alone)%n",
        plan.files(), plan.bins().size(), plan.targetFileSize(), keepCheckpoints);
    for (Compaction.Bin bin : plan.bins()) {
      out.printf("  partition %s: %d files, %d bytes, %d rows -> 1 file%n",
          bin.partition().isEmpty() ? "(unpartitioned)" : bin.partition(), bin.tasks().size(), bin.bytes(),
          bin.records());
    }
    if (dryRun) {
      return 0;
    }
    Compaction.Result result = maintenance.compact(keepCheckpoints);
    switch (result.outcome()) {
      case COMMITTED -> {
        out.printf("  committed snapshot %d: %d files rewritten into %d%n", result.snapshotId(),
            result.filesRewritten(), result.filesAdded());
        compactionCommitted = true;
      }
      case NOTHING_TO_DO -> out.println("  nothing to compact");
      case DROPPED_CONFLICT -> out.printf("  dropped (a concurrent change conflicted; run again): %s%n",
          result.reason());
      case UNKNOWN -> {
        out.printf("  outcome unknown (%s); run again: a compaction that landed is not repeated%n", result.reason());
        return LakecommitCommand.JOB_FAILED;
      }
      default -> throw new IllegalStateException("Unknown outcome " + result.outcome());
    }
    return 0;
  }

  private void manifests(IcebergMaintenance maintenance, PrintWriter out) {
    ManifestRewrite.Plan plan = maintenance.planManifestRewrite(minSmallManifests);
    out.printf("manifest rewrite: %d small manifest(s) to rewrite (below %d bytes; at least %d needed, or one"
        + " listing deleted files)%n", plan.manifests().size(), plan.targetBytes(), minSmallManifests);
    if (!dryRun && !plan.manifests().isEmpty()) {
      ManifestRewrite.Result result = maintenance.rewriteManifests(minSmallManifests);
      out.println(result.dropped() ? "  dropped (a concurrent change conflicted; run again): " + result.reason()
          : "  rewrote " + result.rewritten() + " manifest(s)");
    }
  }

  private void expire(IcebergMaintenance maintenance, PrintWriter out) {
    Instant olderThan = Instant.now().minus(expireOlderThan == null ? Duration.ZERO : expireOlderThan);
    int retain = retainLast == null ? 1 : retainLast;
    SnapshotExpiry.Plan plan = maintenance.planExpiry(olderThan, retain);
    out.printf("snapshot expiry: %d snapshot(s) older than %s beyond the newest %d%n", plan.expire().size(),
        plan.cutoff(), retain);
    plan.expire().forEach(id -> out.printf("  snapshot %d%n", id));
    plan.protectedBy().forEach((job, snapshot) -> out.printf("  kept history down to snapshot %d: job %s has no "
        + "watermark property, its restart reads the history%n", snapshot, job));
    if (!dryRun && !plan.expire().isEmpty()) {
      SnapshotExpiry.Result result = maintenance.expireSnapshots(olderThan, retain);
      out.printf("  expired %d snapshot(s), deleted %d file(s) only they referenced%n", result.expired().size(),
          result.filesDeleted());
    }
  }

  private void orphans(IcebergMaintenance maintenance, PrintWriter out) throws java.io.IOException {
    Duration age = orphanAge == null ? IcebergMaintenance.DEFAULT_ORPHAN_AGE : orphanAge;
    OrphanFiles.Plan plan = maintenance.planOrphans(age);
    out.printf("orphan removal: %d orphan file(s) older than %s of %d listed; %d unreferenced staged file(s) of "
        + "checkpoints a run may still commit kept%n", plan.orphans().size(), age, plan.listed(),
        plan.keptStaged().size());
    plan.orphans().forEach(location -> out.printf("  %s%n", location));
    if (!dryRun && !plan.orphans().isEmpty()) {
      out.printf("  deleted %d file(s)%n", maintenance.removeOrphans(age).deleted().size());
    }
  }
}
