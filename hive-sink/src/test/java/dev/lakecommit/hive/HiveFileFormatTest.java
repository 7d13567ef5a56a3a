package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How the sink writes a table's files, from its parameters; Hive's INT96 layout. */
class HiveFileFormatTest {
  @Test
  void defaultsAreWhatHiveReadersRead() {
    HiveFileFormat format = HiveFileFormat.of("db.t", Map.of(), null);
    assertThat(format).isEqualTo(new HiveFileFormat("snappy", true, ZoneId.of("UTC")));
  }

  @Test
  void tableParametersAndTheConfiguredCodec() {
    HiveFileFormat format = HiveFileFormat.of("db.t", Map.of(HiveFileFormat.TIMESTAMP_KEY, "INT64-micros",
        HiveFileFormat.INT96_ZONE_KEY, "Europe/Berlin", HiveFileFormat.HIVE_CODEC_KEY, "GZIP"), null);
    assertThat(format).isEqualTo(new HiveFileFormat("gzip", false, ZoneId.of("Europe/Berlin")));
    assertThat(HiveFileFormat.of("db.t", Map.of(HiveFileFormat.HIVE_CODEC_KEY, "gzip"), "zstd").codec())
        .isEqualTo("zstd");
  }

  @Test
  void unknownValuesAreRefusedNamingTableAndParameter() {
    assertThatThrownBy(() -> HiveFileFormat.of("db.t", Map.of(HiveFileFormat.TIMESTAMP_KEY, "int32"), null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lakecommit.parquet.timestamp=int32").hasMessageContaining("db.t");
    assertThatThrownBy(() -> HiveFileFormat.of("db.t", Map.of(HiveFileFormat.INT96_ZONE_KEY, "Mars/Base"), null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lakecommit.parquet.int96.zone=Mars/Base").hasMessageContaining("db.t");
  }

  @Test
  void int96IsNanosOfDayThenJulianDayLittleEndian() {
    ByteBuffer epoch = ByteBuffer.wrap(HiveParquetWriteSupport.int96(LocalDateTime.of(1970, 1, 1, 0, 0)))
        .order(ByteOrder.LITTLE_ENDIAN);
    assertThat(epoch.getLong()).isZero();
    assertThat(epoch.getInt()).isEqualTo(2_440_588);
    ByteBuffer later = ByteBuffer.wrap(HiveParquetWriteSupport.int96(LocalDateTime.of(2000, 1, 2, 0, 0, 1, 5_000)))
        .order(ByteOrder.LITTLE_ENDIAN);
    assertThat(later.getLong()).isEqualTo(1_000_005_000L);
    assertThat(later.getInt()).isEqualTo(2_451_546);
  }

  @Test
  void decimalsTakeTheFewestBytesHiveGivesThem() {
    assertThat(HiveParquetWriteSupport.decimalBytes(1)).isEqualTo(1);
    assertThat(HiveParquetWriteSupport.decimalBytes(9)).isEqualTo(4);
    assertThat(HiveParquetWriteSupport.decimalBytes(12)).isEqualTo(6);
    assertThat(HiveParquetWriteSupport.decimalBytes(18)).isEqualTo(8);
    assertThat(HiveParquetWriteSupport.decimalBytes(38)).isEqualTo(16);
  }
}
