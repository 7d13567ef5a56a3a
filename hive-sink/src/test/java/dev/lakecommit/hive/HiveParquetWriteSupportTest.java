package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.avro.util.Utf8;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.hadoop.ParquetReader;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.GroupReadSupport;
import org.apache.parquet.hadoop.util.HadoopOutputFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Values as the Hive write support writes them, read back from the file. */
class HiveParquetWriteSupportTest {
  private static final Schema SCHEMA = new Schema(
      Types.NestedField.optional(1, "name", Types.StringType.get()),
      Types.NestedField.optional(2, "day", Types.StringType.get()));

  @TempDir
  Path dir;

  @Test
  void stringsGivenAsUtf8OrStringAreTheSameText() throws IOException {
    List<Object> names = new ArrayList<>();
    for (int i = 0; i < 300; i++) { // seven texts: a dictionary of them, kept across values
      names.add(i % 2 == 0 ? "name-" + i % 7 + "-\u00e4\u20ac" : new Utf8("name-" + i % 7 + "-\u00e4\u20ac"));
    }
    names.add(null);
    org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(dir.resolve("strings.parquet").toUri());
    HiveParquetWriteSupport support = new HiveParquetWriteSupport(SCHEMA, List.of("day"),
        HiveFileFormat.of("db.t", Map.of(), null));
    Utf8 reused = new Utf8();
    try (ParquetWriter<Record> writer = new HiveParquetAppender.Builder(
        HadoopOutputFile.fromPath(file, new Configuration()), support).build()) {
      GenericRecord record = GenericRecord.create(SCHEMA);
      for (Object name : names) {
        Object value = name;
        if (name instanceof Utf8 utf8) { // one array for every Utf8, as a caller may reuse it
          reused.setByteLength(utf8.getByteLength());
          System.arraycopy(utf8.getBytes(), 0, reused.getBytes(), 0, utf8.getByteLength());
          value = reused;
        }
        record.set(0, value);
        record.set(1, "2026-12-03");
        writer.write(record);
      }
    }
    List<String> read = new ArrayList<>();
    try (ParquetReader<Group> reader = ParquetReader.builder(new GroupReadSupport(), file).build()) {
      for (Group group = reader.read(); group != null; group = reader.read()) {
        read.add(group.getFieldRepetitionCount("name") == 0 ? null : group.getString("name", 0));
      }
    }
    assertThat(read).containsExactlyElementsOf(names.stream().map(n -> n == null ? null : n.toString()).toList());
  }
}
