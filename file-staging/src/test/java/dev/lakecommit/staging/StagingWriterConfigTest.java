package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.staging.testing.AllTypes;
import java.util.Map;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.inmemory.InMemoryFileIO;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

class StagingWriterConfigTest {
  private final StagingWriterConfig.Builder base =
      StagingWriterConfig.builder()
          .schema(AllTypes.SCHEMA)
          .io(new InMemoryFileIO())
          .layout(StagingLayout.under("mem://x"));

  @Test
  void defaultsFollowIcebergTablePropertiesWithZstd() {
    StagingWriterConfig config = base.build();
    assertThat(config.writeProperties()).containsEntry(TableProperties.PARQUET_COMPRESSION, "zstd");
    assertThat(config.spec().isUnpartitioned()).isTrue();
    assertThat(config.maxOpenFiles()).isEqualTo(32);
    assertThat(config.maxRowsPerFile()).isEqualTo(Long.MAX_VALUE);
    assertThat(config.targetFileSizeBytes()).isEqualTo(TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT);
    assertThat(config.manifestFormatVersion()).isZero();
    assertThat(config.writesIcebergManifest(100)).isFalse();
    StagingWriterConfig manifests = StagingWriterConfig.builder().schema(AllTypes.SCHEMA).io(config.io())
        .layout(config.layout()).writeIcebergManifests(2, 3).build();
    assertThat(manifests.manifestMinFiles()).isEqualTo(3);
    assertThat(manifests.writesIcebergManifest(2)).isFalse();
    assertThat(manifests.writesIcebergManifest(3)).isTrue();
    assertThat(manifests.writesIcebergManifest(0)).isFalse();

    StagingWriterConfig fromTable =
        base.properties(Map.of(TableProperties.PARQUET_COMPRESSION, "snappy",
                TableProperties.WRITE_TARGET_FILE_SIZE_BYTES, "1000"))
            .build();
    assertThat(fromTable.writeProperties()).containsEntry(TableProperties.PARQUET_COMPRESSION, "snappy");
    assertThat(fromTable.targetFileSizeBytes()).isEqualTo(1000);
    StagingWriterConfig overridden = base.codec("UNCOMPRESSED").rowGroupSizeBytes(1 << 20).pageSizeBytes(1 << 16)
        .build();
    assertThat(overridden.writeProperties())
        .containsEntry(TableProperties.PARQUET_COMPRESSION, "uncompressed")
        .containsEntry(TableProperties.PARQUET_ROW_GROUP_SIZE_BYTES, "1048576")
        .containsEntry(TableProperties.PARQUET_PAGE_SIZE_BYTES, "65536");
  }

  @Test
  void refusesInvalidSettingsWithTheValue() {
    assertThatThrownBy(() -> base.maxOpenFiles(0)).hasMessage("Invalid max open files: 0 (must be > 0)");
    assertThatThrownBy(() -> base.maxRowsPerFile(-5)).hasMessage("Invalid max rows per file: -5 (must be > 0)");
    assertThatThrownBy(() -> base.targetFileSizeBytes(0)).hasMessageContaining("Invalid target file size: 0");
    assertThatThrownBy(() -> base.writeIcebergManifests(4))
        .hasMessageContaining("Invalid table format version for writer manifests: 4");
    assertThatThrownBy(() -> base.writeIcebergManifests(1)).hasMessageContaining("add the staged files instead");
    assertThatThrownBy(() -> base.writeIcebergManifests(2, 0))
        .hasMessage("Invalid minimum files per writer manifest: 0 (must be > 0)");
    assertThatThrownBy(() -> base.codec("lzma")).hasMessageContaining("Invalid Parquet codec: 'lzma'");
    assertThatThrownBy(() -> StagingWriterConfig.builder().schema(AllTypes.SCHEMA).build())
        .hasMessageContaining("Missing FileIO");
    Schema other = new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));
    PartitionSpec otherSpec = PartitionSpec.builderFor(other).bucket("id", 2).build();
    assertThatThrownBy(() -> base.spec(otherSpec).build()).hasMessageContaining("not bound to the writer's schema");
  }
}
