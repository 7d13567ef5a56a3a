package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.FileMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.schema.MessageType;
import org.junit.jupiter.api.Test;

class CheckpointRunsTest {
  private static ParquetMetadata footer(long rows, Map<String, String> metadata) {
    BlockMetaData block = new BlockMetaData();
    block.setRowCount(rows);
    return new ParquetMetadata(new FileMetaData(new MessageType("m"), metadata, "test"), List.of(block));
  }

  @Test
  void aCheckpointsFileIsOneRunNamedByItsFileName() {
    CheckpointRuns runs = CheckpointRuns.of("orders-12-0-1-0-3.parquet", footer(40, Map.of()), List.of("orders"));
    assertThat(runs.runs()).containsExactly(new CheckpointRuns.Run("orders", 12, 40));

    CheckpointRuns other = CheckpointRuns.of("part-0000.parquet", footer(7, Map.of()), List.of("orders"));
    assertThat(other.runs()).containsExactly(new CheckpointRuns.Run(null, 0, 7));
  }

  @Test
  void aMergedFileKeepsItsSourcesRunsInOrderAndMergesAgainWithoutLosingThem() {
    CheckpointRuns first = CheckpointRuns.concat(List.of(
        new CheckpointRuns(List.of(new CheckpointRuns.Run("orders", 1, 10))),
        new CheckpointRuns(List.of(new CheckpointRuns.Run("orders", 1, 5))),
        new CheckpointRuns(List.of(new CheckpointRuns.Run(null, 0, 3))),
        new CheckpointRuns(List.of(new CheckpointRuns.Run("orders", 2, 0))),
        new CheckpointRuns(List.of(new CheckpointRuns.Run("orders", 3, 8)))));
    assertThat(first.runs()).containsExactly(new CheckpointRuns.Run("orders", 1, 15),
        new CheckpointRuns.Run(null, 0, 3), new CheckpointRuns.Run("orders", 3, 8));

    CheckpointRuns read = CheckpointRuns.of("merged-r1-0.parquet",
        footer(26, Map.of(CheckpointRuns.FOOTER_KEY, first.encode())), List.of("orders"));
    assertThat(read).isEqualTo(first);

    CheckpointRuns again = CheckpointRuns.concat(List.of(read,
        new CheckpointRuns(List.of(new CheckpointRuns.Run("orders", 3, 2), new CheckpointRuns.Run("orders", 4, 1)))));
    assertThat(again.runs()).endsWith(new CheckpointRuns.Run("orders", 3, 10), new CheckpointRuns.Run("orders", 4, 1));
    assertThat(again.rows()).isEqualTo(29);
  }

  @Test
  void aFooterThatDoesNotAddUpIsRefusedNamingTheFile() {
    assertThatThrownBy(() -> CheckpointRuns.of("merged-r1-0.parquet",
        footer(9, Map.of(CheckpointRuns.FOOTER_KEY, "orders:1:5")), List.of("orders")))
        .hasMessageContaining("merged-r1-0.parquet").hasMessageContaining("9 rows");
    assertThatThrownBy(() -> CheckpointRuns.of("merged-r1-0.parquet",
        footer(5, Map.of(CheckpointRuns.FOOTER_KEY, "orders:x:5")), List.of("orders")))
        .hasMessageContaining("merged-r1-0.parquet").hasMessageContaining("orders:x:5");
  }
}
