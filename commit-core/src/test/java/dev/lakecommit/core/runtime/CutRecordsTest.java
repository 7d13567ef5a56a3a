package dev.lakecommit.core.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CutRecordsTest {
  private static final JobId JOB = JobId.of("transfers");

  @TempDir Path dir;

  private static CutRecords.Cut cut(long checkpoint, String credits, String debits) {
    return new CutRecords.Cut(JOB, checkpoint, new TreeMap<>(Map.of("db.credits", credits, "db.debits", debits)),
        new TreeMap<>(Map.of("lakecommit.position.transfers", "offsets " + checkpoint)));
  }

  @Test
  void theNewestPublishedCutIsReadBackAsWritten() throws IOException {
    CutRecords records = new CutRecords(new LocalBlobStore(dir));
    assertThat(records.last()).isEmpty();

    records.publish(cut(1, "snapshot 11", "snapshot 21"));
    records.publish(cut(2, "snapshot 12", "snapshot 22"));

    assertThat(records.last()).contains(cut(2, "snapshot 12", "snapshot 22"));
    assertThat(records.of(1)).contains(cut(1, "snapshot 11", "snapshot 21"));
    assertThat(records.of(3)).isEmpty();
    assertThat(new CutRecords(new LocalBlobStore(dir)).last()).as("another reader").contains(
        cut(2, "snapshot 12", "snapshot 22"));
  }

  @Test
  void aReplayPublishesNothingNewAndADifferentCutOfTheSameCheckpointIsRefused() throws IOException {
    CutRecords records = new CutRecords(new LocalBlobStore(dir));
    records.publish(cut(1, "snapshot 11", "snapshot 21"));
    records.publish(cut(1, "snapshot 11", "snapshot 21"));

    assertThatThrownBy(() -> records.publish(cut(1, "snapshot 11", "snapshot 99")))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("checkpoint 1 of job transfers")
        .hasMessageContaining("snapshot 99");
    assertThat(records.last()).contains(cut(1, "snapshot 11", "snapshot 21"));
  }

  @Test
  void onlyTheNewestRecordsAreKept() throws IOException {
    CutRecords records = new CutRecords(new LocalBlobStore(dir));
    for (long checkpoint = 1; checkpoint <= 25; checkpoint++) {
      records.publish(cut(checkpoint, "snapshot " + checkpoint, "snapshot " + checkpoint));
    }
    try (var files = Files.list(dir)) {
      assertThat(files.filter(file -> file.getFileName().toString().startsWith("cut-")).count()).isEqualTo(11);
    }
    assertThat(records.last().orElseThrow().checkpointId()).isEqualTo(25);
  }

  @Test
  void aCorruptRecordIsNamedInTheError() throws IOException {
    LocalBlobStore store = new LocalBlobStore(dir);
    store.publish("cut-00000000000000000007", "lakecommit-cut 1\njob\ttransfers\ncheckpoint\tseven\n"
        .getBytes(StandardCharsets.UTF_8));

    assertThatThrownBy(() -> new CutRecords(store).last()).isInstanceOf(IOException.class)
        .hasMessageContaining("cut-00000000000000000007").hasMessageContaining("seven");
  }
}
