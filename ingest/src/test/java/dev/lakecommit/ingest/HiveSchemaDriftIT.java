package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.hive.testing.HiveMetastoreServer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Schema drift into a Hive table (issue 15, point 2): a column that first appears in a later file stops the job
 * naming column, file and line; with {@code --add-new-columns} the table (and its existing partitions) get it by
 * {@code ALTER TABLE ADD COLUMNS ... CASCADE} and its values land.
 */
class HiveSchemaDriftIT {
  @TempDir Path dir;

  @Test
  void aColumnNewInALaterFileIsAddedWithTheOptionAndStopsTheJobWithoutIt() throws Exception {
    try (HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby()) {
      Path day1 = SchemaDriftTest.jsonLines(dir.resolve("day1/a.jsonl"), 0, 2_000,
          i -> "{\"id\": " + i + ", \"region\": \"r" + (i % 3) + "\", \"name\": \"n" + i + "\"}");
      Path day2 = SchemaDriftTest.jsonLines(dir.resolve("day2/a.jsonl"), 2_000, 6_000,
          i -> "{\"id\": " + i + ", \"region\": \"r" + (i % 4) + "\", \"name\": \"n" + i + "\""
              + (i >= 5_000 ? ", \"coupon\": \"c" + i + "\"" : "") + "}");
      assertThat(ingest(hms, day1, "day1").exitCode()).isZero();

      CliRun stopped = ingest(hms, day2, "day2");

      assertThat(stopped.exitCode()).as(stopped.toString()).isNotZero();
      assertThat(stopped.err()).contains("'coupon'").contains(day2 + " line 3001").contains("--add-new-columns");
      assertThat(rows(hms, "id")).as("nothing of day 2 committed").isEqualTo(2_000);

      CliRun added = ingest(hms, day2, "day2", "--add-new-columns");

      assertThat(added.exitCode()).as(added.toString()).isZero();
      HiveMetaStoreClient client = hms.newClient();
      try {
        assertThat(client.getTable("shop", "events").getSd().getCols()).extracting(FieldSchema::getName)
            .containsExactly("id", "name", "coupon");
        for (Partition partition : client.listPartitions("shop", "events", (short) -1)) {
          assertThat(partition.getSd().getCols()).as("partition %s", partition.getValues())
              .extracting(FieldSchema::getName).contains("coupon");
        }
      } finally {
        client.close();
      }
      assertThat(rows(hms, "coupon")).as("coupon values").isEqualTo(1_000);
      CliRun verify = CliRun.of("verify", "--source", dir.resolve("day*/a.jsonl").toString(), "--table",
          "shop.events", "--target", "hive", "--metastore-uri", hms.uri(), "--key", "id", "--json");
      assertThat(verify.exitCode()).as(verify.toString()).isZero();
      assertThat(verify.out()).contains("\"duplicateKeys\" : 0").contains("\"lostKeys\" : 0");
    }
  }

  /**
   * An int column whose values outgrow it (day 2 holds longs): the job stops without the option; with
   * {@code --add-new-columns} the column becomes bigint in the table and its partitions (ALTER TABLE ... CASCADE),
   * the new values land, and the day 1 files (INT32) still read; a string in it stops the job either way.
   */
  @Test
  void anIntColumnWidensToBigintWithTheOption() throws Exception {
    try (HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby()) {
      Path day1 = SchemaDriftTest.jsonLines(dir.resolve("day1/a.jsonl"), 0, 2_000,
          i -> "{\"id\": " + i + ", \"region\": \"r" + (i % 3) + "\", \"n\": " + i + "}");
      Path day2 = SchemaDriftTest.jsonLines(dir.resolve("day2/a.jsonl"), 2_000, 4_000,
          i -> "{\"id\": " + i + ", \"region\": \"r" + (i % 3) + "\", \"n\": " + (3_000_000_000L + i) + "}");
      assertThat(ingest(hms, day1, "day1", "--schema", "id long, region string, n int").exitCode()).isZero();

      CliRun stopped = ingest(hms, day2, "day2");
      assertThat(stopped.exitCode()).as(stopped.toString()).isNotZero();
      assertThat(stopped.err()).contains("'n'").doesNotContain("\tat ");

      CliRun widened = ingest(hms, day2, "day2", "--add-new-columns");
      assertThat(widened.exitCode()).as(widened.toString()).isZero();
      HiveMetaStoreClient client = hms.newClient();
      try {
        assertThat(client.getTable("shop", "events").getSd().getCols()).extracting(FieldSchema::getType)
            .containsExactly("bigint", "bigint");
        for (Partition partition : client.listPartitions("shop", "events", (short) -1)) {
          assertThat(partition.getSd().getCols()).as("partition %s", partition.getValues())
              .extracting(FieldSchema::getType).containsExactly("bigint", "bigint");
        }
      } finally {
        client.close();
      }
      CliRun verify = CliRun.of("verify", "--source", dir.resolve("day*/a.jsonl").toString(), "--table",
          "shop.events", "--target", "hive", "--metastore-uri", hms.uri(), "--key", "id", "--json");
      assertThat(verify.exitCode()).as(verify.toString()).isZero();
      assertThat(verify.out()).contains("\"tableRows\" : 4000", "\"duplicateKeys\" : 0", "\"lostKeys\" : 0");
    }
  }

