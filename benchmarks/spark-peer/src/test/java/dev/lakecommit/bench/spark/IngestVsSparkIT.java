package dev.lakecommit.bench.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The comparison at a tiny size, so that it never rots: the tool's jar and the Spark peer each run once as a JVM of
 * their own and each table holds exactly the input's rows. Figures come from full runs only (README).
 */
class IngestVsSparkIT {
  @TempDir Path work;

  @Test
  void bothSidesLoadEveryRowOnceAndTheTableOfFiguresPairsThemByRound() throws Exception {
    List<IngestVsSpark.Run> runs = new IngestVsSpark(Map.of("rows", "20000", "files", "4", "rounds", "1",
        "warmup", "0", "heap", "1g", "work", work.toString())).run();
    String table = IngestVsSpark.table(runs);
    System.out.println(table);

    assertThat(runs).extracting(IngestVsSpark.Run::side).containsExactly(IngestVsSpark.TOOL, IngestVsSpark.SPARK);
    assertThat(runs).allSatisfy(run -> {
      assertThat(run.rows()).isEqualTo(20_000);
      assertThat(run.cpuSeconds()).isPositive();
      // 4 countries x 8 currencies: at least one file per partition
      assertThat(run.dataFiles()).isGreaterThanOrEqualTo(32);
    });
    assertThat(table).contains("median");

    // The same runs in JMH's JSON format, one result per side, for the chart script.
    JsonNode json = new ObjectMapper().readTree(IngestVsSpark.json(runs, 20_000, "2"));
    assertThat(json).hasSize(2);
    assertThat(json.get(0).get("benchmark").asText()).isEqualTo("dev.lakecommit.bench.spark.IngestVsSpark.lakecommit");
    assertThat(json.get(1).get("primaryMetric").get("rawData").get(0).get(0).asDouble())
        .isCloseTo(runs.get(1).wallSeconds(), within(0.001));
    assertThat(json.get(0).get("secondaryMetrics").get("rowsPerCpuSecond").get("score").asDouble()).isPositive();
  }
}
