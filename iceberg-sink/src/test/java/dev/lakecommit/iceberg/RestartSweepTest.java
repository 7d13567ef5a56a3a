package dev.lakecommit.iceberg;

import static dev.lakecommit.iceberg.TestTables.JOB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.core.runtime.StandaloneJob;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.FileInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A restart sweeps what earlier runs staged above the checkpoint it restores by listing those checkpoints only: an
 * Iceberg job's committed data files stay under its staging prefix, so a listing of the whole prefix would grow
 * with everything the job ever committed.
 */
class RestartSweepTest {
  @TempDir Path dir;

  /** The table's {@code FileIO} ({@code io-impl}), recording the prefixes it lists. */
  public static final class RecordingFileIO extends HadoopFileIO {
    static final List<String> LISTED = new CopyOnWriteArrayList<>();

    @Override
    public Iterable<FileInfo> listPrefix(String prefix) {
      LISTED.add(prefix);
      return super.listPrefix(prefix);
    }
  }

  @Test
  void aRestartListsTheCheckpointsAboveItsRestoreNotEverythingTheJobCommitted() throws Exception {
    IcebergSink<Record> sink = IcebergSink.forRecords(IcebergSinkConfig.builder()
        .catalogProperties(Map.of("type", "jdbc", "uri", "jdbc:sqlite:" + dir.resolve("catalog.db"),
            "jdbc.schema-version", "V1", "warehouse", dir.resolve("warehouse").toUri().toString(),
            "io-impl", RecordingFileIO.class.getName()))
        .catalogName("restart")
        .table("db.events")
        .createTable(TestTables.SCHEMA, List.of())
        .build());
    CheckpointStore store = new CheckpointStore(new LocalBlobStore(dir.resolve("checkpoints")));
    run(sink, store, 120);
    assertThat(TestTables.keyCounts(sink.table())).hasSize(120);

    RecordingFileIO.LISTED.clear();
    run(sink, store, 200);
    assertThat(RecordingFileIO.LISTED).as("prefixes listed by the second run")
        .doesNotContain(sink.layout().jobPrefix(JOB))
        .contains(sink.layout().checkpointPrefix(JOB, 7))
        .allSatisfy(prefix -> assertThat(prefix).startsWith(sink.layout().jobPrefix(JOB) + "ckpt-"));
    sink.table().refresh();
    assertThat(TestTables.keyCounts(sink.table())).hasSize(200).allSatisfy((k, n) -> assertThat(n).isOne());
  }

  private static void run(IcebergSink<Record> sink, CheckpointStore store, int records) throws Exception {
    StandaloneJob.builder(sink, IcebergCrashMatrixTest.records(records))
        .jobId(JOB)
        .checkpointStore(store)
        .parallelism(2)
        .checkpointEveryRecords(20)
        .build()
        .run();
  }
}
