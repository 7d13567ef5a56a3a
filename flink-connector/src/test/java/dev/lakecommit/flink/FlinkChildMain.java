package dev.lakecommit.flink;

import java.lang.reflect.Method;
import java.util.Arrays;

/**
 * The main class of a Flink process of {@link FlinkProcessCluster}: {@code FlinkChildMain <test JVM pid> <Flink
 * entry class> <its arguments...>} halts when the test JVM is gone (a SIGKILLed test JVM runs no shutdown hook that
 * could end the child), then runs the entry point (Flink's standalone session JobManager or TaskManager).
 */
final class FlinkChildMain {
  private FlinkChildMain() {}

  public static void main(String[] args) throws Exception {
    long parent = Long.parseLong(args[0]);
    ProcessHandle.of(parent).ifPresentOrElse(
        handle -> handle.onExit().thenRun(() -> orphaned(parent)), () -> orphaned(parent));
    Method main = Class.forName(args[1]).getMethod("main", String[].class);
    main.invoke(null, (Object) Arrays.copyOfRange(args, 2, args.length));
  }

  private static void orphaned(long parent) {
    System.err.println("The test JVM (pid " + parent + ") is gone: halting this Flink process");
    Runtime.getRuntime().halt(1);
  }
}
