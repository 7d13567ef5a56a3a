package dev.lakecommit.hive.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.TableType;
import org.apache.hadoop.hive.metastore.api.AlreadyExistsException;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.LockComponent;
import org.apache.hadoop.hive.metastore.api.LockLevel;
import org.apache.hadoop.hive.metastore.api.LockRequest;
import org.apache.hadoop.hive.metastore.api.LockType;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.hive.HiveCatalog;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.CloseableIterator;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.Types;
import org.apache.thrift.TException;
import org.junit.jupiter.api.Test;

/**
 * What the sinks need from a metastore, run against each backend by a subclass that starts one {@link
 * HiveMetastoreServer} for the class: Hive tables with Parquet storage, all-or-nothing {@code add_partitions},
 * table parameters, Iceberg's HiveCatalog, and surviving a metastore restart.
 */
abstract class MetastoreContract {
  static final String PARQUET_INPUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat";
  static final String PARQUET_OUTPUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat";
  static final String PARQUET_SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe";

  /** The class's server. */
  abstract HiveMetastoreServer hms();

  @Test
  void createsExternalPartitionedParquetTable() throws TException {
    HiveMetaStoreClient client = hms().newClient();
    try {
      Table created = createParquetTable(client, "tables", "events");

      Table read = client.getTable("tables", "events");
      assertThat(read.getTableType()).isEqualTo(TableType.EXTERNAL_TABLE.name());
      assertThat(read.getParameters()).containsEntry("EXTERNAL", "TRUE");
      assertThat(read.getPartitionKeys()).extracting(FieldSchema::getName).containsExactly("dt", "region");
      assertThat(read.getSd().getCols()).extracting(FieldSchema::getName).containsExactly("id", "payload");
      assertThat(read.getSd().getInputFormat()).isEqualTo(PARQUET_INPUT);
      assertThat(read.getSd().getOutputFormat()).isEqualTo(PARQUET_OUTPUT);
      assertThat(read.getSd().getSerdeInfo().getSerializationLib()).isEqualTo(PARQUET_SERDE);
      assertThat(read.getSd().getLocation()).isEqualTo(created.getSd().getLocation());
      assertThat(client.getAllTables("tables")).containsExactly("events");
    } finally {
      client.close();
    }
  }

  @Test
  void addPartitionsIsAllOrNothing() throws TException {
    HiveMetaStoreClient client = hms().newClient();
    try {
      Table table = createParquetTable(client, "partitions", "events");

      int added =
          client.add_partitions(
              List.of(
                  partition(table, "2024-01-01", "eu"),
                  partition(table, "2024-01-01", "us"),
                  partition(table, "2024-01-02", "eu")));
      assertThat(added).isEqualTo(3);

      List<Partition> batch = List.of(partition(table, "2024-01-03", "eu"), partition(table, "2024-01-01", "us"));
      assertThatThrownBy(() -> client.add_partitions(batch)).isInstanceOf(AlreadyExistsException.class);
      assertThat(client.listPartitionNames("partitions", "events", (short) -1))
          .as("a failed add_partitions adds none of its partitions")
          .containsExactlyInAnyOrder("dt=2024-01-01/region=eu", "dt=2024-01-01/region=us", "dt=2024-01-02/region=eu");

      List<Partition> addedIfNew = client.add_partitions(batch, true, true);
      assertThat(addedIfNew).extracting(Partition::getValues).containsExactly(List.of("2024-01-03", "eu"));

      List<Partition> listed = client.listPartitions("partitions", "events", (short) -1);
      assertThat(listed).hasSize(4);
      Partition jan1Us = client.getPartition("partitions", "events", List.of("2024-01-01", "us"));
      assertThat(jan1Us.getSd().getLocation()).endsWith("/events/dt=2024-01-01/region=us");
      assertThat(jan1Us.getSd().getSerdeInfo().getSerializationLib()).isEqualTo(PARQUET_SERDE);
      assertThat(client.listPartitionsByFilter("partitions", "events", "region = \"eu\"", (short) -1))
          .extracting(Partition::getValues)
          .containsExactlyInAnyOrder(
              List.of("2024-01-01", "eu"), List.of("2024-01-02", "eu"), List.of("2024-01-03", "eu"));
    } finally {
      client.close();
    }
  }

