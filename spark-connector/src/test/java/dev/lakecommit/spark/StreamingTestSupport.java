package dev.lakecommit.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Types;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/** The input of the streaming tests: JSON-lines files of unique ids, read one file per micro-batch. */
final class StreamingTestSupport {
  static final Schema SCHEMA = new Schema(
      Types.NestedField.optional(1, "id", Types.LongType.get()),
      Types.NestedField.optional(2, "name", Types.StringType.get()));

  static final StructType INPUT = new StructType()
      .add("id", DataTypes.LongType)
      .add("name", DataTypes.StringType);

  private StreamingTestSupport() {}

  /** Writes {@code files} files of {@code rowsPerFile} rows each; ids {@code 0 .. files * rowsPerFile - 1}. */
  static void writeInput(Path dir, int files, int rowsPerFile) throws IOException {
    writeInput(dir, 0, files, rowsPerFile);
  }

  /**
   * Writes files number {@code first .. first + files - 1} of {@code rowsPerFile} rows each; file {@code f} holds
   * ids {@code f * rowsPerFile ..}, so files of one number series never share an id, whatever directory they are in.
   */
  static void writeInput(Path dir, int first, int files, int rowsPerFile) throws IOException {
    Files.createDirectories(dir);
    for (int f = first; f < first + files; f++) {
      StringBuilder lines = new StringBuilder();
      for (int r = 0; r < rowsPerFile; r++) {
        long id = (long) f * rowsPerFile + r;
        lines.append("{\"id\":").append(id).append(",\"name\":\"n-").append(id).append("\"}\n");
      }
      // Written under a temporary name and renamed: the file source must never see half a file.
      Path tmp = dir.resolve("." + f + ".tmp");
      Files.writeString(tmp, lines, StandardCharsets.UTF_8);
      Files.move(tmp, dir.resolve(String.format("part-%05d.json", f)));
    }
  }

  /** A stream of the input files, one file per micro-batch. */
  static Dataset<Row> stream(SparkSession spark, Path input) {
    return spark.readStream().schema(INPUT).option("maxFilesPerTrigger", 1).json(input.toString());
  }

  static Map<String, String> catalog(Path warehouse) {
    return SparkTestSupport.hadoopCatalog(warehouse);
  }

  static SerializableSupplier<dev.lakecommit.iceberg.IcebergSinkConfig> config(Map<String, String> catalog,
      String table) {
    return () -> dev.lakecommit.iceberg.IcebergSinkConfig.builder().catalogName("ice").catalogProperties(catalog)
        .table(table).createTable(SCHEMA, List.of()).build();
  }
}
