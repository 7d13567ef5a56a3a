package dev.lakecommit.iceberg;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.PendingUpdate;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.exceptions.CommitFailedException;

/**
 * Commits of maintenance operations (compaction, manifest rewrite) to a table that checkpoint commits keep
 * changing. Such a commit has nothing to fear from a concurrent append — Iceberg re-applies it on the new metadata,
 * and its validation fails only on a real conflict ({@code ValidationException}: the operation is dropped) — but
 * every catalog attempt is a race with the next checkpoint commit. With the table's settings (4 retries; manifests
 * merged once there are 100) a job committing every few tens of milliseconds won every race against a compaction:
 * each re-apply merged the job's new manifests again, so it took longer than the gap between two checkpoint
 * commits, and the compaction, having only lost races, was dropped as if it conflicted. The next round had more
 * files and manifests, its attempts took longer still, and the table was never compacted again (#18, the
 * 1,000-checkpoint benchmark).
 *
 * <p>So a maintenance operation runs with settings of its own ({@link #SETTINGS}): no manifest merging (the
 * manifest rewrite step clusters manifests instead), so that a re-apply only adds what the last attempt missed and
 * takes about as long as a checkpoint commit; and many more, shorter-spaced retries of lost races, bounded in time.
 * They are Iceberg's own retries — one retry loop, which re-applies with the work of earlier attempts cached. The
 * settings are seen by the operation only (it reads them when it is created); they are never written to the table.
 *
 * <p>A checkpoint commit is never held up for longer than one of its own attempts: each maintenance snapshot that
 * lands makes at most the checkpoint attempt in flight re-apply its append.
 */
final class MaintenanceCommits {
  /** The table settings a maintenance operation runs with: up to 2 minutes of retries, no manifest merging. */
  static final Map<String, String> SETTINGS = Map.of(
      TableProperties.COMMIT_NUM_RETRIES, "200",
      TableProperties.COMMIT_MIN_RETRY_WAIT_MS, "10",
      TableProperties.COMMIT_MAX_RETRY_WAIT_MS, "500",
      TableProperties.COMMIT_TOTAL_RETRY_TIME_MS, "120000",
      TableProperties.MANIFEST_MERGE_ENABLED, "false");

  private MaintenanceCommits() {}

  /** How many catalog attempts a commit took, and how many of them lost the race to another commit. */
  record Attempts(int attempts, int lostRaces) {}

  /**
   * Commits what {@code update} builds on the table as {@code load} reads it from the catalog now (a table object
   * read long ago may not refresh any more: a Hadoop table deletes metadata files beyond
   * {@code write.metadata.previous-versions-max} and refreshes from its own version), with {@link #SETTINGS}.
   *
   * @throws CommitFailedException when races were still lost after the retries: nothing committed
   * @throws org.apache.iceberg.exceptions.ValidationException on a real conflict: nothing committed, not retried
   */
  static Attempts commit(Supplier<Table> load, Function<Table, PendingUpdate<?>> update) {
    Table table = load.get();
    MaintenanceOperations ops = new MaintenanceOperations(((HasTableOperations) table).operations());
    update.apply(new BaseTable(ops, table.name())).commit();
    return new Attempts(ops.attempts, ops.lostRaces);
  }

  /**
   * The table's operations, whose metadata shows {@link #SETTINGS} until the first refresh: an operation reads its
   * settings when it is created, and re-reads the metadata it commits on (a refresh) before every attempt. Counts
   * the catalog attempts, and refuses to commit metadata that would carry the settings into the table.
   */
  private static final class MaintenanceOperations extends ForwardingTableOperations {
    private boolean refreshed;
    private int attempts;
    private int lostRaces;

    MaintenanceOperations(TableOperations delegate) {
      super(delegate);
    }

    @Override
    public TableMetadata current() {
      TableMetadata current = super.current();
      if (refreshed || current == null) {
        return current;
      }
      Map<String, String> properties = new HashMap<>(current.properties());
      properties.putAll(SETTINGS);
      return TableMetadata.buildFrom(current).setProperties(properties).build();
    }

    @Override
    public TableMetadata refresh() {
      refreshed = true;
      return super.refresh();
    }

    @Override
    public void commit(TableMetadata base, TableMetadata metadata) {
      TableMetadata real = super.current();
      for (String key : SETTINGS.keySet()) {
        if (real != null && !Objects.equals(real.properties().get(key), metadata.properties().get(key))) {
          throw new IllegalStateException("Maintenance commit of " + metadataFileLocation("") + " would change "
              + "table property " + key + " (its own setting); not committed");
        }
      }
      attempts++;
      try {
        super.commit(base, metadata);
      } catch (CommitFailedException e) {
        lostRaces++;
        throw e;
      }
    }
  }
}
