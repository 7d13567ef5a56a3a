package dev.lakecommit.bench;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.iceberg.HadoopConfs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.SnapshotSummary;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;

/**
 * Checks, after each measured commit and outside the measurement, that the variant committed what it should:
 * the snapshot count, every file and row, and for Lakecommit the commit identity and the appended manifests. A
 * variant that silently committed less would otherwise look fast.
 */
final class CommitChecks {
  private CommitChecks() {}

  /** What a variant's commit must have produced, besides all files and rows. */
  record Expected(int snapshots, boolean lakecommit, int appendedManifests) {
    static Expected lakecommit(int writerManifests) {
      return new Expected(1, true, writerManifests);
    }

    static Expected lakecommitAddedFiles() {
      return new Expected(1, true, -1);
    }

    static Expected snapshots(int count) {
      return new Expected(count, false, -1);
    }
  }

  static Catalog catalog(Map<String, String> properties) {
    return CatalogUtil.buildIcebergCatalog("bench", properties, HadoopConfs.from(properties));
  }

  /** @throws IllegalStateException naming what differs */
  static void check(Table table, Expected expected, int files, long records) {
    Snapshot head = table.currentSnapshot();
    int snapshots = 0;
    for (Snapshot ignored : table.snapshots()) {
      snapshots++;
    }
    Map<String, String> summary = head == null ? Map.of() : head.summary();
    long totalFiles = Long.parseLong(summary.getOrDefault(SnapshotSummary.TOTAL_DATA_FILES_PROP, "-1"));
    long totalRecords = Long.parseLong(summary.getOrDefault(SnapshotSummary.TOTAL_RECORDS_PROP, "-1"));
    expect(snapshots == expected.snapshots(), "snapshots", snapshots, expected.snapshots(), table);
    expect(totalFiles == files, "data files", totalFiles, files, table);
    expect(totalRecords == records, "records", totalRecords, records, table);
    if (expected.lakecommit()) {
      JobId job = JobId.of(summary.getOrDefault(CommitId.JOB_ID_KEY, "missing"));
      String watermark = table.properties().get(CommitId.watermarkKey(job));
      expect("1".equals(watermark), "watermark", watermark, 1, table);
    }
    if (expected.appendedManifests() >= 0) {
      int manifests = head.dataManifests(table.io()).size();
      expect(manifests == expected.appendedManifests(), "manifests", manifests, expected.appendedManifests(),
          table);
    }
  }

  /** Reads every row back with Iceberg's generic reader: the committed files are real and complete. */
  static void readBack(Table table, long records) {
    long rows = 0;
    try (CloseableIterable<Record> all = IcebergGenerics.read(table).build()) {
      for (Record ignored : all) {
        rows++;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read table " + table.name() + " back", e);
    }
    expect(rows == records, "rows read back", rows, records, table);
  }

  private static void expect(boolean condition, String what, Object actual, Object wanted, Table table) {
    if (!condition) {
      throw new IllegalStateException(
          String.format("Table %s has %s %s after the commit, expected %s", table.name(), what, actual, wanted));
    }
  }
}
