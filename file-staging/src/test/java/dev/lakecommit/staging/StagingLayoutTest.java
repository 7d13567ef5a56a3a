package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import org.apache.iceberg.FileFormat;
import org.junit.jupiter.api.Test;

class StagingLayoutTest {
  private static final JobId JOB = JobId.of("ingest-7");

  @Test
  void namesEmbedJobCheckpointWriterAttemptAndSequence() {
    StagingLayout layout = StagingLayout.under("s3://bucket/warehouse/t/data/");
    assertThat(layout.root()).isEqualTo("s3://bucket/warehouse/t/data");
    assertThat(layout.checkpointPrefix(JOB, 12)).isEqualTo("s3://bucket/warehouse/t/data/ingest-7/ckpt-12/");
    assertThat(layout.fileLocation(JOB, 12, "day=2024-01-02", 3, 1, 4, FileFormat.PARQUET))
        .isEqualTo("s3://bucket/warehouse/t/data/ingest-7/ckpt-12/day=2024-01-02/ingest-7-12-3-1-4.parquet");
    assertThat(layout.fileLocation(JOB, 12, "", 0, 0, 0, FileFormat.PARQUET))
        .isEqualTo("s3://bucket/warehouse/t/data/ingest-7/ckpt-12/ingest-7-12-0-0-0.parquet");
    assertThat(layout.manifestLocation(JOB, 12, 3, 1))
        .isEqualTo("s3://bucket/warehouse/t/data/ingest-7/ckpt-12/ingest-7-12-3-1-manifest.avro");
  }

  @Test
  void namesOfARunWithAnEpochCarryIt() {
    StagingLayout layout = StagingLayout.under("/tmp/staging");
    dev.lakecommit.core.WriterContext run = new dev.lakecommit.core.WriterContext(JOB, 3, 4, 1, 11, 9);
    String file = layout.fileLocation(run, 12, "a=1", 4, FileFormat.PARQUET);
    assertThat(file).isEqualTo("/tmp/staging/ingest-7/ckpt-12/a=1/ingest-7-12-e9-3-1-4.parquet");
    assertThat(layout.manifestLocation(run, 12)).isEqualTo("/tmp/staging/ingest-7/ckpt-12/ingest-7-12-e9-3-1-manifest.avro");
    assertThat(layout.epochOf(JOB, file)).hasValue(9);
    assertThat(layout.attemptOf(JOB, file)).hasValue(1);
    assertThat(layout.checkpointOf(JOB, file)).hasValue(12);
    assertThat(layout.epochOf(JOB, "/tmp/staging/ingest-7/ckpt-12/ingest-7-12-ex-3-1-4.parquet")).isEmpty();
  }

  @Test
  void findsTheCheckpointOfAListedLocationWhateverTheSchemeForm() {
    StagingLayout layout = StagingLayout.under("/tmp/staging");
    assertThat(layout.checkpointOf(JOB, "file:/tmp/staging/ingest-7/ckpt-5/a=1/ingest-7-5-0-0-0.parquet"))
        .hasValue(5);
    assertThat(layout.checkpointOf(JOB, "/tmp/staging/ingest-7/ckpt-123/x.parquet")).hasValue(123);
    assertThat(layout.checkpointOf(JOB, "/tmp/staging/ingest-7/other/x.parquet")).isEmpty();
    assertThat(layout.checkpointOf(JOB, "/tmp/staging/ingest-7/ckpt-x1/x.parquet")).isEmpty();
    assertThat(layout.checkpointOf(JOB, "/tmp/staging/ingest-77/ckpt-5/x.parquet")).isEmpty();
    assertThat(layout.checkpointOf(JobId.of("other"), "/tmp/staging/ingest-7/ckpt-5/x.parquet")).isEmpty();
  }

  @Test
  void findsTheAttemptInAFileName() {
    StagingLayout layout = StagingLayout.under("/tmp/staging");
    assertThat(layout.attemptOf(JOB, "/tmp/staging/ingest-7/ckpt-5/ingest-7-5-2-3-0.parquet")).hasValue(3);
    assertThat(layout.attemptOf(JOB, "s3://b/s/ingest-7/ckpt-5/ingest-7-5-2-4-manifest.avro")).hasValue(4);
    assertThat(layout.attemptOf(JOB, "/tmp/staging/ingest-7/ckpt-5/other.parquet")).isEmpty();
    assertThat(layout.attemptOf(JOB, "/tmp/staging/ingest-7/ckpt-5/ingest-7-5-x-3-0.parquet")).isEmpty();
  }

  @Test
  void refusesInvalidParts() {
    assertThatThrownBy(() -> StagingLayout.under("/")).hasMessageContaining("Invalid staging root: '/'");
    StagingLayout layout = StagingLayout.under("/tmp/s");
    assertThatThrownBy(() -> layout.checkpointPrefix(JOB, 0)).hasMessageContaining("Invalid checkpoint id: 0");
    assertThatThrownBy(() -> StagingLayout.fileName(JOB, 1, -1, 0, 0, FileFormat.PARQUET))
        .hasMessageContaining("writer -1");
  }
}
