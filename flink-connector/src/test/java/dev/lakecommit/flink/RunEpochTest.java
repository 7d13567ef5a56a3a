package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RetryPolicy;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import dev.lakecommit.staging.WriterManifest;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.flink.api.common.TaskInfoImpl;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.util.InstantiationUtil;
import org.apache.iceberg.Table;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The run epoch plumbing of the Flink sink: one claim per translation of the sink, shipped to the tasks inside the
 * sink; writers name files with the epoch and Flink's attempt; a restored writer never stages (or deletes) a
 * committed file's name; a fenced committer commits nothing.
 */
class RunEpochTest {
  private static final String TABLE = "db.epochs";

  @TempDir
  Path dir;

  private LakecommitFlinkSink sink(String jobName) {
    String warehouse = dir.toString();
    return LakecommitFlinkSink.forRowData(TestJobs.ROW_TYPE)
        .iceberg(() -> IcebergFlinkSinkIT.config(warehouse, TABLE))
        .jobName(jobName)
        .build();
  }

  private Table table() {
    return IcebergFlinkSinkIT.load(dir.toString(), TABLE);
  }

  @Test
  void everyTranslationClaimsANewEpochThatTravelsWithTheSink() throws Exception {
    LakecommitFlinkSink sink = sink("translated");
    assertThat(sink.epoch()).as("building the sink claims nothing").isZero();
    assertThat(table().properties()).doesNotContainKey(RunEpoch.key(sink.jobId()));

    for (long run = 1; run <= 2; run++) {
      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
      TestJobs.boundedRows(env, "translated", 0, 10, 0, 1).sinkTo(sink).uid("lakecommit-sink");
      env.getStreamGraph();
      assertThat(sink.epoch()).as("epoch after translation %s", run).isEqualTo(run);
      assertThat(RunEpoch.parse(sink.jobId(), table().properties().get(RunEpoch.key(sink.jobId()))).epoch())
          .isEqualTo(run);
      // Flink ships the sink to its tasks with Java serialization: the claim goes with it.
      assertThat(InstantiationUtil.clone(sink).epoch()).isEqualTo(run);
    }
  }

  @Test
  void writersNameTheirFilesWithTheRunEpochAndFlinkAttempt() throws Exception {
    LakecommitFlinkSink sink = sink("names");
    sink.claimRunEpoch();
    long epoch = sink.claimRunEpoch();
    assertThat(epoch).isEqualTo(2);
    SinkRecipe target = target();
    LakecommitWriter writer = LakecommitWriter.open(target, TestJobs.ROW_TYPE, sink.jobId(), epoch,
        context(1, 2, 3, OptionalLong.empty()), List.of());
    write(writer, 0, 50);
    StagingManifest manifest = single(writer.prepareCommit());
    writer.close();
    assertThat(manifest.checkpointId()).isEqualTo(1);
    assertThat(manifest.attempt()).isEqualTo(3);
    assertThat(manifest.files()).isNotEmpty().allSatisfy(file -> assertThat(fileName(file))
        .startsWith(sink.jobId().value() + "-1-e2-1-3-"));
  }

