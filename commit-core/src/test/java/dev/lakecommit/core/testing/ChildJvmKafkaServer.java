package dev.lakecommit.core.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ProcessBuilder.Redirect;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link KafkaBroker} in a child JVM on this JVM's classpath: {@code kafka.Kafka server.properties}, behind
 * {@link KafkaChildMain}, which halts the child when this JVM is gone. Output goes to a log file, appended across
 * restarts.
 */
final class ChildJvmKafkaServer implements KafkaBroker.Server {
  private static final Logger LOG = LoggerFactory.getLogger(ChildJvmKafkaServer.class);
  private static final long STOP_SECONDS = 30;
  private static final int TAIL_LINES = 40;

  private final Path log;
  private Process process;
  private Thread reaper;

  ChildJvmKafkaServer(Path log) {
    this.log = log;
  }

  @Override
  public synchronized void start(Path config) throws IOException {
    List<String> command = ChildJvm.java("384m");
    command.addAll(List.of("-Djava.awt.headless=true",
        // the file gets INFO (a failed start is explained there); the test output stays quiet
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
        "-cp", System.getProperty("java.class.path"),
        KafkaChildMain.class.getName(), String.valueOf(ProcessHandle.current().pid()), config.toString()));
    Files.writeString(log, "=== " + Instant.now() + " starting the Kafka broker ===\n", StandardCharsets.UTF_8,
        StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    if (reaper == null) {
      reaper = new Thread(this::destroyNow, "kafka-child-jvm-reaper");
      Runtime.getRuntime().addShutdownHook(reaper);
    }
    process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(Redirect.appendTo(log.toFile()))
        .start();
  }

  @Override
  public synchronized boolean alive() {
    return process != null && process.isAlive();
  }

  @Override
  public synchronized void checkAlive() {
    if (process != null && !process.isAlive()) {
      throw new IllegalStateException(
          "The Kafka broker's child JVM exited with status " + process.exitValue() + logTail());
    }
  }

  @Override
  public synchronized void stop() {
    if (process == null) {
      return;
    }
    process.destroy();
    try {
      if (!process.waitFor(STOP_SECONDS, TimeUnit.SECONDS)) {
        LOG.warn("The Kafka broker's child JVM (pid {}) did not stop within {} s; killing it", process.pid(),
            STOP_SECONDS);
        process.destroyForcibly().waitFor(STOP_SECONDS, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
    process = null;
  }

  @Override
  public synchronized void kill() {
    if (process == null) {
      return;
    }
    try {
      process.destroyForcibly().waitFor(STOP_SECONDS, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    process = null;
  }

  @Override
  public synchronized void close() {
    try {
      stop();
    } finally {
      destroyNow();
      if (reaper != null) {
        try {
          Runtime.getRuntime().removeShutdownHook(reaper);
        } catch (IllegalStateException shuttingDown) {
          // the hook runs (or ran) anyway
        }
        reaper = null;
      }
    }
  }

  /** The last lines of the child's log, for a failure message. */
  String logTail() {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.format("; the last lines of %s:%n%s", log,
          String.join(System.lineSeparator(), lines.subList(Math.max(0, lines.size() - TAIL_LINES), lines.size())));
    } catch (IOException | UncheckedIOException e) {
      return "; its log " + log + " cannot be read: " + e;
    }
  }

  private void destroyNow() {
    Process current = process;
    if (current != null) {
      current.destroyForcibly();
    }
  }
}
