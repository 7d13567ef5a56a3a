package dev.lakecommit.core.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * When a job under test dies: the Nth time one named point is reached, in one "process life". A schedule holds
 * one crash per life; each new life of the job takes the next one, and a life whose crash point is never reached
 * runs to its end. Points are counted per life, as a real restarted process would.
 */
public final class CrashSchedule {
  /** Points in the writers and committers of a sink. */
  public static final String WRITE = "write";
  public static final String PREPARE = "prepare-commit";
  public static final String COMMIT_APPLIED = "commit-applied-before-ack";
  /** Points of the runtime, reached through its listener. */
  public static final String PREPARED = "prepared-before-persist";
  public static final String PERSISTED = "persisted-before-commit";
  public static final String COMPLETE = "committed-before-next-checkpoint";

  /** Point of a sink's target: the run claimed its epoch, before it read its checkpoints (once per life). */
  public static final String EPOCH_CLAIMED = "epoch-claimed-before-restore";

  public static final List<String> ALL_POINTS =
      List.of(WRITE, PREPARE, PREPARED, PERSISTED, COMMIT_APPLIED, COMPLETE);

  /** The points of a sink with a target ({@code SupportsTarget}): all the above and the epoch claim. */
  public static final List<String> TARGET_POINTS =
      List.of(WRITE, PREPARE, PREPARED, PERSISTED, COMMIT_APPLIED, COMPLETE, EPOCH_CLAIMED);

  /** One crash: the {@code occurrence}-th time (1-based) that {@code point} is reached. */
  public record Crash(String point, int occurrence) {
    @Override
    public String toString() {
      return point + "#" + occurrence;
    }
  }

  private final List<Crash> crashes;
  private final AtomicInteger life = new AtomicInteger(-1);
  private final AtomicInteger crashed = new AtomicInteger();
  private final Map<String, AtomicInteger> reached = new ConcurrentHashMap<>();

  public CrashSchedule(List<Crash> crashes) {
    this.crashes = List.copyOf(crashes);
  }

  public static CrashSchedule none() {
    return new CrashSchedule(List.of());
  }

  public static CrashSchedule at(String point, int occurrence) {
    return new CrashSchedule(List.of(new Crash(point, occurrence)));
  }

  /** 1 to 3 crashes at random points; occurrences scaled to how often each point is reached. */
  public static CrashSchedule random(Random random, int writesPerLife, int checkpointsPerLife) {
    int count = 1 + random.nextInt(3);
    List<Crash> crashes = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      String point = ALL_POINTS.get(random.nextInt(ALL_POINTS.size()));
      int bound = point.equals(WRITE) ? writesPerLife : checkpointsPerLife;
      crashes.add(new Crash(point, 1 + random.nextInt(Math.max(1, bound))));
    }
    return new CrashSchedule(crashes);
  }

  /** Starts a new process life: counters drop, the next crash of the schedule is armed. */
  public void newLife() {
    life.incrementAndGet();
    reached.clear();
  }

  /** Called at a point; throws {@link SimulatedCrash} if this life is to die here. */
  public void reach(String point, long checkpointId) {
    int current = life.get();
    if (current < 0 || current >= crashes.size()) {
      return;
    }
    Crash crash = crashes.get(current);
    if (!crash.point().equals(point)) {
      return;
    }
    int n = reached.computeIfAbsent(point, p -> new AtomicInteger()).incrementAndGet();
    if (n == crash.occurrence()) {
      crashed.incrementAndGet();
      throw new SimulatedCrash(point, checkpointId);
    }
  }

  /** How many crashes actually happened. */
  public int crashes() {
    return crashed.get();
  }

  public List<Crash> planned() {
    return crashes;
  }

  @Override
  public String toString() {
    return crashes.toString();
  }
}
