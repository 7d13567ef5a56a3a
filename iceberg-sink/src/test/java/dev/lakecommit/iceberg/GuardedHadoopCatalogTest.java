package dev.lakecommit.iceberg;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.LongStream;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.exceptions.ValidationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Hadoop table that deletes old metadata files, committed to by an attempt that began more than
 * {@code previous-versions-max} commits ago: Iceberg's own catalog forks the history and loses the commits in
 * between; the guarded one refuses the attempt, reads the table again and commits on top of them.
 */
class GuardedHadoopCatalogTest {
  private static final int PREVIOUS_VERSIONS = 2;
  private static final int LATER_COMMITS = PREVIOUS_VERSIONS + 3;

  @TempDir Path dir;

  @Test
  void aCommitAttemptThatOutlivesTheKeptVersionsCommitsOnTopOfTheCommitsMeanwhile() {
    Catalog catalog = catalog(true);
    Table table = create(catalog);

    TableOperations ops = appendWhileOthersCommit(catalog, table);

    Map<Long, Integer> counts = TestTables.keyCounts(catalog.loadTable(TestTables.IDENT));
    assertThat(counts).hasSize(LATER_COMMITS * 10 + 10).containsKey(1000L)
        .allSatisfy((key, count) -> assertThat(count).isOne());
    assertThat(((GuardedHadoopCatalog.Operations) ops).reloads()).isOne();
  }

  /** What the guard prevents, shown on Iceberg's own Hadoop catalog: the test above fails without it. */
  @Test
  void withoutTheGuardTheCommitForksTheHistory() {
    Catalog catalog = catalog(false);
    Table table = create(catalog);

    appendWhileOthersCommit(catalog, table);

    // The version hint names the late attempt's "version 2": every commit made meanwhile is gone from the table.
    assertThat(TestTables.keyCounts(catalog.loadTable(TestTables.IDENT))).containsOnlyKeys(
        LongStream.range(1000, 1010).boxed().toList());
  }

  /**
   * Appends keys 1000..1009 to {@code table}; its first catalog attempt, after the append was applied to the table
   * as refreshed, waits for {@link #LATER_COMMITS} commits through other table objects (as a slow attempt of a busy
   * table does). Returns the table's operations.
   */
  private static TableOperations appendWhileOthersCommit(Catalog catalog, Table table) {
    TableOperations ops = ((HasTableOperations) table).operations();
    AtomicBoolean first = new AtomicBoolean(true);
    TableOperations slow = new ForwardingTableOperations(ops) {
      @Override
      public void commit(TableMetadata base, TableMetadata metadata) {
        if (first.getAndSet(false)) {
          for (int i = 0; i < LATER_COMMITS; i++) {
            Table other = catalog.loadTable(TestTables.IDENT);
            other.newAppend().appendFile(TestTables.dataFile(other, i * 10L, i * 10L + 10)).commit();
          }
        }
        super.commit(base, metadata);
      }
    };
    new BaseTable(slow, table.name()).newAppend().appendFile(TestTables.dataFile(table, 1000, 1010)).commit();
    return ops;
  }

  /**
   * The attempt passes the check before its commit, then waits for the rename lock while more than
   * {@code previous-versions-max} commits land (a maintenance commit behind a busy job's checkpoint commits, seen
   * under load): the lock's own check refuses it, and it commits on top of them.
   */
  @Test
  void aCommitAttemptThatWaitsForTheLockWhileManyCommitsLandCommitsOnTopOfThem() {
    AtomicReference<Runnable> beforeLock = new AtomicReference<>();
    GuardedHadoopCatalog catalog = guardedCatalog(true, beforeLock);
    Table table = create(catalog);
    beforeLock.set(() -> commitOthers(catalog));

    table.newAppend().appendFile(TestTables.dataFile(table, 1000, 1010)).commit();

    assertThat(TestTables.keyCounts(catalog.loadTable(TestTables.IDENT))).hasSize(LATER_COMMITS * 10 + 10)
        .containsKey(1000L).allSatisfy((key, count) -> assertThat(count).isOne());
  }

