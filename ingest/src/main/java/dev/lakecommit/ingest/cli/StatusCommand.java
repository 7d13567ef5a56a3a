package dev.lakecommit.ingest.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.CheckpointRecord;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.iceberg.CutCommitter;
import dev.lakecommit.iceberg.MultiTableSink;
import dev.lakecommit.ingest.source.FileSource;
import dev.lakecommit.ingest.source.KafkaInput;
import dev.lakecommit.ingest.source.KafkaSource;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.concurrent.Callable;
import org.apache.iceberg.data.Record;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code lakecommit status}: jobs of a table, their last committed checkpoint, and a job's pending ones. */
@Command(name = "status", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Shows the jobs that committed to a table (Iceberg, or Hive with --target hive), the last "
        + "committed checkpoint of each, and, for a job, its newest durable checkpoint and the checkpoints still pending commit."
        + " For a table per record (--table 'db.t_${col}' --job-id ID): the job's last cut in every table.")
public final class StatusCommand implements Callable<Integer> {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Spec picocli.CommandLine.Model.CommandSpec spec;

  @Mixin TableOptions table;

  @Mixin JobOptions job;

  @Option(names = "--json", description = "Print as JSON.")
  boolean json;

  @Option(names = "--input", paramLabel = "KAFKA_URI",
      description = "The Kafka topics the jobs read (kafka://host:9092/topic): also show each partition's lag "
          + "behind its end offset.")
  String input;

