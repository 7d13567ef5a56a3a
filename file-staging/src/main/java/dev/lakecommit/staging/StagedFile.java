package dev.lakecommit.staging;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.PartitionData;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

/**
 * One file a writer staged for a checkpoint: where it is and everything a table commit needs to add it without
 * reading it. Immutable; small (no data, only statistics).
 *
 * <p>The partition is kept twice, for the two kinds of committer: typed values ({@link #partition}, exact for
 * every transform, used by Iceberg) and the spec's path ({@link #partitionPath}, {@code k=v/...} with escaped
 * values, used for Hive partition directories and messages).
 *
 * @param path the file's full location, as written through the writer's {@code FileIO}
 * @param format the file format (Parquet for files staged by {@link StagingWriter})
 * @param specId the id of the partition spec the partition values belong to
 * @param partitionPath {@code PartitionSpec.partitionToPath} of the partition; empty when unpartitioned
 * @param partitionValues the partition tuple, one value per spec field in Iceberg's single-value serialization
 *     ({@link Conversions#toByteBuffer}); an element is null for a null partition value
 * @param recordCount rows in the file, {@code >= 0}
 * @param fileSizeInBytes the file's length, {@code >= 0}
 * @param metrics per-column statistics by field id
 * @param splitOffsets row-group start offsets, ascending; empty if unknown
 * @param content what the file holds: rows ({@link FileContent#DATA}), or rows to delete by position or by
 *     equality on {@code equalityFieldIds}
 * @param equalityFieldIds the field ids an equality delete file matches on; empty for other content
 */