  /** The same without the lock's version check: the late rename forks the history (the test above fails). */
  @Test
  void withoutTheLockCheckALateRenameForksTheHistory() {
    AtomicReference<Runnable> beforeLock = new AtomicReference<>();
    GuardedHadoopCatalog catalog = guardedCatalog(false, beforeLock);
    Table table = create(catalog);
    beforeLock.set(() -> commitOthers(catalog));

    table.newAppend().appendFile(TestTables.dataFile(table, 1000, 1010)).commit();

    assertThat(TestTables.keyCounts(catalog.loadTable(TestTables.IDENT))).containsOnlyKeys(
        LongStream.range(1000, 1010).boxed().toList());
  }

  private static void commitOthers(Catalog catalog) {
    for (int i = 0; i < LATER_COMMITS; i++) {
      Table other = catalog.loadTable(TestTables.IDENT);
      other.newAppend().appendFile(TestTables.dataFile(other, i * 10L, i * 10L + 10)).commit();
    }
  }

  private GuardedHadoopCatalog guardedCatalog(boolean checkVersions, AtomicReference<Runnable> beforeLock) {
    GuardedHadoopCatalog catalog = new GuardedHadoopCatalog();
    catalog.setConf(new Configuration());
    catalog.initialize("hadoop", Map.of("warehouse", dir.resolve("warehouse").toUri().toString()));
    HadoopCommitLock.Options options = HadoopCommitLock.Options.ALL.withBeforeAcquire(entity -> {
      Runnable once = beforeLock.getAndSet(null);
      if (once != null) {
        once.run();
      }
    });
    catalog.withCommitLock(checkVersions ? options : options.withoutVersionCheck());
    return catalog;
  }

  @Test
  void aTableObjectWhoseVersionIsGoneRefreshes() {
    Catalog catalog = catalog(true);
    Table stale = create(catalog);
    Table unguarded = catalog(false).loadTable(TestTables.IDENT);
    for (int i = 0; i < LATER_COMMITS; i++) {
      Table table = catalog.loadTable(TestTables.IDENT);
      table.newAppend().appendFile(TestTables.dataFile(table, i * 10L, i * 10L + 10)).commit();
    }

    assertThatThrownBy(unguarded::refresh).isInstanceOf(ValidationException.class).hasMessageContaining("is missing");
    assertThat(TestTables.keyCounts(stale)).hasSize(LATER_COMMITS * 10);
  }

  @Test
  void onlyHadoopCatalogsAreReplaced() {
    assertThat(GuardedHadoopCatalog.substitute(Map.of("type", "hadoop", "warehouse", "w")))
        .containsEntry("catalog-impl", GuardedHadoopCatalog.class.getName()).doesNotContainKey("type")
        .containsEntry("warehouse", "w");
    assertThat(GuardedHadoopCatalog.substitute(Map.of("catalog-impl", "org.apache.iceberg.hadoop.HadoopCatalog")))
        .containsEntry("catalog-impl", GuardedHadoopCatalog.class.getName());
    Map<String, String> jdbc = Map.of("type", "jdbc", "uri", "jdbc:sqlite:x");
    assertThat(GuardedHadoopCatalog.substitute(jdbc)).isSameAs(jdbc);
  }

  private Catalog catalog(boolean guarded) {
    Map<String, String> properties = new HashMap<>(Map.of("type", "hadoop",
        "warehouse", dir.resolve("warehouse").toUri().toString()));
    return CatalogUtil.buildIcebergCatalog("hadoop",
        guarded ? GuardedHadoopCatalog.substitute(properties) : properties, new Configuration());
  }

  private static Table create(Catalog catalog) {
    Table table = catalog.createTable(TestTables.IDENT, TestTables.SCHEMA, PartitionSpec.unpartitioned(), Map.of(
        "format-version", "2", TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, "true",
        TableProperties.METADATA_PREVIOUS_VERSIONS_MAX, Integer.toString(PREVIOUS_VERSIONS)));
    table.currentSnapshot();
    return table;
  }
}
