package dev.lakecommit.flink;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * SIGKILLs of TaskManager processes of a {@link FlinkProcessCluster} that run tasks of a given job, and the wait for
 * the job's restart that each must cause.
 *
 * <p>Why aimed: the shared cluster can have more slots than a job takes, and a kill of a TaskManager that holds no
 * task of the job restarts nothing. So the victim is taken from the job's deployment as the JobManager reports it
 * (each subtask's TaskManager, whose id is the resource id the harness gave the process), read while every subtask
 * runs and only from TaskManagers the harness knows to be alive (a REST answer that names a dead one is stale and is
 * read again). The restart is then judged from the same deployment, not from the {@code numRestarts} metric alone
 * (the JobManager's metric fetcher answers nothing on a job's first query, which made any restart count as one):
 * every subtask that ran on the victim runs again in a later attempt, on another TaskManager, and {@code numRestarts}
 * has grown past its value before the kill.
 */
final class TaskManagerKills {
  private TaskManagerKills() {}

  /** One subtask of the job as the REST endpoint reports it. */
  record Subtask(String vertex, int index, int attempt, String status, String taskManager) {
    @Override
    public String toString() {
      return vertex + "#" + index + " attempt " + attempt + " " + status + " on " + taskManager;
    }
  }

  /** Every subtask of a job, with its attempt, status and TaskManager. */
  record Deployment(List<Subtask> subtasks) {
    boolean allRunning() {
      return !subtasks.isEmpty() && subtasks.stream().allMatch(s -> s.status().equals("RUNNING"));
    }

    /** The TaskManagers running the job's subtasks, sorted (so that a seeded choice among them is repeatable). */
    SortedSet<String> taskManagers() {
      return subtasks.stream().map(Subtask::taskManager).collect(Collectors.toCollection(TreeSet::new));
    }

    /** A seeded choice among {@link #taskManagers()}. */
    String anyTaskManager(Random random) {
      List<String> running = new ArrayList<>(taskManagers());
      return running.get(random.nextInt(running.size()));
    }

    /** The TaskManager of subtask {@code index} of the first vertex whose name contains {@code name}. */
    String taskManagerOf(String name, int index) {
      return subtasks.stream().filter(s -> s.vertex().contains(name) && s.index() == index).findFirst()
          .map(Subtask::taskManager)
          .orElseThrow(() -> new AssertionError("No subtask " + index + " of a vertex named *" + name + "* in "
              + this));
    }

    List<Subtask> on(String taskManager) {
      return subtasks.stream().filter(s -> s.taskManager().equals(taskManager)).toList();
    }

    @Override
    public String toString() {
      return subtasks.toString();
    }
  }

  /** A kill aimed at a TaskManager that runs the job's tasks, with what its restart is judged against. */
  static final class Kill {
    private final FlinkProcessCluster cluster;
    private final String jobId;
    private final String victim;
    private final Deployment before;
    private final long restartsBefore;
    private long killed;

    Kill(FlinkProcessCluster cluster, String jobId, String victim, Deployment before, long restartsBefore) {
      this.cluster = cluster;
      this.jobId = jobId;
      this.victim = victim;
      this.before = before;
      this.restartsBefore = restartsBefore;
    }

    String victim() {
      return victim;
    }

    /** The job's deployment the kill was aimed at. */
    Deployment before() {
      return before;
    }

    /** {@link #fire()}, then {@link #awaitRestart()}. */
    Restart execute() throws Exception {
      fire();
      return awaitRestart();
    }

    /** SIGKILL of the victim, and a replacement TaskManager started. */
    void fire() throws InterruptedException {
      cluster.kill(victim);
      cluster.startTaskManager();
      killed = System.nanoTime();
    }

    /**
     * Polls (bounded) until the job restarted after the kill: every subtask that ran on the victim runs again in a
     * later attempt elsewhere, and every other subtask runs. Then polls (bounded by the same deadline) until {@code
     * numRestarts} counts it too; how long that took is reported, not asserted (the metric comes through the
     * JobManager's metric fetcher, which starts no fetch while one is in flight: one that asks a killed TaskManager
     * for its metrics waits for {@code web.timeout}).
     */
    Restart awaitRestart() throws Exception {
      List<Subtask> hit = before.on(victim);
      long deadline = killed + Duration.ofMinutes(3).toNanos();
      long redeployed = -1;
      long restarts;
      while (true) {
        restarts = cluster.jobMetric(jobId, "numRestarts");
        if (redeployed < 0) {
          Deployment now = deployment(cluster, jobId);
          if (now.allRunning() && redeployed(hit, now)) {
            redeployed = System.nanoTime();
          } else if (System.nanoTime() > deadline) {
            throw new AssertionError("Job " + jobId + " did not restart within 3 minutes of the SIGKILL of "
                + victim + ", which ran " + hit + ": it is " + cluster.jobStatus(jobId) + ", numRestarts "
                + restarts + " (before the kill: " + restartsBefore + "), live TaskManagers "
                + cluster.liveTaskManagers() + ", the JobManager sees "
                + cluster.rest("/overview").path("taskmanagers").asInt() + "; subtasks now: " + now);
          }
        }
        if (redeployed >= 0 && (restarts > restartsBefore || System.nanoTime() > deadline)) {
          return new Restart(millis(redeployed - killed), restarts > restartsBefore
              ? millis(System.nanoTime() - killed) : -1, restartsBefore, restarts);
        }
        Thread.sleep(100);   // polling the REST endpoint
      }
    }

    private boolean redeployed(List<Subtask> hit, Deployment now) {
      for (Subtask old : hit) {
        boolean again = now.subtasks().stream().anyMatch(s -> s.vertex().equals(old.vertex())
            && s.index() == old.index() && s.attempt() > old.attempt() && !s.taskManager().equals(victim));
        if (!again) {
          return false;
        }
      }
      return true;
    }
  }

  /**
   * How a job restarted after a kill: milliseconds from the kill until every subtask ran again, and until {@code
   * numRestarts} counted it (-1: not within the wait); the count before the kill and then (restarts that failed
   * on the way count too).
   */
  record Restart(long redeployedMs, long countedMs, long restartsBefore, long restarts) {
    @Override
    public String toString() {
      return "redeployed " + redeployedMs + " ms after the kill, " + (countedMs < 0 ? "not yet counted"
          : "counted " + countedMs + " ms after it") + " in numRestarts (" + restartsBefore + " -> " + restarts
          + ")";
    }
  }

  private static long millis(long nanos) {
    return nanos / 1_000_000;
  }

  /**
   * Waits (bounded) until every subtask of the job runs on a live TaskManager, then aims a kill at the TaskManager
   * {@code choice} picks among that deployment's (it must be one of them); {@link Kill#execute()} fires it.
   */
  static Kill aim(FlinkProcessCluster cluster, String jobId, Function<Deployment, String> choice) throws Exception {
    Deployment before = awaitRunning(cluster, jobId, Duration.ofMinutes(3));
    String victim = choice.apply(before);
    if (before.on(victim).isEmpty()) {
      throw new IllegalArgumentException("TaskManager " + victim + " runs no task of job " + jobId + ": " + before);
    }
    return new Kill(cluster, jobId, victim, before, restarts(cluster, jobId));
  }

  /**
   * Polls (bounded) until every subtask of the job runs, on TaskManagers the harness knows to be alive; returns
   * that deployment.
   */
  static Deployment awaitRunning(FlinkProcessCluster cluster, String jobId, Duration timeout) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Deployment deployment = deployment(cluster, jobId);
      Set<String> live = Set.copyOf(cluster.liveTaskManagers());
      if (deployment.allRunning() && live.containsAll(deployment.taskManagers())) {
        return deployment;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("Job " + jobId + " not running on all its subtasks on live TaskManagers " + live
            + " within " + timeout + ": " + deployment);
      }
      Thread.sleep(100);   // polling the REST endpoint
    }
  }

  /** The job's subtasks as the JobManager reports them now. */
  static Deployment deployment(FlinkProcessCluster cluster, String jobId) throws IOException {
    List<Subtask> subtasks = new ArrayList<>();
    for (JsonNode vertex : cluster.rest("/jobs/" + jobId).path("vertices")) {
      String name = vertex.path("name").asText();
      for (JsonNode subtask : cluster.rest("/jobs/" + jobId + "/vertices/" + vertex.path("id").asText())
          .path("subtasks")) {
        subtasks.add(new Subtask(name, subtask.path("subtask").asInt(), subtask.path("attempt").asInt(),
            subtask.path("status").asText(), subtask.path("taskmanager-id").asText("?")));
      }
    }
    return new Deployment(subtasks);
  }

  /**
   * The job's {@code numRestarts}, polled (bounded) until the JobManager reports it: its metric fetcher answers a
   * job's first query before it fetched anything.
   */
  private static long restarts(FlinkProcessCluster cluster, String jobId) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
    long restarts;
    while ((restarts = cluster.jobMetric(jobId, "numRestarts")) < 0) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("The JobManager reported no numRestarts for job " + jobId + " within a minute");
      }
      Thread.sleep(100);   // polling the REST endpoint
    }
    return restarts;
  }
}
