package dev.lakecommit.iceberg;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One maintenance round under the table's lease: take it (or skip the round if another holds it), run the steps
 * the options ask for — manifest rewrite, compaction, snapshot expiry, orphan removal, each its own commit —
 * renewing the lease before each, and release it. A step that fails ends the round (the lease is released) with
 * its exception; a lost lease ends it before the next step.
 */
public final class MaintenanceRound {
  private static final Logger LOG = LoggerFactory.getLogger(MaintenanceRound.class);

  private MaintenanceRound() {}

  /**
   * How a round went.
   *
   * @param heldBy the lease's holder when the round was skipped because another held it; empty if it ran
   * @param steps what each step that ran did, in order, for logs and the tool's output
   * @param leaseLost whether the round stopped early because its lease was taken over
   */
  public record Result(Optional<MaintenanceLock.Holder> heldBy, List<String> steps, boolean leaseLost,
      Compaction.Result compaction) {
    public boolean ran() {
      return heldBy.isEmpty();
    }
  }

  static Result run(IcebergMaintenance maintenance, MaintenanceLock lock, MaintenanceOptions options, String who)
      throws IOException {
    Optional<MaintenanceLock.Lease> taken = lock.tryAcquire(who);
    if (taken.isEmpty()) {
      Optional<MaintenanceLock.Holder> holder = lock.holder();
      LOG.info("Skipped a maintenance round of {}: {} holds the lease", maintenance,
          holder.map(Object::toString).orElse("another round"));
      return new Result(Optional.of(holder.orElse(new MaintenanceLock.Holder("another round", Instant.EPOCH))),
          List.of(), false, null);
    }
    List<String> steps = new ArrayList<>();
    Compaction.Result compaction = null;
    try (MaintenanceLock.Lease lease = taken.get()) {
      // Manifests first: a compaction removes its files from every manifest that lists them, in each of its
      // commit attempts, so it commits fastest (and wins its races with checkpoint commits) over few manifests.
      if (options.minSmallManifests() > 0) {
        ManifestRewrite.Result manifests = maintenance.rewriteManifests(options.minSmallManifests());
        steps.add("manifest rewrite: " + manifests.rewritten() + (manifests.dropped() ? " (dropped)" : ""));
      }
      if (options.keepCheckpoints() > 0) {
        if (!steps.isEmpty() && !lease.renew()) {
          return lost(steps, compaction);
        }
        compaction = maintenance.compact(options.keepCheckpoints());
        steps.add("compaction " + compaction.outcome() + " (" + compaction.filesRewritten() + " files into "
            + compaction.filesAdded() + ", " + compaction.commitAttempts() + " commit attempts, "
            + compaction.lostRaces() + " lost to concurrent commits)");
        // The compaction's commit left the manifests that listed its files carrying them as deleted entries, which
        // every scan would read until a rewrite: one now, so that the table's readers see live entries only.
        if (options.minSmallManifests() > 0 && compaction.outcome() == Compaction.Outcome.COMMITTED) {
          if (!lease.renew()) {
            return lost(steps, compaction);
          }
          ManifestRewrite.Result tidy = maintenance.rewriteManifests(options.minSmallManifests());
          steps.add("manifest rewrite after compaction: " + tidy.rewritten() + (tidy.dropped() ? " (dropped)" : ""));
        }
      }
      if (options.retainLast() > 0) {
        if (!lease.renew()) {
          return lost(steps, compaction);
        }
        SnapshotExpiry.Result expiry = maintenance.expireSnapshots(Instant.now().minus(options.expireOlderThan()),
            options.retainLast());
        steps.add("expiry: " + expiry.expired().size() + " snapshots, " + expiry.filesDeleted() + " files");
      }
      if (options.orphanRemoval().isPresent()) {
        if (!lease.renew()) {
          return lost(steps, compaction);
        }
        OrphanFiles.Result orphans = maintenance.removeOrphans(options.orphanRemoval().get());
        steps.add("orphans: " + orphans.deleted().size() + " deleted");
      }
    }
    LOG.info("Maintenance round of {} by {}: {}", maintenance, who, String.join("; ", steps));
    return new Result(Optional.empty(), List.copyOf(steps), false, compaction);
  }

  private static Result lost(List<String> steps, Compaction.Result compaction) {
    return new Result(Optional.empty(), List.copyOf(steps), true, compaction);
  }
}
