package dev.lakecommit.flink;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.lakecommit.core.testing.LoopbackPorts;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ProcessBuilder.Redirect;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessSpec;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessUtils;
import org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint;
import org.apache.flink.runtime.taskexecutor.TaskManagerRunner;
import org.apache.flink.runtime.util.config.memory.ProcessMemoryUtils;

/**
 * A Flink standalone session cluster of real processes for tests: one JobManager and TaskManagers, each a child JVM
 * started from the test classpath with Flink's own entry points ({@link StandaloneSessionClusterEntrypoint}, {@link
 * TaskManagerRunner}), all on 127.0.0.1, configured by a {@code config.yaml} of the test's. TaskManagers get their
 * memory as Flink's start scripts give it (JVM options and dynamic properties computed from the configuration), a
 * resource id {@code tm-<n>} and a log {@code tm-<n>.log}. Jobs are submitted through the REST endpoint ({@link
 * #restPort()}); {@link #rest} reads it.
 *
 * <p>No child outlives the test JVM: {@link #close()} and a shutdown hook SIGKILL them, and each halts by itself when
 * its parent is gone ({@link FlinkChildMain}).
 */
final class FlinkProcessCluster implements AutoCloseable {
  private static final Duration STARTUP = Duration.ofSeconds(120);
  private static final ObjectMapper JSON = new ObjectMapper();
  /** Thread names of tasks (their subtask index) and of checkpointing, in a thread dump's header line. */
  private static final java.util.regex.Pattern TASK_THREAD =
      java.util.regex.Pattern.compile("\\(\\d+/\\d+\\)|[Cc]heckpoint|[Ll]akecommit|Source|Sink");

  private final Path dir;
  private final Path confDir;
  private final Configuration conf;
  private final Map<String, String> yaml = new LinkedHashMap<>();
  private int restPort;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final Map<String, Process> taskManagers = new LinkedHashMap<>();
  private final Thread reaper = new Thread(this::destroyAll, "flink-child-jvm-reaper");
  private Process jobManager;
  private int started;

  /**
   * Writes the configuration: ports on 127.0.0.1, {@code slots} per TaskManager spread evenly, fast heartbeats (a
   * killed TaskManager is declared dead within seconds), small memory, and {@code settings} on top.
   */
  FlinkProcessCluster(Path dir, int slots, Map<String, String> settings) {
    this.dir = dir;
    this.confDir = dir.resolve("conf");
    yaml.put("jobmanager.rpc.address", "127.0.0.1");
    yaml.put("jobmanager.bind-host", "127.0.0.1");
    yaml.put("rest.address", "127.0.0.1");
    yaml.put("rest.bind-address", "127.0.0.1");
    yaml.put("taskmanager.host", "127.0.0.1");
    yaml.put("taskmanager.bind-host", "127.0.0.1");
    yaml.put("taskmanager.numberOfTaskSlots", String.valueOf(slots));
    yaml.put("taskmanager.load-balance.mode", "SLOTS");
    yaml.put("heartbeat.interval", "1000");
    yaml.put("heartbeat.timeout", "8000");
    yaml.put("heartbeat.rpc-failure-threshold", "1");
    // the REST answers a test polls (deployments, checkpoints, metrics) at most half a second old, not 3 to 10 s
    yaml.put("web.refresh-interval", "500 ms");
    yaml.put("metrics.fetcher.update-interval", "500 ms");
    // The metric fetcher starts no fetch while one is in flight, and one that asks a SIGKILLed TaskManager for its
    // metrics waits this long (default 10 minutes): numRestarts would stand still that long after a kill.
    yaml.put("web.timeout", "30 s");
    // A TaskManager's RPC system must start within this (default: the 10 s ask timeout); on a loaded 2-core machine
    // one took longer and exited, and the cluster never got its TaskManagers.
    yaml.put("pekko.startup-timeout", "60 s");
    yaml.put("taskmanager.memory.process.size", "1024m");
    yaml.put("taskmanager.memory.framework.heap.size", "64m");
    yaml.put("taskmanager.memory.framework.off-heap.size", "64m");
    yaml.put("taskmanager.memory.managed.size", "64m");
    yaml.put("taskmanager.memory.network.min", "32m");
    yaml.put("taskmanager.memory.network.max", "32m");
    yaml.put("taskmanager.memory.jvm-metaspace.size", "160m");
    yaml.put("io.tmp.dirs", dir.resolve("tmp").toString());
    yaml.putAll(settings);
    choosePorts();
    this.conf = Configuration.fromMap(yaml);
    Runtime.getRuntime().addShutdownHook(reaper);
  }

