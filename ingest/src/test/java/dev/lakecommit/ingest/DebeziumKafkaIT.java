package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.testing.KafkaBroker;
import dev.lakecommit.hive.testing.EmbeddedPostgres;
import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.OffsetDateTime;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Change events as Debezium itself writes them to Kafka, not as a test imagines them: Debezium's PostgreSQL
 * connector (its embedded engine, with Kafka Connect's JSON converter and its default settings: schemas in every
 * message, decimals as their unscaled bytes, dates as days, timestamps as microseconds or ISO text) captures a real
 * PostgreSQL and its events are produced to the tests' broker, with its transaction topic; the tool reads them with
 * {@code --format debezium}. The lake table has the source table's column types and equals the source table.
 */
class DebeziumKafkaIT {
  @TempDir Path dir;
  private EmbeddedPostgres pg;
  private KafkaBroker broker;

  @AfterEach
  void stop() {
    if (broker != null) {
      broker.close();
    }
    if (pg != null) {
      pg.close();
    }
  }

  @Test
  void eventsOfDebeziumsConnectorKeepTheSourceTablesTypesAndRows() throws Exception {
    pg = EmbeddedPostgres.startLogical();
    String url = pg.createDatabase("shop");
    pg.execute(url, "CREATE TABLE products (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2),"
        + " added date, updated timestamptz, seen timestamp, weight real, big bigint)",
        "INSERT INTO products SELECT i, 'product ' || i, i * 1.25, DATE '2026-01-01' + i,"
        + " TIMESTAMPTZ '2026-01-01 00:00:00+00' + i * INTERVAL '1 hour', TIMESTAMP '2026-02-01 12:00:00'"
        + " + i * INTERVAL '1 minute', i / 4.0, i * 10000000000 FROM generate_series(1, 20) i");
    broker = KafkaBroker.inProcess(dir.resolve("kafka"));
    broker.createTopic("shop.public.products", 3);
    broker.createTopic("shop.transaction", 1);

    // Debezium's connector into the broker, as Kafka Connect would run it
    Properties settings = new Properties();
    settings.setProperty("name", "shop-connector");
    settings.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
    settings.setProperty("offset.storage", "org.apache.kafka.connect.storage.MemoryOffsetBackingStore");
    settings.setProperty("topic.prefix", "shop");
    settings.setProperty("database.hostname", "127.0.0.1");
    settings.setProperty("database.port", Integer.toString(pg.port()));
    settings.setProperty("database.user", pg.user());
    settings.setProperty("database.password", pg.password());
    settings.setProperty("database.dbname", "shop");
    settings.setProperty("plugin.name", "pgoutput");
    settings.setProperty("table.include.list", "public.products");
    settings.setProperty("provide.transaction.metadata", "true");
    CountDownLatch markerSeen = new CountDownLatch(1);
    AtomicReference<Throwable> failed = new AtomicReference<>();
    Properties producerSettings = new Properties();
    producerSettings.put("bootstrap.servers", broker.bootstrapServers());
    producerSettings.put("enable.idempotence", "true");
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerSettings, new StringSerializer(),
        new StringSerializer())) {
      DebeziumEngine<ChangeEvent<String, String>> engine = DebeziumEngine.create(Json.class)
          .using(settings)
          .using((success, message, error) -> {
            if (!success) {
              failed.set(error != null ? error : new IllegalStateException(message));
              markerSeen.countDown();
            }
          })
          .notifying((records, committer) -> {
            for (ChangeEvent<String, String> event : records) {
              producer.send(new ProducerRecord<>(event.destination(), event.key(), event.value()));
              if (event.value() != null && event.value().contains("\"name\":\"marker\"")) {
                markerSeen.countDown();
              }
              committer.markProcessed(event);
            }
            producer.flush();
            committer.markBatchFinished();
          })
          .build();
      Thread thread = new Thread(engine, "debezium-connector");
      thread.start();
      try {
        // transactions of updates, inserts and deletes, then a marker row
        for (int t = 1; t <= 10; t++) {
          pg.execute(url, "UPDATE products SET price = price + " + t + ".01, updated = updated + INTERVAL '1 day',"
              + " weight = weight * 2 WHERE id = " + t,
              "INSERT INTO products VALUES (" + (100 + t) + ", 'new " + t + "', " + t + ".99, DATE '2027-03-0"
                  + (t % 9 + 1) + "', now(), TIMESTAMP '2027-01-01 00:00:00.123456', 0.5, -" + t + ")",
              t % 3 == 0 ? "DELETE FROM products WHERE id = " + (20 - t) : "SELECT 1");
        }
        pg.execute(url, "INSERT INTO products (id, name) VALUES (999, 'marker')");
        assertThat(markerSeen.await(2, TimeUnit.MINUTES)).as("the connector wrote the changes").isTrue();
        assertThat(failed.get()).as("the connector").isNull();
      } finally {
        engine.close();
        thread.join(TimeUnit.SECONDS.toMillis(30));
      }
    }

    CliRun ingest = CliRun.of("ingest", "--input", "kafka://" + broker.bootstrapServers()
        + "/shop.public.products,shop.transaction", "--format", "debezium", "--transaction-topic", "shop.transaction",
        "--route-by", "source.table", "--table", "lake.${source.table}", "--until", "end", "--warehouse",
        dir.resolve("wh").toString(), "--checkpoint-every-records", "10");
    assertThat(ingest.exitCode()).as("%s", ingest).isZero();

    Table table = CatalogUtil.buildIcebergCatalog("lakecommit", Map.of("type", "jdbc", "uri", "jdbc:sqlite:"
        + dir.resolve("wh").resolve("catalog.db").toAbsolutePath(), "warehouse", dir.resolve("wh").toUri()
        .toString(), "jdbc.schema-version", "V1"), new org.apache.hadoop.conf.Configuration())
        .loadTable(TableIdentifier.of("lake", "products"));
    Types.StructType columns = table.schema().asStruct();
    assertThat(columns.field("id").type()).isEqualTo(Types.IntegerType.get());
    assertThat(columns.field("id").isRequired()).as("the key").isTrue();
    assertThat(columns.field("price").type()).isEqualTo(Types.DecimalType.of(10, 2));
    assertThat(columns.field("added").type()).isEqualTo(Types.DateType.get());
    assertThat(columns.field("updated").type()).isEqualTo(Types.TimestampType.withZone());
    assertThat(columns.field("seen").type()).isEqualTo(Types.TimestampType.withoutZone());
    assertThat(columns.field("weight").type()).isEqualTo(Types.FloatType.get());
    assertThat(columns.field("big").type()).isEqualTo(Types.LongType.get());
    Map<Integer, String> lake = new TreeMap<>();
    try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
      for (Record row : rows) {
        Object updated = row.getField("updated");
        lake.put((Integer) row.getField("id"), row.getField("name") + "|" + row.getField("price") + "|"
            + row.getField("added") + "|" + (updated == null ? null : ((OffsetDateTime) updated).toInstant()) + "|"
            + row.getField("seen") + "|" + row.getField("weight") + "|" + row.getField("big"));
      }
    }
    assertThat(lake).as("the lake table equals the source table").isEqualTo(source(url));
  }

  private Map<Integer, String> source(String url) throws SQLException {
    Map<Integer, String> rows = new TreeMap<>();
    try (Connection connection = DriverManager.getConnection(url, pg.user(), pg.password());
        Statement statement = connection.createStatement();
        ResultSet row = statement.executeQuery("SELECT * FROM products")) {
      while (row.next()) {
        OffsetDateTime updated = row.getObject("updated", OffsetDateTime.class);
        Object weight = row.getObject("weight");
        Object big = row.getObject("big");
        rows.put(row.getInt("id"), row.getString("name") + "|" + row.getBigDecimal("price") + "|"
            + row.getObject("added", java.time.LocalDate.class) + "|" + (updated == null ? null : updated.toInstant())
            + "|" + row.getObject("seen", java.time.LocalDateTime.class) + "|" + weight + "|" + big);
      }
    }
    return rows;
  }
}