  @Option(names = {"-K", "--kafka-property"}, paramLabel = "KEY=VALUE",
      description = "Kafka consumer setting for --input (security, SASL/SSL).")
  Map<String, String> kafkaProperties = new LinkedHashMap<>();

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    if (table.table().contains("${")) {
      return routed(out);
    }
    TableAccess access = TableAccess.of(table);
    TableAccess.Description description = access.describe(null);
    SortedMap<String, CommitTarget.JobState> jobs;
    try (CommitTarget target = access.openTarget()) {
      jobs = target.jobs();
    }
    Map<String, Object> status = new LinkedHashMap<>();
    status.put("table", table.table());
    status.putAll(description.fields());
    Map<String, Long> committed = new LinkedHashMap<>();
    Map<String, String> runs = new LinkedHashMap<>();
    Map<String, String> positions = new LinkedHashMap<>();
    jobs.forEach((id, state) -> {
      state.committed().ifPresent(checkpoint -> committed.put(id, checkpoint));
      state.epoch().ifPresent(epoch -> runs.put(id, epoch.value()));
      state.sourcePosition().ifPresent(position -> positions.put(id, position));
    });
    status.put("runs", runs);
    status.put("jobs", committed);
    Map<String, Map<String, Object>> started = runInfos(runs.keySet());
    Map<String, String> startPositions = new LinkedHashMap<>();
    started.forEach((id, info) -> {
      if (!positions.containsKey(id) && info.get("start-offsets") instanceof String at) {
        startPositions.put(id, at);
      }
    });
    Map<org.apache.kafka.common.TopicPartition, Long> end =
        positions.isEmpty() && startPositions.isEmpty() ? Map.of() : endOffsets(status);
    Map<String, Object> offsets = offsets(positions, end, "committed");
    if (!offsets.isEmpty()) {
      status.put("committed-offsets", offsets);
    }
    Map<String, Object> startOffsets = offsets(startPositions, end, "start");
    if (!started.isEmpty()) {
      Map<String, Object> newest = new LinkedHashMap<>();
      started.forEach((id, info) -> {
        Map<String, Object> run = new LinkedHashMap<>(info);
        run.remove("start-offsets");
        if (startOffsets.containsKey(id)) {
          run.put("start-offsets", startOffsets.get(id));
        }
        newest.put(id, run);
      });
      status.put("newest-runs", newest);
    }
    if (job.jobId != null) {
      status.put("job", jobStatus(job.requiredJobId(), committed.get(job.jobId)));
    }
    if (json) {
      out.println(JSON.writer(SerializationFeature.INDENT_OUTPUT).writeValueAsString(status));
    } else {
      out.println(description.headline());
      if (committed.isEmpty()) {
        out.println("no Lakecommit job has committed to this table");
      }
      started.forEach((id, info) -> {
        if (!committed.containsKey(id)) {
          out.printf("  job %s: newest run started at %s (epoch %s), nothing committed yet%s%n", id, info.get("started"),
              runs.get(id), startPositions.containsKey(id) ? "; started at offsets " + startPositions.get(id) : "");
        }
        if (info.get("metrics") != null) {
          out.printf("  job %s: metrics at %s%n", id, info.get("metrics"));
        }
      });
      committed.forEach((id, checkpoint) -> out.printf("  job %s: last committed checkpoint %d%s%s%n", id,
          checkpoint, runs.containsKey(id) ? "; newest run: epoch " + runs.get(id) : "",
          positions.containsKey(id) ? "; committed offsets " + positions.get(id) : ""));
      if (input != null) {
        offsets.forEach((id, partitions) -> out.printf("  job %s: %s%n", id, partitions));
        startOffsets.forEach((id, partitions) -> out.printf("  job %s: %s%n", id, partitions));
      }
      if (status.get("job") instanceof Map<?, ?> detail) {
        detail.forEach((k, v) -> out.printf("  %s: %s%n", k, v));
      }
    }
    out.flush();
    return 0;
  }

  /**
   * A job that writes a table per record ({@code ingest --route-by}): its last cut (each table's snapshot), the
   * source position the cut holds (Kafka offsets, with lag against {@code --input}), and the job's checkpoints.
   */
  private int routed(PrintWriter out) throws Exception {
    if (job.jobId == null) {
      throw new IllegalArgumentException("Invalid option --table: '" + table.table() + "' names a table per record"
          + " (ingest --route-by): give the job's --job-id to see where it stands in all of them, or give one of"
          + " the tables");
    }
    if (table.target() != TableKind.ICEBERG) {
      throw new IllegalArgumentException("A table per record is of Iceberg tables (--target iceberg)");
    }
    JobId jobId = job.requiredJobId();
    Map<String, Object> status = new LinkedHashMap<>();
    status.put("table", table.table());
    status.put("job-id", jobId.value());
    Long checkpoint;
    try (MultiTableSink<Record> sink = CutCommand.reading(table)) {
      Optional<CutCommitter.Cut> cut = sink.lastCut(jobId,
          List.of(CommitId.sourcePositionKey(jobId)));
      checkpoint = cut.map(CutCommitter.Cut::checkpointId).orElse(null);
      status.put("mode", sink.cutMode());
      status.put("last-cut", checkpoint);
      status.put("tables", cut.isPresent() ? CutCommand.tables(sink.catalog(), cut.get()) : List.of());
      String position = cut.map(c -> c.properties().get(CommitId.sourcePositionKey(jobId)))
          .orElse(null);
      if (position != null) {
        status.put("committed-offsets", offsets(Map.of(jobId.value(), position), endOffsets(status), "committed")
            .get(jobId.value()));
      }
    }
    status.put("job", jobStatus(jobId, checkpoint));
    if (json) {
      out.println(JSON.writer(SerializationFeature.INDENT_OUTPUT).writeValueAsString(status));
    } else {
      @SuppressWarnings("unchecked")
      List<Map<String, Object>> tables = (List<Map<String, Object>>) status.get("tables");
      if (checkpoint == null) {
        out.printf("Job %s has committed no cut to the tables %s (%s)%n", jobId, table.table(), status.get("mode"));
      } else {
        out.printf("Job %s: the last cut is checkpoint %d over %d table(s) %s (%s)%n", jobId, checkpoint,
            tables.size(), table.table(), status.get("mode"));
      }
      CutCommand.print(out, tables);
      if (status.get("committed-offsets") != null) {
        out.printf("  committed offsets: %s%n", status.get("committed-offsets"));
      }
      if (status.get("job") instanceof Map<?, ?> detail) {
        detail.forEach((k, v) -> out.printf("  %s: %s%n", k, v));
      }
    }
    out.flush();
    return 0;
  }

  /**
   * The end offsets of {@code --input}'s partitions; none without {@code --input}, or when the brokers do not
   * answer (then {@code status} says so, and the table's side is still shown).
   */
  private Map<org.apache.kafka.common.TopicPartition, Long> endOffsets(Map<String, Object> status) {
    if (input == null) {
      return Map.of();
    }
    try {
      return KafkaSource.endOffsets(KafkaInput.parse(input), kafkaProperties);
    } catch (java.io.IOException | org.apache.kafka.common.KafkaException e) {
      status.put("end-offsets", "unavailable: " + e.getMessage());
      spec.commandLine().getErr().println("warning: no end offsets from " + input + " (" + e.getMessage() + ")");
      return Map.of();
    }
  }

  /**
   * Kafka offsets of each job ({@code label}: committed, or where the newest run started reading), by partition;
   * with the end offsets of {@code --input}, each partition's end offset and lag (records behind the end) too.
   */
  private static Map<String, Object> offsets(Map<String, String> positions,
      Map<org.apache.kafka.common.TopicPartition, Long> end, String label) {
    Map<String, Object> byJob = new LinkedHashMap<>();
    for (Map.Entry<String, String> job : positions.entrySet()) {
      Map<String, Object> partitions = new LinkedHashMap<>();
      long lag = 0;
      for (var entry : KafkaSource.committedOffsets(job.getValue()).entrySet()) {
        Long last = end.get(entry.getKey());
        if (last == null) {
          partitions.put(entry.getKey().toString(), entry.getValue());
        } else {
          Map<String, Long> detail = new LinkedHashMap<>();
          detail.put(label, entry.getValue());
          detail.put("end", last);
          detail.put("lag", Math.max(0, last - entry.getValue()));
          lag += Math.max(0, last - entry.getValue());
          partitions.put(entry.getKey().toString(), detail);
        }
      }
      if (!end.isEmpty()) {
        partitions.put("total-lag", lag);
      }
      byJob.put(job.getKey(), partitions);
    }
    return byJob;
  }

  /**
   * What the newest run of each job published when it started reading (start offsets, metrics endpoint), read
   * from the job's checkpoint location: the default one, or {@code --checkpoint-dir} for the job of
   * {@code --job-id}. A job whose checkpoints are elsewhere is left out.
   */
  private Map<String, Map<String, Object>> runInfos(java.util.Collection<String> jobs) throws java.io.IOException {
    Map<String, Map<String, Object>> infos = new LinkedHashMap<>();
    List<String> ids = new ArrayList<>(jobs);
    if (job.jobId != null && !ids.contains(job.jobId)) {
      ids.add(job.jobId);
    }
    for (String id : ids) {
      boolean named = id.equals(job.jobId);
      if (!named && job.checkpointDir != null) {
        continue;
      }
      java.util.Optional<CheckpointStore> store;
      try {
        store = job.existingCheckpointStore(JobId.of(id), table);
      } catch (IllegalArgumentException e) {
        if (named) {
          throw e;
        }
        continue;
      }
      java.util.Optional<byte[]> info = store.isEmpty() ? java.util.Optional.empty() : store.get().latestRunInfo();
      if (info.isPresent()) {
        try {
          if (JSON.readTree(info.get()) instanceof com.fasterxml.jackson.databind.node.ObjectNode node) {
            infos.put(id, JSON.convertValue(node, new com.fasterxml.jackson.core.type.TypeReference<>() {}));
          }
        } catch (java.io.IOException e) {
          // a run's note that cannot be read shows nothing: the table and the checkpoints still say where it is
        }
      }
    }
    return infos;
  }

  private Map<String, Object> jobStatus(JobId jobId, Long committed) throws java.io.IOException {
    Map<String, Object> detail = new LinkedHashMap<>();
    detail.put("job-id", jobId.value());
    detail.put("last-committed-checkpoint", committed);
    String location = job.checkpointLocation(jobId, table);
    detail.put("checkpoint-dir", location);
    java.util.Optional<CheckpointStore> existing = job.existingCheckpointStore(jobId, table);
    if (existing.isEmpty()) {
      detail.put("latest-checkpoint", null);
      return detail;
    }
    CheckpointStore store = existing.get();
    List<Long> ids = store.checkpointIds();
    if (ids.isEmpty()) {
      detail.put("latest-checkpoint", null);
      return detail;
    }
    CheckpointRecord latest = store.load(jobId, ids.get(0));
    detail.put("latest-checkpoint", latest.checkpointId());
    detail.put("records-read", latest.recordCount());
    boolean kafka = KafkaSource.isKafkaPosition(latest.sourcePosition());
    detail.put("source-position", kafka ? KafkaSource.describe(latest.sourcePosition())
        : FileSource.describe(latest.sourcePosition()));
    detail.put("diverted-records", kafka ? KafkaSource.divertedAt(latest.sourcePosition())
        : FileSource.divertedAt(latest.sourcePosition()));
    List<Long> pending = new ArrayList<>();
    for (long id : latest.pendingCommits().keySet()) {
      if (committed == null || id > committed) {
        pending.add(id);
      }
    }
    detail.put("pending-checkpoints", pending);
    return detail;
  }
}
