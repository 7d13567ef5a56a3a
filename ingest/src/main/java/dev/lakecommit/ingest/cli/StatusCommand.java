package dev.lakecommit.ingest.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.runtime.CheckpointRecord;
import dev.lakecommit.core.runtime.CheckpointStore;
import dev.lakecommit.ingest.source.FileSource;
import dev.lakecommit.ingest.source.KafkaInput;
import dev.lakecommit.ingest.source.KafkaSource;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code lakecommit status}: jobs of a table, their last committed checkpoint, and a job's pending ones. */
@Command(name = "status", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Shows the jobs that committed to a table (Iceberg, or Hive with --target hive), the last "
        + "committed checkpoint of each, and, for a job, its newest durable checkpoint and the checkpoints still pending commit.")
public final class StatusCommand implements Callable<Integer> {
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
    Map<String, Object> offsets = committedOffsets(positions);
    if (!offsets.isEmpty()) {
      status.put("committed-offsets", offsets);
    }
    if (job.jobId != null) {
      status.put("job", jobStatus(job.requiredJobId(), committed.get(job.jobId)));
    }
    if (json) {
      out.println(new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(status));
    } else {
      out.println(description.headline());
      if (committed.isEmpty()) {
        out.println("no Lakecommit job has committed to this table");
      }
      committed.forEach((id, checkpoint) -> out.printf("  job %s: last committed checkpoint %d%s%s%n", id,
          checkpoint, runs.containsKey(id) ? "; newest run: epoch " + runs.get(id) : "",
          positions.containsKey(id) ? "; committed offsets " + positions.get(id) : ""));
      offsets.forEach((id, partitions) -> {
        if (input != null) {
          out.printf("  job %s: %s%n", id, partitions);
        }
      });
      if (status.get("job") instanceof Map<?, ?> detail) {
        detail.forEach((k, v) -> out.printf("  %s: %s%n", k, v));
      }
    }
    out.flush();
    return 0;
  }

  /**
   * Each job's committed Kafka offsets, by partition; with {@code --input}, each partition's end offset and lag
   * (records behind the end) too.
   */
  private Map<String, Object> committedOffsets(Map<String, String> positions) throws java.io.IOException {
    Map<String, Object> byJob = new LinkedHashMap<>();
    Map<org.apache.kafka.common.TopicPartition, Long> end = Map.of();
    if (input != null && !positions.isEmpty()) {
      end = KafkaSource.endOffsets(KafkaInput.parse(input), kafkaProperties);
    }
    for (Map.Entry<String, String> job : positions.entrySet()) {
      Map<String, Object> partitions = new LinkedHashMap<>();
      long lag = 0;
      for (var entry : KafkaSource.committedOffsets(job.getValue()).entrySet()) {
        Long last = end.get(entry.getKey());
        if (last == null) {
          partitions.put(entry.getKey().toString(), entry.getValue());
        } else {
          Map<String, Long> detail = new LinkedHashMap<>();
          detail.put("committed", entry.getValue());
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
