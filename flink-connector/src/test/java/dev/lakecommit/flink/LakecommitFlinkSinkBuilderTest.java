package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.iceberg.IcebergSinkConfig;
import dev.lakecommit.iceberg.MaintenanceOptions;
import java.time.Duration;
import java.nio.file.Path;
import java.util.Map;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.InstantiationUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The builder refuses what cannot work before a job is submitted, and the sink travels as Flink ships it. */
class LakecommitFlinkSinkBuilderTest {
  @TempDir
  Path dir;

  @Test
  void needsATarget() {
    assertThatThrownBy(() -> LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE).jobId("x").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Missing target");
  }

  @Test
  void needsAJobIdOrName() {
    String warehouse = dir.toString();
    assertThatThrownBy(() -> LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE)
        .iceberg(() -> IcebergFlinkSinkIT.config(warehouse, "db.t")).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Missing job id")
        .hasMessageContaining("savepoint");
    assertThatThrownBy(() -> LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE).jobId("no spaces"))
        .hasMessageContaining("Invalid job id: 'no spaces'");
  }

  /** Building the sink and claiming its run's epoch (on the client) close every catalog they open. */
  @Test
  void buildingAndClaimingAnEpochCloseTheCatalogsTheyOpen() {
    String warehouse = dir.toString();
    int opened = CountingHadoopCatalog.INITIALIZED.get();
    int closed = CountingHadoopCatalog.CLOSED.get();
    LakecommitFlinkSink sink = LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE)
        .iceberg(() -> IcebergSinkConfig.builder()
            .catalogProperties(Map.of("catalog-impl", CountingHadoopCatalog.class.getName(), "warehouse", warehouse))
            .table("db.orders")
            .createTable(TestJobs.SCHEMA, java.util.List.of("part"))
            .build())
        .jobName("counted")
        .build();
    assertThat(sink.claimRunEpoch()).isPositive();
    assertThat(CountingHadoopCatalog.INITIALIZED.get() - opened).as("catalogs opened").isPositive();
    assertThat(CountingHadoopCatalog.CLOSED.get() - closed).as("catalogs closed")
        .isEqualTo(CountingHadoopCatalog.INITIALIZED.get() - opened);
  }

  @Test
  void derivesTheJobIdFromTableAndName() throws Exception {
    String warehouse = dir.toString();
    LakecommitFlinkSink sink = LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE)
        .iceberg(() -> IcebergFlinkSinkIT.config(warehouse, "db.orders"))
        .jobName("daily load/eu")
        .build();
    assertThat(sink.jobId().value()).isEqualTo("db.orders-daily-load-eu");
    // Flink ships the sink to its tasks with Java serialization.
    LakecommitFlinkSink copy = InstantiationUtil.clone(sink);
    assertThat(copy.jobId()).isEqualTo(sink.jobId());
  }

  @Test
  void refusesRowsThatDoNotFitTheTableNamingTheColumn() {
    String warehouse = dir.toString();
    RowType wrong = RowType.of(new LogicalType[] {new IntType(false)}, new String[] {"part"});
    assertThatThrownBy(() -> LakecommitFlinkSink.forRowData(wrong)
        .iceberg(() -> IcebergSinkConfig.builder()
            .catalogProperties(Map.of("type", "hadoop", "warehouse", warehouse))
            .table("db.t2")
            .createTable(TestJobs.SCHEMA, java.util.List.of())
            .build())
        .jobId("x").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Column 'id' is required by the table but missing");
  }

  @Test
  void maintenanceNeedsAPositiveIntervalAndTravelsWithTheSink() throws Exception {
    String warehouse = dir.toString();
    assertThatThrownBy(() -> LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE)
        .maintenance(0, MaintenanceOptions.builder().build()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Invalid maintenance interval: every 0 commits");
    assertThatThrownBy(() -> MaintenanceOptions.builder().expire(-1, Duration.ZERO).build())
        .hasMessageContaining("Invalid snapshots to retain: -1");
    LakecommitFlinkSink sink = LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE)
        .iceberg(() -> IcebergFlinkSinkIT.config(warehouse, "db.maintained"))
        .jobName("m")
        .maintenance(10, MaintenanceOptions.builder().expire(5, Duration.ofHours(1)).build())
        .build();
    assertThat(InstantiationUtil.clone(sink).jobId()).isEqualTo(sink.jobId());
  }
}