public record StagedFile(
    String path,
    FileFormat format,
    int specId,
    String partitionPath,
    List<ByteBuffer> partitionValues,
    long recordCount,
    long fileSizeInBytes,
    ColumnMetrics metrics,
    List<Long> splitOffsets,
    FileContent content,
    List<Integer> equalityFieldIds) {

  public StagedFile {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(format, "format");
    Objects.requireNonNull(partitionPath, "partitionPath");
    Objects.requireNonNull(partitionValues, "partitionValues");
    Objects.requireNonNull(metrics, "metrics");
    Objects.requireNonNull(splitOffsets, "splitOffsets");
    Objects.requireNonNull(content, "content");
    equalityFieldIds = List.copyOf(Objects.requireNonNull(equalityFieldIds, "equalityFieldIds"));
    if ((content == FileContent.EQUALITY_DELETES) == equalityFieldIds.isEmpty()) {
      throw new IllegalArgumentException(
          String.format("Invalid staged file %s: %s with equality field ids %s (equality delete files need them,"
              + " other files have none)", path, content, equalityFieldIds));
    }
    if (path.isEmpty()) {
      throw new IllegalArgumentException("Invalid staged file path: empty");
    }
    if (recordCount < 0) {
      throw new IllegalArgumentException(
          String.format("Invalid record count of %s: %s (must be >= 0)", path, recordCount));
    }
    if (fileSizeInBytes < 0) {
      throw new IllegalArgumentException(
          String.format("Invalid file size of %s: %s (must be >= 0)", path, fileSizeInBytes));
    }
    List<ByteBuffer> values = new ArrayList<>(partitionValues.size());
    for (ByteBuffer value : partitionValues) {
      values.add(value == null ? null : ColumnMetrics.copyOf(value));
    }
    partitionValues = Collections.unmodifiableList(values);
    splitOffsets = List.copyOf(splitOffsets);
  }

  /** A staged data file. */
  public StagedFile(
      String path,
      FileFormat format,
      int specId,
      String partitionPath,
      List<ByteBuffer> partitionValues,
      long recordCount,
      long fileSizeInBytes,
      ColumnMetrics metrics,
      List<Long> splitOffsets) {
    this(path, format, specId, partitionPath, partitionValues, recordCount, fileSizeInBytes, metrics, splitOffsets,
        FileContent.DATA, List.of());
  }

  /**
   * The staged-file view of a data file written for {@code spec} (for example {@code DataWriter.toDataFile()}).
   *
   * @throws IllegalArgumentException if the file's spec id is not {@code spec}'s
   */
  public static StagedFile of(DataFile file, PartitionSpec spec) {
    return of(file, spec, FileContent.DATA, List.of());
  }

  /**
   * The staged-file view of a position or equality delete file written for {@code spec}.
   *
   * @throws IllegalArgumentException if the file's spec id is not {@code spec}'s, or it is a deletion vector
   *     (a blob inside a Puffin file, which a staged file cannot describe)
   */
  public static StagedFile of(DeleteFile file, PartitionSpec spec) {
    Objects.requireNonNull(file, "file");
    if (file.format() == FileFormat.PUFFIN) {
      throw new IllegalArgumentException("Deletion vectors cannot be staged: " + file.location());
    }
    List<Integer> ids = file.content() == FileContent.EQUALITY_DELETES ? file.equalityFieldIds() : List.of();
    return of(file, spec, file.content(), ids);
  }

  private static StagedFile of(ContentFile<?> file, PartitionSpec spec, FileContent content, List<Integer> ids) {
    Objects.requireNonNull(file, "file");
    Objects.requireNonNull(spec, "spec");
    if (file.specId() != spec.specId()) {
      throw new IllegalArgumentException(
          String.format("Spec id mismatch for %s: file has %s, spec has %s", file.location(), file.specId(),
              spec.specId()));
    }
    Types.StructType partitionType = spec.partitionType();
    List<ByteBuffer> values = new ArrayList<>(partitionType.fields().size());
    for (int i = 0; i < partitionType.fields().size(); i++) {
      Type type = partitionType.fields().get(i).type();
      Object value = file.partition().get(i, Object.class);
      values.add(value == null ? null : Conversions.toByteBuffer(type, value));
    }
    return new StagedFile(
        file.location(),
        file.format(),
        spec.specId(),
        spec.isUnpartitioned() ? "" : spec.partitionToPath(file.partition()),
        values,
        file.recordCount(),
        file.fileSizeInBytes(),
        ColumnMetrics.of(new org.apache.iceberg.Metrics(
            file.recordCount(),
            file.columnSizes(),
            file.valueCounts(),
            file.nullValueCounts(),
            file.nanValueCounts(),
            file.lowerBounds(),
            file.upperBounds())),
        file.splitOffsets() == null ? List.of() : file.splitOffsets(),
        content,
        ids);
  }

  /** Whether the file holds rows to delete rather than rows to add. */
  public boolean isDelete() {
    return content != FileContent.DATA;
  }

  /** The file name: the last segment of {@link #path}. */
  public String fileName() {
    return path.substring(path.lastIndexOf('/') + 1);
  }

  /**
   * The partition tuple for {@code spec}, in Iceberg's internal representation.
   *
   * @throws IllegalArgumentException if {@code spec} is not the spec this file was written for
   */
  public StructLike partition(PartitionSpec spec) {
    checkSpec(spec);
    Types.StructType partitionType = spec.partitionType();
    PartitionData data = new PartitionData(partitionType);
    for (int i = 0; i < partitionValues.size(); i++) {
      ByteBuffer value = partitionValues.get(i);
      data.set(i, value == null ? null : Conversions.fromByteBuffer(partitionType.fields().get(i).type(), value));
    }
    return data;
  }

  /**
   * The Iceberg data file to add in a table commit: path, format, partition, size, counts, column metrics and
   * split offsets, as the writer recorded them.
   *
   * @throws IllegalArgumentException if {@code spec} is not the spec this file was written for, or this is a
   *     delete file
   */
  public DataFile toDataFile(PartitionSpec spec) {
    if (isDelete()) {
      throw new IllegalArgumentException("Staged file " + path + " holds " + content + ", not data");
    }
    DataFiles.Builder builder =
        DataFiles.builder(spec)
            .withPath(path)
            .withFormat(format)
            .withFileSizeInBytes(fileSizeInBytes)
            .withMetrics(metrics.toMetrics(recordCount))
            .withSplitOffsets(splitOffsets.isEmpty() ? null : splitOffsets);
    if (spec.isPartitioned()) {
      builder.withPartition(partition(spec));
    } else {
      checkSpec(spec);
    }
    return builder.build();
  }

  /**
   * The Iceberg delete file to add in a row-delta commit, as the writer recorded it.
   *
   * @throws IllegalArgumentException if {@code spec} is not the spec this file was written for, or this is a
   *     data file
   */
  public DeleteFile toDeleteFile(PartitionSpec spec) {
    if (!isDelete()) {
      throw new IllegalArgumentException("Staged file " + path + " holds data, not deletes");
    }
    checkSpec(spec);
    FileMetadata.Builder builder = FileMetadata.deleteFileBuilder(spec);
    if (content == FileContent.EQUALITY_DELETES) {
      builder.ofEqualityDeletes(equalityFieldIds.stream().mapToInt(Integer::intValue).toArray());
    } else {
      builder.ofPositionDeletes();
    }
    builder
        .withPath(path)
        .withFormat(format)
        .withFileSizeInBytes(fileSizeInBytes)
        .withMetrics(metrics.toMetrics(recordCount))
        .withSplitOffsets(splitOffsets.isEmpty() ? null : splitOffsets);
    if (spec.isPartitioned()) {
      builder.withPartition(partition(spec));
    }
    return builder.build();
  }

  private void checkSpec(PartitionSpec spec) {
    Objects.requireNonNull(spec, "spec");
    if (spec.specId() != specId || spec.fields().size() != partitionValues.size()) {
      throw new IllegalArgumentException(
          String.format(
              "Staged file %s was written for partition spec %s with %s fields, not for spec %s with %s fields",
              path, specId, partitionValues.size(), spec.specId(), spec.fields().size()));
    }
  }

  @Override
  public String toString() {
    StringBuilder values = new StringBuilder("[");
    for (ByteBuffer value : partitionValues) {
      if (values.length() > 1) {
        values.append(", ");
      }
      values.append(value == null ? "null" : HexFormat.of().formatHex(ColumnMetrics.bytesOf(value)));
    }
    values.append(']');
    return "StagedFile{path=" + path + ", format=" + format + ", specId=" + specId + ", partitionPath="
        + partitionPath + ", partitionValues=" + values + ", recordCount=" + recordCount + ", fileSizeInBytes="
        + fileSizeInBytes + ", metrics=" + metrics + ", splitOffsets=" + splitOffsets
        + (isDelete() ? ", content=" + content + ", equalityFieldIds=" + equalityFieldIds : "") + "}";
  }
}
