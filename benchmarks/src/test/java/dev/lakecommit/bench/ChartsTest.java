package dev.lakecommit.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChartsTest {
  @TempDir Path dir;

  private static String result(String benchmark, String params, String unit, String raw, String secondary) {
    return """
        {"benchmark": "dev.lakecommit.bench.%s", "mode": "ss", "params": {%s},
         "primaryMetric": {"score": 0, "scoreError": 0, "scoreUnit": "%s", "rawData": [%s]},
         "secondaryMetrics": {%s}}""".formatted(benchmark, params, unit, raw, secondary);
  }

  @Test
  void valuesAreMediansOverAllForksAndRowsPerSecondComesFromTheRowsParameter() throws IOException {
    Path json = Files.writeString(dir.resolve("flink.json"), "[" + String.join(",",
        result("FlinkSinkBenchmark.iceberg", "\"rows\": \"1000000\", \"parallelism\": \"2\"", "ms/op",
            "[4000, 5000], [9000]", ""),
        result("FlinkSinkBenchmark.lakecommit", "\"rows\": \"1000000\", \"parallelism\": \"2\"", "ms/op",
            "[2000, 2500, 3000]", "")) + "]");
    List<Charts.Result> results = Charts.read(json);
    Charts.Measure rows = Charts.Measure.rowsPerSecond("rows/s");
    assertThat(Charts.value(results.get(0), rows)).isCloseTo(200_000, within(1e-6));
    assertThat(Charts.value(results.get(1), rows)).isCloseTo(400_000, within(1e-6));
    assertThat(Charts.varying(results)).isEmpty();
  }

  @Test
  void drawsEveryChartWhoseBenchmarkIsInTheResults() throws IOException {
    Path commits = Files.writeString(dir.resolve("commit.json"), "[" + String.join(",",
        result("CommitLatencyBenchmark.bareAppend", "\"files\": \"1\", \"writers\": \"8\"", "ms/op", "[10, 12]", ""),
        result("CommitLatencyBenchmark.lakecommit", "\"files\": \"1\", \"writers\": \"8\"", "ms/op", "[11, 13]", ""),
        result("CommitLatencyBenchmark.bareAppend", "\"files\": \"10000\", \"writers\": \"8\"", "ms/op", "[900]", ""),
        result("CommitLatencyBenchmark.lakecommit", "\"files\": \"10000\", \"writers\": \"8\"", "ms/op", "[500]", ""))
        + "]");
    Path kafka = Files.writeString(dir.resolve("kafka.json"), "[" + result("KafkaIngestBenchmark.latency",
        "\"rows\": \"1000\", \"rate\": \"5000\"", "ms/op", "[30000]",
        "\"p50Millis\": {\"score\": 700, \"scoreUnit\": \"#\", \"rawData\": [[700]]},"
            + " \"p99Millis\": {\"score\": 1400, \"scoreUnit\": \"#\", \"rawData\": [[1400]]}") + "]");
    Path out = dir.resolve("charts");
    Charts.main(new String[] {"--out", out.toString(), "--subtitle", "test", commits.toString(), kafka.toString()});

    try (var pngs = Files.list(out)) {
      assertThat(pngs.map(p -> p.getFileName().toString()).sorted().toList())
          .containsExactly("commit-latency.png", "kafka-latency.png");
    }
    BufferedImage image = ImageIO.read(out.resolve("commit-latency.png").toFile());
    assertThat(image.getWidth()).isEqualTo(900);
    assertThat(image.getHeight()).isEqualTo(500);
  }
}
