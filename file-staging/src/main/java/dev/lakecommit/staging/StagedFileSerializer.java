package dev.lakecommit.staging;

import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.VersionedSerialization;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;

/**
 * Serializer of {@link StagedFile}. Version 1 (data files only): path, format name, spec id, partition path,
 * partition values (count, then each length-prefixed or -1 for null), record count, file size, the four count
 * maps and the two bound maps of the column metrics (size, then entries by ascending field id), split offsets
 * (count, values). Version 2 adds the content kind (Iceberg's {@code FileContent} id: 0 data, 1 position deletes,
 * 2 equality deletes) and the equality field ids (count, values). Version 1 bytes read as data files.
 */
public final class StagedFileSerializer implements SimpleVersionedSerializer<StagedFile> {
  private static final int VERSION = 2;

  @Override
  public int version() {
    return VERSION;
  }

  @Override
  public byte[] serialize(StagedFile file) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(512);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      SerializationUtil.writeString(out, file.path());
      SerializationUtil.writeString(out, file.format().name());
      out.writeInt(file.specId());
      SerializationUtil.writeString(out, file.partitionPath());
      out.writeInt(file.partitionValues().size());
      for (ByteBuffer value : file.partitionValues()) {
        SerializationUtil.writeNullableBuffer(out, value);
      }
      out.writeLong(file.recordCount());
      out.writeLong(file.fileSizeInBytes());
      ColumnMetrics metrics = file.metrics();
      SerializationUtil.writeCounts(out, metrics.columnSizes());
      SerializationUtil.writeCounts(out, metrics.valueCounts());
      SerializationUtil.writeCounts(out, metrics.nullValueCounts());
      SerializationUtil.writeCounts(out, metrics.nanValueCounts());
      SerializationUtil.writeBounds(out, metrics.lowerBounds());
      SerializationUtil.writeBounds(out, metrics.upperBounds());
      out.writeInt(file.splitOffsets().size());
      for (long offset : file.splitOffsets()) {
        out.writeLong(offset);
      }
      out.writeByte(file.content().id());
      out.writeInt(file.equalityFieldIds().size());
      for (int id : file.equalityFieldIds()) {
        out.writeInt(id);
      }
    }
    return bytes.toByteArray();
  }

  @Override
  public StagedFile deserialize(int version, byte[] serialized) throws IOException {
    switch (version) {
      case 1:
        return deserialize(serialized, false);
      case 2:
        return deserialize(serialized, true);
      default:
        throw VersionedSerialization.unknownVersion("StagedFile", version);
    }
  }

  private static StagedFile deserialize(byte[] serialized, boolean withContent) throws IOException {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
      String path = SerializationUtil.readString(in);
      String formatName = SerializationUtil.readString(in);
      FileFormat format;
      try {
        format = FileFormat.valueOf(formatName);
      } catch (IllegalArgumentException e) {
        throw new IOException("Corrupt staged file " + path + ": unknown format '" + formatName + "'", e);
      }
      int specId = in.readInt();
      String partitionPath = SerializationUtil.readString(in);
      int partitionSize = SerializationUtil.readSize(in);
      List<ByteBuffer> partitionValues = new ArrayList<>(Math.min(partitionSize, 64));
      for (int i = 0; i < partitionSize; i++) {
        partitionValues.add(SerializationUtil.readNullableBuffer(in));
      }
      long recordCount = in.readLong();
      long fileSize = in.readLong();
      ColumnMetrics metrics =
          new ColumnMetrics(
              SerializationUtil.readCounts(in),
              SerializationUtil.readCounts(in),
              SerializationUtil.readCounts(in),
              SerializationUtil.readCounts(in),
              SerializationUtil.readBounds(in),
              SerializationUtil.readBounds(in));
      int offsets = SerializationUtil.readSize(in);
      List<Long> splitOffsets = new ArrayList<>(Math.min(offsets, 1024));
      for (int i = 0; i < offsets; i++) {
        splitOffsets.add(in.readLong());
      }
      FileContent content = FileContent.DATA;
      List<Integer> equalityFieldIds = List.of();
      if (withContent) {
        content = content(in.readByte(), path);
        int ids = SerializationUtil.readSize(in);
        equalityFieldIds = new ArrayList<>(Math.min(ids, 64));
        for (int i = 0; i < ids; i++) {
          equalityFieldIds.add(in.readInt());
        }
      }
      SerializationUtil.checkFullyRead(in, "staged file " + path);
      try {
        return new StagedFile(path, format, specId, partitionPath, partitionValues, recordCount, fileSize, metrics,
            splitOffsets, content, equalityFieldIds);
      } catch (IllegalArgumentException e) {
        throw new IOException("Corrupt staged file: " + e.getMessage(), e);
      }
    }
  }

  private static FileContent content(byte id, String path) throws IOException {
    for (FileContent content : FileContent.values()) {
      if (content.id() == id) {
        return content;
      }
    }
    throw new IOException("Corrupt staged file " + path + ": unknown content kind " + id);
  }
}
