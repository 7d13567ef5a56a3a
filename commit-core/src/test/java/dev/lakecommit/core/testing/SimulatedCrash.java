package dev.lakecommit.core.testing;

/**
 * A simulated process death at a named point. It is an {@link Error} so that nothing on the way up handles it:
 * no abort, no cleanup, no commit runs after it, as after a SIGKILL. The next "process" starts with new objects
 * over the same files.
 */
public final class SimulatedCrash extends Error {
  public SimulatedCrash(String point, long checkpointId) {
    super("simulated crash at " + point + " (checkpoint " + checkpointId + ")", null, false, false);
  }
}
