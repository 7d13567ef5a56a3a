package dev.lakecommit.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.testing.TestScale;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The mapping of micro-batch ids onto a pinned job's checkpoint ids, without Spark or a table. */
class BatchIdsTest {
  private static final JobId JOB = JobId.of("pinned");

  @Test
  void aJobOfItsOwnQueryMapsBatchIdPlusOne() {
    BatchIds ids = BatchIds.ofOwnQuery("q1");
    assertThat(ids.checkpointOf(0)).hasValue(1);
    assertThat(ids.checkpointOf(41)).hasValue(42);
  }

  @Test
  void theFirstQueryOfAJobStartsAtCheckpointOne() {
    BatchIds ids = BatchIds.forRun(Optional.empty(), "q1", 0, OptionalLong.empty());
    assertThat(ids.checkpointOf(0)).hasValue(1);
    assertThat(ids.checkpointOf(4)).hasValue(5);
    assertThat(ids.value()).isEqualTo("1 q1:0:0");
  }

  @Test
  void aRestartOfTheSameQueryKeepsItsMappingSoAReplayedBatchMapsToItsCheckpoint() {
    BatchIds first = BatchIds.forRun(Optional.empty(), "q1", 0, OptionalLong.empty());
    // q1 committed batches 0..4 (checkpoints 1..5) and restarts; Spark replays batch 4.
    BatchIds again = BatchIds.forRun(Optional.of(stored(first)), "q1", 4, OptionalLong.of(5));
    assertThat(again).isEqualTo(first);
    assertThat(again.checkpointOf(4)).hasValue(5);
    assertThat(again.checkpointOf(5)).hasValue(6);
  }

  @Test
  void aNewQueryOfThePinnedJobMapsAboveWhatTheTableHolds() {
    BatchIds q1 = BatchIds.forRun(Optional.empty(), "q1", 0, OptionalLong.empty());
    // q1 committed checkpoints 1..5; a new checkpoint location starts q2 at batch 0.
    BatchIds q2 = BatchIds.forRun(Optional.of(stored(q1)), "q2", 0, OptionalLong.of(5));
    assertThat(q2.checkpointOf(0)).hasValue(6);
    assertThat(q2.checkpointOf(2)).hasValue(8);
    assertThat(q2.history()).containsExactly(new BatchIds.Finished("q1", 4));
    assertThat(q2.value()).isEqualTo("1 q2:0:5 q1:4");
  }

  @Test
  void anEarlierQueryThatComesBackSkipsWhatItCommittedAndMapsTheRestAboveTheTable() {
    BatchIds q1 = BatchIds.forRun(Optional.empty(), "q1", 0, OptionalLong.empty());
    BatchIds q2 = BatchIds.forRun(Optional.of(stored(q1)), "q2", 0, OptionalLong.of(5));
    // q2 committed batches 0..2 (checkpoints 6..8); q1's old checkpoint location restarts and replays batch 4.
    BatchIds back = BatchIds.forRun(Optional.of(stored(q2)), "q1", 4, OptionalLong.of(8));
    assertThat(back.checkpointOf(4)).isEmpty();
    assertThat(back.checkpointOf(5)).hasValue(9);
    assertThat(back.history()).containsExactly(new BatchIds.Finished("q2", 2));
  }

  @Test
  void aQueryThatCommittedNothingLeavesNoBatchMarkedCommitted() {
    BatchIds q1 = BatchIds.forRun(Optional.empty(), "q1", 0, OptionalLong.empty());
    BatchIds q2 = BatchIds.forRun(Optional.of(stored(q1)), "q2", 3, OptionalLong.of(5));
    // q2's segment was stored with nothing committed above 5 (the table stayed at 5).
    BatchIds q3 = BatchIds.forRun(Optional.of(stored(q2)), "q3", 0, OptionalLong.of(5));
    assertThat(q3.history()).containsExactly(new BatchIds.Finished("q2", 2), new BatchIds.Finished("q1", 4));
    BatchIds q2Back = BatchIds.forRun(Optional.of(stored(q3)), "q2", 3, OptionalLong.of(5));
    assertThat(q2Back.checkpointOf(3)).hasValue(6);
  }

