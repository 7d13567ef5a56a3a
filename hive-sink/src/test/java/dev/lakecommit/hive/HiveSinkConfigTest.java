package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class HiveSinkConfigTest {

  @Test
  void checksSettingsWithTheValueInTheMessage() {
    assertThatThrownBy(() -> HiveSinkConfig.builder().table("events"))
        .hasMessage("Invalid table: 'events' (use database.table, e.g. db.events)");
    assertThatThrownBy(() -> HiveSinkConfig.builder().table("a.b.c"))
        .hasMessageStartingWith("Invalid table: 'a.b.c'");
    assertThatThrownBy(() -> HiveSinkConfig.builder().metastoreUri("http://x:9083"))
        .hasMessage("Invalid metastore URI: 'http://x:9083' (use thrift://host:port)");
    assertThatThrownBy(() -> HiveSinkConfig.builder().partitionBatchSize(0))
        .hasMessage("Invalid partition batch size: 0 (must be > 0)");
    assertThatThrownBy(() -> HiveSinkConfig.builder().moveThreads(0))
        .hasMessage("Invalid move threads: 0 (must be in [1, 256])");
    assertThatThrownBy(() -> HiveSinkConfig.builder().createTable(HiveTestData.SCHEMA, List.of("day")))
        .hasMessage("Invalid partition column 'day': not in the schema [id, payload, cat, bucket]");
    assertThatThrownBy(() -> HiveSinkConfig.builder().table("db.t").build())
        .hasMessageStartingWith("Missing metastore");
    assertThatThrownBy(() -> HiveSinkConfig.builder().metastoreUri("thrift://h:1").build())
        .hasMessage("Missing table: set table(\"database.table\")");
  }

  @Test
  void buildsAConfigurationOfMetastoreAndStorage() {
    HiveSinkConfig config = HiveSinkConfig.builder()
        .metastoreUri("thrift://metastore:9083")
        .hadoopProperty("fs.s3a.endpoint", "http://minio:9000")
        .table("DB.Events")
        .mode(WriteMode.INSERT_OVERWRITE)
        .build();

    assertThat(config.table()).isEqualTo("db.events");
    assertThat(config.mode()).isEqualTo(WriteMode.INSERT_OVERWRITE);
    assertThat(config.hiveConf().get("hive.metastore.uris")).isEqualTo("thrift://metastore:9083");
    assertThat(config.hadoopConf().get("fs.s3a.endpoint")).isEqualTo("http://minio:9000");
    assertThat(config.partitionBatchSize).isEqualTo(HiveSinkConfig.DEFAULT_PARTITION_BATCH_SIZE);
  }

  @Test
  void theMetastoreClientReconnectsOnceWithoutBackoffOfItsOwnUnlessTheUserSaysOtherwise() {
    HiveSinkConfig defaults = HiveSinkConfig.builder().metastoreUri("thrift://metastore:9083").table("db.t").build();
    assertThat(defaults.hiveConf().get("hive.metastore.connect.retries")).isEqualTo("1");
    assertThat(defaults.hiveConf().get("hive.metastore.failure.retries")).isEqualTo("1");
    assertThat(defaults.hiveConf().get("hive.metastore.client.connect.retry.delay")).isEqualTo("0s");

    HiveSinkConfig given = HiveSinkConfig.builder().metastoreUri("thrift://metastore:9083").table("db.t")
        .hadoopProperty("hive.metastore.connect.retries", "5").build();
    assertThat(given.hiveConf().get("hive.metastore.connect.retries")).isEqualTo("5");
  }
}
