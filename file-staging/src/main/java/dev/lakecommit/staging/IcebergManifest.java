package dev.lakecommit.staging;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.iceberg.GenericPartitionFieldSummary;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;

/**
 * An Iceberg manifest that a writer wrote for the files it staged in one checkpoint, so that a committer can
 * {@code AppendFiles.appendManifest} it instead of adding every file. Holds the manifest's description (what a
 * manifest list stores: path, length, spec, counts, partition summaries), never its entries.
 *
 * <p>The manifest holds only added data files and no snapshot id or sequence number: both are assigned by the
 * commit that appends it (on format v2+ without rewriting the manifest).
 *
 * @param path the manifest file's location
 * @param length its length in bytes
 * @param specId the partition spec of its entries
 * @param addedFilesCount data files in it
 * @param addedRowsCount rows in those files
 * @param partitions one summary per partition field
 */
public record IcebergManifest(
    String path,
    long length,
    int specId,
    int addedFilesCount,
    long addedRowsCount,
    List<PartitionSummary> partitions) {

  public IcebergManifest {
    Objects.requireNonNull(path, "path");
    partitions = List.copyOf(Objects.requireNonNull(partitions, "partitions"));
    if (length < 0 || addedFilesCount < 0 || addedRowsCount < 0) {
      throw new IllegalArgumentException(
          String.format("Invalid manifest %s: length %s, files %s, rows %s (must be >= 0)",
              path, length, addedFilesCount, addedRowsCount));
    }
  }

  /**
   * Describes a manifest written with {@code ManifestFiles.write(.., snapshotId null)}.
   *
   * @throws IllegalArgumentException if it has existing or deleted entries, or delete files
   */
  public static IcebergManifest of(ManifestFile manifest) {
    Objects.requireNonNull(manifest, "manifest");
    if (manifest.content() != ManifestContent.DATA || manifest.hasExistingFiles() || manifest.hasDeletedFiles()) {
      throw new IllegalArgumentException(
          String.format("Invalid staged manifest %s: must hold only added data files", manifest.path()));
    }
    List<PartitionSummary> summaries = new ArrayList<>();
    if (manifest.partitions() != null) {
      for (ManifestFile.PartitionFieldSummary summary : manifest.partitions()) {
        summaries.add(
            new PartitionSummary(
                summary.containsNull(), summary.containsNaN(), summary.lowerBound(), summary.upperBound()));
      }
    }
    return new IcebergManifest(
        manifest.path(), manifest.length(), manifest.partitionSpecId(), manifest.addedFilesCount(),
        manifest.addedRowsCount(), summaries);
  }

  /** The manifest, ready for {@code appendManifest} (no snapshot id, unassigned sequence numbers). */
  public ManifestFile manifestFile() {
    return new Description(this);
  }

  /**
   * The summary of one partition field over the manifest's files.
   *
   * @param containsNull some file has a null value
   * @param containsNaN some file has a NaN value; null if unknown
   * @param lowerBound the smallest value (single-value serialization), null if all null
   * @param upperBound the largest value, null if all null
   */
  public record PartitionSummary(
      boolean containsNull, Boolean containsNaN, ByteBuffer lowerBound, ByteBuffer upperBound) {
    public PartitionSummary {
      lowerBound = lowerBound == null ? null : ColumnMetrics.copyOf(lowerBound);
      upperBound = upperBound == null ? null : ColumnMetrics.copyOf(upperBound);
    }

    /** As Iceberg's manifest list stores it; an unknown NaN flag is taken as "may contain NaN". */
    ManifestFile.PartitionFieldSummary toIceberg() {
      return new GenericPartitionFieldSummary(
          containsNull, containsNaN == null || containsNaN,
          lowerBound == null ? null : ColumnMetrics.copyOf(lowerBound),
          upperBound == null ? null : ColumnMetrics.copyOf(upperBound));
    }
  }

  private static final class Description implements ManifestFile {
    private static final long UNASSIGNED_SEQUENCE_NUMBER = -1L;
    private final IcebergManifest manifest;

    Description(IcebergManifest manifest) {
      this.manifest = manifest;
    }

    @Override
    public String path() {
      return manifest.path();
    }

    @Override
    public long length() {
      return manifest.length();
    }

    @Override
    public int partitionSpecId() {
      return manifest.specId();
    }

    @Override
    public ManifestContent content() {
      return ManifestContent.DATA;
    }

    @Override
    public long sequenceNumber() {
      return UNASSIGNED_SEQUENCE_NUMBER;
    }

    @Override
    public long minSequenceNumber() {
      return UNASSIGNED_SEQUENCE_NUMBER;
    }

    @Override
    public Long snapshotId() {
      return null;
    }

    @Override
    public Integer addedFilesCount() {
      return manifest.addedFilesCount();
    }

    @Override
    public Long addedRowsCount() {
      return manifest.addedRowsCount();
    }

    @Override
    public Integer existingFilesCount() {
      return 0;
    }

    @Override
    public Long existingRowsCount() {
      return 0L;
    }

    @Override
    public Integer deletedFilesCount() {
      return 0;
    }

    @Override
    public Long deletedRowsCount() {
      return 0L;
    }

    @Override
    public List<PartitionFieldSummary> partitions() {
      return manifest.partitions().stream().map(PartitionSummary::toIceberg).toList();
    }

    @Override
    public ByteBuffer keyMetadata() {
      return null;
    }

    @Override
    public ManifestFile copy() {
      return this;
    }

    @Override
    public String toString() {
      return "ManifestFile{" + manifest + "}";
    }
  }
}
