package dev.lakecommit.core.testing;

/**
 * The main class of a {@link KafkaBroker} in a child JVM: {@code KafkaChildMain <test JVM pid> <server.properties>}
 * halts when the test JVM is gone (a SIGKILLed test JVM runs no shutdown hook that could end the child), then runs
 * the broker as Kafka's own {@code kafka.Kafka} does.
 */
final class KafkaChildMain {
  private KafkaChildMain() {}

  public static void main(String[] args) {
    long parent = Long.parseLong(args[0]);
    ProcessHandle.of(parent).ifPresentOrElse(
        handle -> handle.onExit().thenRun(() -> orphaned(parent)), () -> orphaned(parent));
    kafka.Kafka.main(new String[] {args[1]});
  }

  private static void orphaned(long parent) {
    System.err.println("The test JVM (pid " + parent + ") is gone: halting its Kafka broker");
    Runtime.getRuntime().halt(1);
  }
}