  /**
   * Picks free loopback ports for the JobManager's RPC and REST endpoints and writes the configuration. A port is
   * free when picked, not necessarily when the JobManager binds it: see {@link #start}.
   */
  private void choosePorts() {
    this.restPort = freePort();
    yaml.put("jobmanager.rpc.port", String.valueOf(freePort()));
    yaml.put("rest.port", String.valueOf(restPort));
    try {
      Files.createDirectories(confDir);
      Files.createDirectories(dir.resolve("tmp"));
      StringBuilder text = new StringBuilder();
      yaml.forEach((k, v) -> text.append(k).append(": ").append(quote(v)).append('\n'));
      Files.writeString(confDir.resolve("config.yaml"), text.toString(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot write the Flink configuration under " + confDir, e);
    }
  }

  private static String quote(String value) {
    return "'" + value.replace("'", "''") + "'";
  }

  int restPort() {
    return restPort;
  }

  /**
   * Starts the JobManager and {@code count} TaskManagers; returns once all TaskManagers are registered. A port
   * picked free can be taken (by an outgoing connection's ephemeral port) before the JobManager binds it; then the
   * JobManager exits with a {@code BindException}, and the cluster starts again on other ports, at most three times
   * (the earlier attempts' logs are kept as {@code jm-attempt-N.log}).
   */
  FlinkProcessCluster start(int count) {
    for (int attempt = 1; ; attempt++) {
      jobManager = launch("jm", List.of("-Xmx384m"),
          StandaloneSessionClusterEntrypoint.class, List.of("--configDir", confDir.toString()));
      for (int i = 0; i < count; i++) {
        startTaskManager();
      }
      try {
        awaitTaskManagers(count);
        return this;
      } catch (IllegalStateException e) {
        if (attempt >= 3 || !lostAPort()) {
          throw e;
        }
        System.out.printf("FlinkProcessCluster: the JobManager lost a port it was given (attempt %d); starting again"
            + " on other ports%n", attempt);
        restart(attempt);
      }
    }
  }

  /** Whether the JobManager has exited because a port it was given was taken ({@code BindException} in its log). */
  private boolean lostAPort() {
    if (jobManager.isAlive()) {
      return false;
    }
    try {
      return Files.readString(dir.resolve("jm.log"), StandardCharsets.UTF_8).contains("java.net.BindException");
    } catch (IOException e) {
      return false;
    }
  }

  /** Stops every process of a failed start, keeps its logs aside and picks new ports. */
  private synchronized void restart(int attempt) {
    destroyAndWait();
    try (var logs = Files.list(dir)) {
      for (Path log : logs.filter(f -> f.getFileName().toString().matches("(jm|tm-\\d+)\\.log")).toList()) {
        String name = log.getFileName().toString();
        Files.move(log, dir.resolve(name.replace(".log", "-attempt-" + attempt + ".log")));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot keep the logs of the failed start in " + dir, e);
    }
    taskManagers.clear();
    started = 0;
    jobManager = null;
    choosePorts();
  }

  /** Starts one more TaskManager process; returns its resource id. */
  synchronized String startTaskManager() {
    String id = "tm-" + started++;
    TaskExecutorProcessSpec spec = TaskExecutorProcessUtils.processSpecFromConfig(conf);
    List<String> jvm = new ArrayList<>(Arrays.asList(ProcessMemoryUtils.generateJvmParametersStr(spec).split(" ")));
    List<String> args = new ArrayList<>(List.of("--configDir", confDir.toString(), "-D",
        "taskmanager.resource-id=" + id));
    args.addAll(Arrays.asList(TaskExecutorProcessUtils.generateDynamicConfigsStr(spec).trim().split(" ")));
    taskManagers.put(id, launch(id, jvm, TaskManagerRunner.class, args));
    return id;
  }

  /** The TaskManagers started and not killed, by resource id. */
  synchronized List<String> liveTaskManagers() {
    return taskManagers.entrySet().stream().filter(e -> e.getValue().isAlive()).map(Map.Entry::getKey).toList();
  }

  /**
   * SIGKILL of a live TaskManager process; returns once it is gone. A TaskManager that is already gone is an error:
   * the kill would inject no fault.
   */
  synchronized void kill(String taskManager) throws InterruptedException {
    Process process = taskManagers.get(taskManager);
    if (process == null) {
      throw new IllegalArgumentException("No TaskManager " + taskManager + " (have " + taskManagers.keySet() + ")");
    }
    if (!process.isAlive()) {
      throw new IllegalStateException("TaskManager " + taskManager + " (pid " + process.pid() + ") is already gone"
          + " (exit status " + process.exitValue() + "); live ones: " + liveTaskManagers());
    }
    if (!process.destroyForcibly().waitFor(30, TimeUnit.SECONDS)) {
      throw new IllegalStateException("TaskManager " + taskManager + " (pid " + process.pid() + ") survived SIGKILL");
    }
  }

  /**
   * For a test that fails because a job stopped making progress, what a CI log can keep: per live JobManager and
   * TaskManager process, the stacks of its task and checkpoint threads ({@code jcmd <pid> Thread.print}, bounded in
   * time and lines) and the last warnings and errors of its log; and the job's checkpoint statistics. Never throws.
   */
  synchronized String diagnose(String jobId) {
    StringBuilder text = new StringBuilder();
    Map<String, Process> live = new LinkedHashMap<>();
    if (jobManager != null && jobManager.isAlive()) {
      live.put("jm", jobManager);
    }
    taskManagers.forEach((name, process) -> {
      if (process.isAlive()) {
        live.put(name, process);
      }
    });
    String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
    live.forEach((name, process) -> {
      text.append("=== ").append(name).append(" (pid ").append(process.pid()).append(")\n");
      try {
        Path dump = Files.createTempFile(dir, name + "-threads-", ".txt");
        Process run = new ProcessBuilder(jcmd, String.valueOf(process.pid()), "Thread.print")
            .redirectErrorStream(true).redirectOutput(dump.toFile()).start();
        if (!run.waitFor(30, TimeUnit.SECONDS)) {
          run.destroyForcibly();
        }
        int lines = 0;
        int threads = 0;
        int shown = 0;
        for (String stanza : Files.readString(dump).split("\n\n")) {
          String header = stanza.lines().findFirst().orElse("");
          if (!header.startsWith("\"")) {
            continue;
          }
          threads++;
          if (lines < 600 && TASK_THREAD.matcher(header).find()) {
            text.append(stanza).append("\n\n");
            lines += stanza.split("\n").length;
            shown++;
          }
        }
        text.append("(").append(threads).append(" threads, ").append(shown).append(" shown)\n");
        List<String> log = Files.readAllLines(dir.resolve(name + ".log"), StandardCharsets.UTF_8).stream()
            .filter(l -> l.contains("ERROR") || l.contains("WARN") || l.contains("Exception")).toList();
        text.append("--- last warnings and errors of ").append(name).append(".log\n");
        log.subList(Math.max(0, log.size() - 40), log.size()).forEach(l -> text.append(l).append('\n'));
      } catch (IOException | RuntimeException e) {
        text.append("no diagnosis: ").append(e).append('\n');
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    try {
      JsonNode checkpoints = rest("/jobs/" + jobId + "/checkpoints");
      text.append("=== checkpoints: counts ").append(checkpoints.path("counts")).append("; recent ");
      checkpoints.path("history").forEach(c -> text.append(c.path("id").asText()).append('=')
          .append(c.path("status").asText()).append(' '));
      text.append("\n=== vertices ");
      rest("/jobs/" + jobId).path("vertices").forEach(v -> text.append(v.path("name").asText()).append(':')
          .append(v.path("status").asText()).append(' '));
      text.append('\n');
    } catch (IOException | RuntimeException e) {
      String message = String.valueOf(e);
      text.append("no checkpoint statistics: ").append(message, 0, Math.min(message.length(), 200)).append('\n');
    }
    return text.toString();
  }

  /** Polls (bounded) until {@code count} TaskManagers are registered and alive in the JobManager's view. */
  void awaitTaskManagers(int count) {
    long deadline = System.nanoTime() + STARTUP.toNanos();
    String seen = "no answer";
    while (System.nanoTime() < deadline) {
      checkJobManagerAlive();
      try {
        JsonNode overview = rest("/overview");
        seen = overview.toString();
        if (overview.path("taskmanagers").asInt() >= count) {
          return;
        }
      } catch (IOException e) {
        seen = e.toString();
      }
      pause(200);
    }
    throw new IllegalStateException("The Flink cluster in " + dir + " did not get " + count + " TaskManagers within "
        + STARTUP.toSeconds() + " s (" + seen + "); see the logs there");
  }

  /** A GET of the REST API, e.g. {@code /jobs/<id>/checkpoints}. */
  JsonNode rest(String path) throws IOException {
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + restPort + path))
        .timeout(Duration.ofSeconds(10)).GET().build();
    try {
      HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) {
        throw new IOException("GET " + path + ": HTTP " + response.statusCode() + " " + response.body());
      }
      return JSON.readTree(response.body());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("Interrupted: GET " + path, e);
    }
  }

  /** A POST of a JSON body to the REST API; the JSON answer. */
  JsonNode post(String path, Map<String, Object> body) throws IOException {
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + restPort + path))
        .timeout(Duration.ofSeconds(10)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))).build();
    try {
      HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200 && response.statusCode() != 202) {
        throw new IOException("POST " + path + ": HTTP " + response.statusCode() + " " + response.body());
      }
      return JSON.readTree(response.body());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("Interrupted: POST " + path, e);
    }
  }

  /**
   * Stop-with-savepoint through the REST endpoint ({@code POST /jobs/<id>/stop}, no drain: the sources stop, a
   * synchronous savepoint is taken, its commit is made and the job finishes); returns the savepoint's location once
   * it is complete.
   */
  String stopWithSavepoint(String jobId, Path directory, Duration timeout) throws IOException {
    JsonNode trigger = post("/jobs/" + jobId + "/stop",
        Map.of("targetDirectory", directory.toUri().toString(), "drain", false));
    return savepointLocation(jobId, trigger.path("request-id").asText(), timeout);
  }

  /**
   * Cancel-with-savepoint through the REST endpoint ({@code POST /jobs/<id>/savepoints} with {@code cancel-job}:
   * a savepoint, then the job is cancelled, possibly before the savepoint's commit is made); returns the
   * savepoint's location once it is complete.
   */
  String cancelWithSavepoint(String jobId, Path directory, Duration timeout) throws IOException {
    JsonNode trigger = post("/jobs/" + jobId + "/savepoints",
        Map.of("target-directory", directory.toUri().toString(), "cancel-job", true));
    return savepointLocation(jobId, trigger.path("request-id").asText(), timeout);
  }

  private String savepointLocation(String jobId, String triggerId, Duration timeout) throws IOException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      JsonNode answer = rest("/jobs/" + jobId + "/savepoints/" + triggerId);
      if (answer.path("status").path("id").asText().equals("COMPLETED")) {
        JsonNode operation = answer.path("operation");
        if (operation.hasNonNull("location")) {
          return operation.path("location").asText();
        }
        throw new IOException("The savepoint of job " + jobId + " failed: " + operation.path("failure-cause"));
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("The savepoint of job " + jobId + " did not complete within " + timeout + ": "
            + answer);
      }
      pause(100);   // polling the REST endpoint
    }
  }

  /** Cancels the job ({@code PATCH /jobs/<id>}); returns once the JobManager accepted the request. */
  void cancel(String jobId) throws IOException {
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + restPort + "/jobs/" + jobId))
        .timeout(Duration.ofSeconds(10)).method("PATCH", HttpRequest.BodyPublishers.noBody()).build();
    try {
      HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200 && response.statusCode() != 202) {
        throw new IOException("PATCH /jobs/" + jobId + ": HTTP " + response.statusCode() + " " + response.body());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("Interrupted: PATCH /jobs/" + jobId, e);
    }
  }

  /** The job's status as the JobManager reports it ({@code RUNNING}, {@code FAILED}, ...). */
  String jobStatus(String jobId) throws IOException {
    return rest("/jobs/" + jobId).path("state").asText();
  }

  /** Polls (bounded) until the job is in a terminal state; returns it. */
  String awaitTerminal(String jobId, Duration timeout) throws IOException {
    long deadline = System.nanoTime() + timeout.toNanos();
    String status;
    while (!List.of("FINISHED", "FAILED", "CANCELED").contains(status = jobStatus(jobId))) {
      if (System.nanoTime() > deadline) {
        throw new IOException("Job " + jobId + " still " + status + " after " + timeout);
      }
      pause(100);   // polling the REST endpoint
    }
    return status;
  }

  /** The value of a job metric, e.g. {@code numRestarts}; -1 if the JobManager does not report it (yet). */
  long jobMetric(String jobId, String metric) throws IOException {
    for (JsonNode node : rest("/jobs/" + jobId + "/metrics?get=" + metric)) {
      return node.path("value").asLong(-1);
    }
    return -1;
  }

  /**
   * Lines of the TaskManagers' logs (those of killed ones included) that contain every one of {@code texts}: what
   * the job's tasks met, across restarts that reset their metrics.
   */
  long taskManagerLogLines(String... texts) throws IOException {
    long count = 0;
    List<String> names;
    synchronized (this) {
      names = new ArrayList<>(taskManagers.keySet());
    }
    for (String name : names) {
      Path log = dir.resolve(name + ".log");
      if (!Files.exists(log)) {
        continue;
      }
      try (var lines = Files.lines(log, StandardCharsets.ISO_8859_1)) {   // any byte decodes
        count += lines.filter(line -> Arrays.stream(texts).allMatch(line::contains)).count();
      }
    }
    return count;
  }

  private void checkJobManagerAlive() {
    if (jobManager != null && !jobManager.isAlive()) {
      throw new IllegalStateException("The Flink JobManager exited with status " + jobManager.exitValue()
          + "; see " + dir.resolve("jm.log"));
    }
  }

  private Process launch(String name, List<String> jvmOptions, Class<?> entry, List<String> args) {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(jvmOptions);
    command.addAll(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
        "-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
        "-cp", System.getProperty("java.class.path"), FlinkChildMain.class.getName(),
        String.valueOf(ProcessHandle.current().pid()), entry.getName()));
    command.addAll(args);
    try {
      return new ProcessBuilder(command).redirectErrorStream(true)
          .redirectOutput(Redirect.appendTo(dir.resolve(name + ".log").toFile())).start();
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot start the Flink process " + name, e);
    }
  }

  private static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while waiting for the Flink cluster", e);
    }
  }

  private static int freePort() {
    return LoopbackPorts.reserve();
  }

  private synchronized void destroyAll() {
    taskManagers.values().forEach(Process::destroyForcibly);
    if (jobManager != null) {
      jobManager.destroyForcibly();
    }
  }

  /** SIGKILL of every process; returns once all are gone. */
  private synchronized void destroyAndWait() {
    destroyAll();
    for (Process p : taskManagers.values()) {
      p.onExit().join();
    }
    if (jobManager != null) {
      jobManager.onExit().join();
    }
  }

  @Override
  public synchronized void close() {
    destroyAndWait();
    try {
      Runtime.getRuntime().removeShutdownHook(reaper);
    } catch (IllegalStateException shuttingDown) {
      // the hook runs anyway
    }
  }
}