  @Test
  void theHistoryKeepsTheNewestQueries() {
    BatchIds ids = BatchIds.forRun(Optional.empty(), "q0", 0, OptionalLong.empty());
    long watermark = 0;
    for (int q = 1; q <= BatchIds.HISTORY + 5; q++) {
      watermark += 2; // each query commits two batches
      ids = BatchIds.forRun(Optional.of(stored(ids)), "q" + q, 0, OptionalLong.of(watermark));
    }
    assertThat(ids.history()).hasSize(BatchIds.HISTORY);
    assertThat(ids.history().get(0).queryId()).isEqualTo("q" + (BatchIds.HISTORY + 4));
  }

  @Test
  void storedValuesAreVersionedAndCheckedWithTheKeyInTheMessage() {
    BatchIds ids = BatchIds.parse(JOB, "1 q2:3:7 q1:4 -:9");
    assertThat(ids.current()).isEqualTo(new BatchIds.Segment("q2", 3, 7));
    assertThat(ids.value()).isEqualTo("1 q2:3:7 q1:4 -:9");
    assertThatThrownBy(() -> BatchIds.parse(JOB, "2 q2:3:7"))
        .hasMessageContaining("Unknown version 2 of lakecommit.spark.batches.pinned");
    assertThatThrownBy(() -> BatchIds.parse(JOB, "1 q2:x:7"))
        .hasMessageContaining("Corrupt lakecommit.spark.batches.pinned=1 q2:x:7");
    assertThatThrownBy(() -> BatchIds.parse(JOB, "1")).hasMessageContaining("Corrupt");
    assertThatThrownBy(() -> BatchIds.forRun(Optional.empty(), "a:b", 0, OptionalLong.empty()))
        .hasMessageContaining("Invalid query id: 'a:b'");
  }

  /**
   * Random histories of queries of one pinned job, each run committing some batches and sometimes stopping
   * between a table commit and Spark's commit log (the next run of the query replays that batch): every batch
   * that was committed maps to a checkpoint the table holds (skipped), every new batch above it (written).
   */
  @Test
  void noNewBatchIsEverTakenForCommittedAndNoCommittedBatchIsWrittenAgain() {
    long seed = TestScale.seed();
    Random random = new Random(seed);
    for (int trial = 0; trial < TestScale.pick(200, 5_000); trial++) {
      Map<String, Long> nextBatch = new HashMap<>(); // per query: the first batch Spark has not recorded
      Map<String, Long> lastWritten = new HashMap<>(); // per query: the last batch committed to the table
      String stored = null;
      long watermark = 0;
      for (int run = 0; run < 12; run++) {
        String query = "q" + random.nextInt(4);
        long first = nextBatch.getOrDefault(query, 0L);
        BatchIds ids = BatchIds.forRun(Optional.ofNullable(stored).map(v -> BatchIds.parse(JOB, v)), query, first,
            watermark == 0 ? OptionalLong.empty() : OptionalLong.of(watermark));
        int batches = random.nextInt(4);
        for (long batch = first; batch < first + batches; batch++) {
          OptionalLong checkpoint = ids.checkpointOf(batch);
          boolean committedBefore = batch <= lastWritten.getOrDefault(query, -1L);
          String context = "seed " + seed + ", trial " + trial + ", run " + run + ", " + query + " batch " + batch;
          if (committedBefore) {
            assertThat(checkpoint.isEmpty() || checkpoint.getAsLong() <= watermark).as(context).isTrue();
            continue;
          }
          assertThat(checkpoint).as(context).isPresent();
          assertThat(checkpoint.getAsLong()).as(context).isGreaterThan(watermark);
          watermark = checkpoint.getAsLong();
          lastWritten.put(query, batch);
          stored = ids.value(); // written with the commit
        }
        // Spark's commit log records every batch of the run, or all but the last (a stop in between).
        boolean lostLast = batches > 0 && random.nextBoolean();
        nextBatch.put(query, first + batches - (lostLast ? 1 : 0));
      }
    }
  }

  private static BatchIds stored(BatchIds ids) {
    return BatchIds.parse(JOB, ids.value());
  }
}
