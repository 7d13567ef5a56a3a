package dev.lakecommit.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CommitIdTest {
  @ParameterizedTest
  @ValueSource(strings = {"", "-x", "a b", "a/b", "../x", "é"})
  void rejectsJobIdsThatCannotBeFileNames(String value) {
    assertThatThrownBy(() -> JobId.of(value))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'" + value + "'");
  }

  @Test
  void acceptsPlainJobIds() {
    assertThat(JobId.of("ingest-7.orders_v2").value()).isEqualTo("ingest-7.orders_v2");
    assertThatThrownBy(() -> JobId.of("x".repeat(129))).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void keysTheWatermarkByJob() {
    assertThat(CommitId.watermarkKey(JobId.of("j1"))).isEqualTo("lakecommit.committed.j1");
  }

  @Test
  void ordersByJobThenCheckpoint() {
    JobId a = JobId.of("a");
    assertThat(new CommitId(a, 2)).isGreaterThan(new CommitId(a, 1));
    assertThat(new CommitId(a, 9)).isLessThan(new CommitId(JobId.of("b"), 1));
    assertThatThrownBy(() -> new CommitId(a, 0)).hasMessage("Invalid checkpoint id: 0 (must be >= 1)");
  }

  @Test
  void checksWriterContexts() {
    JobId job = JobId.of("j");
    assertThatThrownBy(() -> new WriterContext(job, 3, 3, 0, 0))
        .hasMessage("Invalid writer index: 3 (must be in [0, 3))");
    assertThatThrownBy(() -> new WriterContext(job, 0, 0, 0, 0))
        .hasMessage("Invalid writer count: 0 (must be > 0)");
  }
}