  @Test
  void alterTableKeepsParameters() throws TException {
    HiveMetaStoreClient client = hms().newClient();
    try {
      createParquetTable(client, "params", "events");

      Table table = client.getTable("params", "events");
      table.getParameters().put("lakecommit.committed.job-1", "42");
      client.alter_table("params", "events", table);

      Table read = client.getTable("params", "events");
      assertThat(read.getParameters())
          .containsEntry("lakecommit.committed.job-1", "42")
          .containsEntry("EXTERNAL", "TRUE");
    } finally {
      client.close();
    }
  }

  @Test
  void icebergHiveCatalogCommitsSnapshot() throws IOException, TException {
    Catalog catalog = icebergCatalog();
    ((SupportsNamespaces) catalog).createNamespace(Namespace.of("iceberg"));
    Schema schema =
        new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.optional(2, "name", Types.StringType.get()));
    TableIdentifier id = TableIdentifier.of("iceberg", "events");
    org.apache.iceberg.Table table = catalog.createTable(id, schema, PartitionSpec.unpartitioned());

    DataFile file = writeRows(table, 3);
    AppendFiles append = table.newAppend().appendFile(file);
    append.set("lakecommit.job-id", "job-1").set("lakecommit.checkpoint-id", "7").commit();

    // A second catalog sees the commit only through the metastore.
    org.apache.iceberg.Table reread = icebergCatalog().loadTable(id);
    Snapshot snapshot = reread.currentSnapshot();
    assertThat(snapshot.summary())
        .containsEntry("lakecommit.checkpoint-id", "7")
        .containsEntry("added-records", "3");
    assertThat(countRows(reread)).isEqualTo(3);
    HiveMetaStoreClient client = hms().newClient();
    try {
      Map<String, String> params = client.getTable("iceberg", "events").getParameters();
      assertThat(params).containsEntry("table_type", "ICEBERG");
      assertThat(params.get("metadata_location"))
          .isEqualTo(((org.apache.iceberg.BaseTable) reread).operations().current().metadataFileLocation());
    } finally {
      client.close();
    }
  }

  @Test
  void clientsReconnectAfterMetastoreRestart() throws TException {
    IMetaStoreClient retrying = hms().newRetryingClient();
    HiveMetaStoreClient plain = hms().newClient();
    try {
      Table table = createParquetTable(retrying, "restart", "events");
      retrying.add_partitions(List.of(partition(table, "2024-01-01", "eu"), partition(table, "2024-01-01", "us")));
      int port = hms().port();

      hms().stop();
      assertThat(hms().isRunning()).isFalse();
      assertThatThrownBy(plain::getAllDatabases)
          .as("a connected client loses its connection")
          .isInstanceOf(TException.class);
      HiveConf oneTry = hms().hiveConf();
      oneTry.setIntVar(HiveConf.ConfVars.METASTORETHRIFTCONNECTIONRETRIES, 1);
      assertThatThrownBy(() -> new HiveMetaStoreClient(oneTry).close())
          .as("nothing listens on the port")
          .isInstanceOf(MetaException.class);

      hms().start();
      assertThat(hms().port()).isEqualTo(port);
      assertThat(retrying.listPartitionNames("restart", "events", (short) -1))
          .as("the retrying client reconnects by itself")
          .containsExactlyInAnyOrder("dt=2024-01-01/region=eu", "dt=2024-01-01/region=us");
      plain.reconnect();
      assertThat(plain.getTable("restart", "events").getSd().getInputFormat()).isEqualTo(PARQUET_INPUT);
    } finally {
      plain.close();
      retrying.close();
      if (!hms().isRunning()) {
        hms().start();
      }
    }
  }

  Catalog icebergCatalog() {
    return CatalogUtil.loadCatalog(
        HiveCatalog.class.getName(), "hive", hms().icebergCatalogProperties(), hms().hiveConf());
  }

  Table createParquetTable(IMetaStoreClient client, String db, String name) throws TException {
    String dbLocation = hms().warehouseLocation() + "/" + db + ".db";
    client.createDatabase(new Database(db, "test database", dbLocation, new HashMap<>()));

    SerDeInfo serde = new SerDeInfo(name, PARQUET_SERDE, new HashMap<>(Map.of("serialization.format", "1")));
    StorageDescriptor sd = new StorageDescriptor();
    sd.setCols(List.of(new FieldSchema("id", "bigint", null), new FieldSchema("payload", "string", null)));
    sd.setLocation(dbLocation + "/" + name);
    sd.setInputFormat(PARQUET_INPUT);
    sd.setOutputFormat(PARQUET_OUTPUT);
    sd.setSerdeInfo(serde);
    sd.setParameters(new HashMap<>());
    sd.setBucketCols(new ArrayList<>());
    sd.setSortCols(new ArrayList<>());

    Table table = new Table();
    table.setDbName(db);
    table.setTableName(name);
    table.setOwner("lakecommit");
    table.setTableType(TableType.EXTERNAL_TABLE.name());
    table.setParameters(new HashMap<>(Map.of("EXTERNAL", "TRUE")));
    table.setPartitionKeys(List.of(new FieldSchema("dt", "string", null), new FieldSchema("region", "string", null)));
    table.setSd(sd);
    client.createTable(table);
    return client.getTable(db, name);
  }

  /** The lock Iceberg's HiveCatalog takes around a commit. */
  static LockRequest exclusiveTableLock(String db, String table) {
    LockComponent component = new LockComponent(LockType.EXCLUSIVE, LockLevel.TABLE, db);
    component.setTablename(table);
    return new LockRequest(List.of(component), "lakecommit", "localhost");
  }

  static Partition partition(Table table, String dt, String region) {
    StorageDescriptor sd = new StorageDescriptor(table.getSd());
    sd.setLocation(table.getSd().getLocation() + "/dt=" + dt + "/region=" + region);
    Partition partition = new Partition();
    partition.setDbName(table.getDbName());
    partition.setTableName(table.getTableName());
    partition.setValues(List.of(dt, region));
    partition.setSd(sd);
    partition.setParameters(new HashMap<>());
    return partition;
  }

  private static DataFile writeRows(org.apache.iceberg.Table table, int rows) throws IOException {
    OutputFile out = table.io().newOutputFile(table.locationProvider().newDataLocation("rows-0.parquet"));
    DataWriter<Record> writer =
        Parquet.writeData(out)
            .forTable(table)
            .createWriterFunc(GenericParquetWriter::create)
            .withSpec(table.spec())
            .build();
    try (writer) {
      for (long i = 0; i < rows; i++) {
        Record record = GenericRecord.create(table.schema());
        record.setField("id", i);
        record.setField("name", "row-" + i);
        writer.write(record);
      }
    }
    return writer.toDataFile();
  }

  private static long countRows(org.apache.iceberg.Table table) throws IOException {
    long rows = 0;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        try (CloseableIterable<Record> records =
                Parquet.read(table.io().newInputFile(task.file().location()))
                    .project(table.schema())
                    .createReaderFunc(fileSchema -> GenericParquetReaders.buildReader(table.schema(), fileSchema))
                    .build();
            CloseableIterator<Record> it = records.iterator()) {
          while (it.hasNext()) {
            it.next();
            rows++;
          }
        }
      }
    }
    return rows;
  }
}