  @Test
  void aWriterWithoutAnEpochRefusesToStage() {
    LakecommitFlinkSink sink = sink("untranslated");
    assertThatThrownBy(() -> LakecommitWriter.open(target(), TestJobs.ROW_TYPE, sink.jobId(), 0,
        context(0, 1, 0, OptionalLong.empty()), List.of()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("No run epoch was claimed for job " + sink.jobId())
        .hasMessageContaining(TABLE);
  }

  /**
   * Issue 14 scenario 2 without a cluster: run 1 commits checkpoints 1 and 2; run 2 restores its writer from the
   * state of checkpoint 1 (an old savepoint), so it names files after checkpoint 2 with attempt 0 — the checkpoint,
   * writer and attempt of files run 1 committed. One restored writer prepares (its names must differ from the
   * committed ones), another is torn down with open files (abortPrepare); run 1's committer, fenced, commits
   * nothing more. Every committed row and file is still there.
   */
  @Test
  void aWriterRestoredFromAnOldSavepointNeverTouchesCommittedFiles() throws Exception {
    LakecommitFlinkSink sink = sink("restored");
    JobId job = sink.jobId();
    SinkRecipe target = target();
    long first = sink.claimRunEpoch();
    LakecommitCommitter committer1 = new LakecommitCommitter(target, TestJobs.ROW_TYPE, RetryPolicy.defaults(),
        job, first, OptionalLong.empty(), TestJobs.noMetrics());
    List<String> committed = new ArrayList<>();

    LakecommitWriter writer1 = LakecommitWriter.open(target, TestJobs.ROW_TYPE, job, first,
        context(0, 1, 0, OptionalLong.empty()), List.of());
    write(writer1, 0, 100);
    StagingManifest m1 = single(writer1.prepareCommit());
    List<WriterState> savepoint = writer1.snapshotState(1);
    commit(committer1, target, job, 1, m1, committed);
    write(writer1, 100, 100);
    StagingManifest m2 = single(writer1.prepareCommit());
    writer1.snapshotState(2);
    commit(committer1, target, job, 2, m2, committed);
    writer1.close();
    Set<String> committedNames = new HashSet<>();
    committed.forEach(path -> committedNames.add(path.substring(path.lastIndexOf('/') + 1)));

    long second = sink.claimRunEpoch();
    assertThat(second).isGreaterThan(first);
    LakecommitWriter prepared = LakecommitWriter.open(target, TestJobs.ROW_TYPE, job, second,
        context(0, 1, 0, OptionalLong.of(1)), savepoint);
    write(prepared, 1_000, 100);
    StagingManifest restaged = single(prepared.prepareCommit());
    prepared.close();
    assertThat(restaged.checkpointId()).as("the restored writer names files after run 1's second checkpoint")
        .isEqualTo(m2.checkpointId());
    assertThat(restaged.attempt()).isEqualTo(m2.attempt());
    assertThat(restaged.files()).allSatisfy(file -> assertThat(fileName(file)).isNotIn(committedNames)
        .contains("-e" + second + "-"));

    LakecommitWriter tornDown = LakecommitWriter.open(target, TestJobs.ROW_TYPE, job, second,
        context(0, 1, 0, OptionalLong.of(1)), savepoint);
    write(tornDown, 2_000, 100);
    tornDown.close();

    List<String> signals = commitSignals(committer1, target, job, 3, restaged);
    assertThat(signals).containsExactly("failed-unknown");
    committer1.close();

    Table table = table();
    assertThat(table.currentSnapshot().summary()).containsEntry(CommitId.CHECKPOINT_ID_KEY, "2");
    assertThat(TestJobs.missingFiles(table)).as("data files referenced by snapshots but gone").isEmpty();
    for (String path : committed) {
      assertThat(table.io().newInputFile(path).exists()).as("committed file %s", path).isTrue();
    }
    TestJobs.Audit audit = IcebergFlinkSinkIT.audit(dir.toString(), TABLE, TestJobs.range(0, 200));
    assertThat(audit.rows()).isEqualTo(200);
    assertThat(audit.duplicates()).isZero();
    assertThat(audit.losses()).isZero();
  }

  private SinkRecipe target() {
    String warehouse = dir.toString();
    return SinkRecipe.iceberg(() -> IcebergFlinkSinkIT.config(warehouse, TABLE));
  }

  private static void commit(LakecommitCommitter committer, SinkRecipe target, JobId job, long checkpoint,
      StagingManifest manifest, List<String> committed) throws Exception {
    assertThat(commitSignals(committer, target, job, checkpoint, manifest)).as("commit of checkpoint %s", checkpoint)
        .isEmpty();
    manifest.files().forEach(file -> committed.add(file.path()));
  }

  private static List<String> commitSignals(LakecommitCommitter committer, SinkRecipe target, JobId job,
      long checkpoint, StagingManifest manifest) throws Exception {
    CommitId id = new CommitId(job, checkpoint);
    StagingManifest restamped = new StagingManifest(job, checkpoint, manifest.writerIndex(), manifest.attempt(),
        manifest.files(), manifest.icebergManifest());
    Object combined;
    try (SinkAggregatedCommitter<WriterManifest, Object> combiner =
        target.open(TestJobs.ROW_TYPE).committers().createAggregatedCommitter()) {
      combined = combiner.combine(id, List.of(restamped));
    }
    ReplayTest.Request request = new ReplayTest.Request(new CheckpointCommittable(checkpoint, id, combined, ""));
    committer.commit(List.of(request));
    return request.signals;
  }

  private static void write(LakecommitWriter writer, long from, long count) throws Exception {
    for (long i = from; i < from + count; i++) {
      writer.write(GenericRowData.of(i, StringData.fromString(TestJobs.partitionOf(i)),
          StringData.fromString("row-" + i)), null);
    }
  }

  private static StagingManifest single(Collection<WriterManifest> manifests) {
    assertThat(manifests).hasSize(1);
    return (StagingManifest) manifests.iterator().next();
  }

  private static String fileName(StagedFile file) {
    return file.path().substring(file.path().lastIndexOf('/') + 1);
  }

  /** The two things a Lakecommit writer asks of Flink's init context: task info and the restored checkpoint. */
  static WriterInitContext context(int subtask, int parallelism, int attempt, OptionalLong restored) {
    TaskInfoImpl task = new TaskInfoImpl("lakecommit-writer", 128, subtask, parallelism, attempt);
    return (WriterInitContext) Proxy.newProxyInstance(RunEpochTest.class.getClassLoader(),
        new Class<?>[] {WriterInitContext.class}, (proxy, method, args) -> switch (method.getName()) {
          case "getTaskInfo" -> task;
          case "getRestoredCheckpointId" -> restored;
          case "toString" -> "WriterInitContext(" + subtask + "/" + parallelism + ", attempt " + attempt + ")";
          default -> throw new UnsupportedOperationException(method.getName());
        });
  }
}