  /**
   * A field new inside an existing struct column (address.zip from line 701 of day 2): a Hive table's struct
   * columns are not evolved, so the job stops with or without {@code --add-new-columns}, naming the field, the file
   * and the line, with exit code 2 (docs/operating.md, exit codes: input the table cannot take as it is, found before anything
   * is written; the command must change), and nothing of day 2 is committed: no rows, no column changes, no files.
   */
  @Test
  void aFieldNewInsideAStructColumnIsRefusedEvenWithTheOption() throws Exception {
    try (HiveMetastoreServer hms = HiveMetastoreServer.startOnDerby()) {
      Path day1 = SchemaDriftTest.jsonLines(dir.resolve("day1/a.jsonl"), 0, 500,
          i -> "{\"id\": " + i + ", \"region\": \"r" + (i % 3) + "\", \"address\": {\"city\": \"c" + i + "\"}}");
      Path day2 = SchemaDriftTest.jsonLines(dir.resolve("day2/a.jsonl"), 500, 1_500,
          i -> "{\"id\": " + i + ", \"region\": \"r" + (i % 3) + "\", \"address\": {\"city\": \"c" + i + "\""
              + (i >= 1_200 ? ", \"zip\": " + i : "") + "}}");
      assertThat(ingest(hms, day1, "day1").exitCode()).isZero();
      List<FieldSchema> columns = columns(hms);

      for (String[] options : List.of(new String[0], new String[] {"--add-new-columns"})) {
        CliRun refused = ingest(hms, day2, "day2", options);

        assertThat(refused.exitCode()).as(refused.toString()).isEqualTo(2);
        assertThat(refused.err()).as(refused.toString()).contains("'address.zip'", day2 + " line 701")
            .contains("struct columns are not evolved").doesNotContain("\tat ");
        assertThat(rows(hms, "id")).as("nothing of day 2 committed").isEqualTo(500);
        assertThat(columns(hms)).as("the table's columns as they were").isEqualTo(columns);
        try (java.util.stream.Stream<Path> walk = java.nio.file.Files.walk(dir.resolve("wh/shop.db/events"))) {
          assertThat(walk.filter(p -> p.toString().contains("day2") && p.toString().endsWith(".parquet")).toList())
              .as("no file of day 2, staged or moved").isEmpty();
        }
      }
    }
  }

  private static List<FieldSchema> columns(HiveMetastoreServer hms) throws Exception {
    HiveMetaStoreClient client = hms.newClient();
    try {
      return client.getTable("shop", "events").getSd().getCols();
    } finally {
      client.close();
    }
  }

  private CliRun ingest(HiveMetastoreServer hms, Path input, String job, String... extra) {
    List<String> args = new ArrayList<>(List.of("ingest", "--input", input.toString(), "--table", "shop.events",
        "--target", "hive", "--metastore-uri", hms.uri(), "--partition-by", "region", "--job-id", job,
        "--checkpoint-every-records", "1500", "--checkpoint-dir", dir.resolve("ckpt").resolve(job).toString(),
        "-C", "warehouse=" + dir.resolve("wh").toUri()));
    args.addAll(List.of(extra));
    return CliRun.of(args.toArray(String[]::new));
  }

  /** Rows of the table's data files (as a reader sees them, outside the staging area) with {@code column} set. */
  private long rows(HiveMetastoreServer hms, String column) throws Exception {
    long count = 0;
    List<Path> files;
    try (java.util.stream.Stream<Path> walk = java.nio.file.Files.walk(dir.resolve("wh/shop.db/events"))) {
      files = walk.filter(p -> p.toString().endsWith(".parquet") && !p.toString().contains("/.")).toList();
    }
    for (Path file : files) {
      org.apache.iceberg.io.InputFile in = org.apache.iceberg.Files.localInput(file.toFile());
      org.apache.iceberg.Schema fileSchema;
      try (org.apache.parquet.hadoop.ParquetFileReader reader = org.apache.parquet.hadoop.ParquetFileReader.open(
          org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(new org.apache.hadoop.fs.Path(file.toUri()),
              new org.apache.hadoop.conf.Configuration()))) {
        fileSchema = org.apache.iceberg.parquet.ParquetSchemaUtil.convert(reader.getFooter().getFileMetaData()
            .getSchema());
      }
      if (fileSchema.findField(column) == null) {
        continue; // written before the column was added: null in every row
      }
      org.apache.iceberg.Schema projection = fileSchema.select(column);
      try (CloseableIterable<org.apache.iceberg.data.Record> records = org.apache.iceberg.parquet.Parquet.read(in)
          .project(projection)
          .createReaderFunc(type -> org.apache.iceberg.data.parquet.GenericParquetReaders.buildReader(projection,
              type))
          .withNameMapping(org.apache.iceberg.mapping.MappingUtil.create(fileSchema))
          .build()) {
        for (org.apache.iceberg.data.Record record : records) {
          if (record.getField(column) != null) {
            count++;
          }
        }
      }
    }
    return count;
  }
}
