package dev.lakecommit.ingest;

import dev.lakecommit.ingest.cli.LakecommitCommand;
import picocli.CommandLine;

/** Entry point of the {@code lakecommit} tool. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs the tool and returns its exit code (see {@link LakecommitCommand}). */
  public static int run(String... args) {
    configureLogging(java.util.Arrays.asList(args).contains("--verbose"));
    return LakecommitCommand.commandLine().execute(args);
  }

  /**
   * Lakecommit's own messages at info, everything else at warn; the clients' retry chatter during an outage (each
   * with a stack trace) only with {@code --verbose}: the tool reports every failed attempt itself, in one line.
   */
  private static void configureLogging(boolean verbose) {
    setIfAbsent("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    setIfAbsent("org.slf4j.simpleLogger.log.dev.lakecommit", "info");
    setIfAbsent("org.slf4j.simpleLogger.showDateTime", "true");
    setIfAbsent("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss");
    setIfAbsent("org.slf4j.simpleLogger.showThreadName", "false");
    setIfAbsent("org.slf4j.simpleLogger.showShortLogName", "true");
    // Hadoop's pure-Java code paths are what the tool uses; the missing native library is no news.
    setIfAbsent("org.slf4j.simpleLogger.log.org.apache.hadoop.util.NativeCodeLoader", "error");
    if (!verbose) {
      for (String noisy : java.util.List.of("hive.metastore", "org.apache.hadoop.hive.metastore",
          "org.apache.iceberg.hive.MetastoreLock", "org.apache.iceberg.util.Tasks", "org.apache.thrift",
          "org.apache.iceberg.jdbc", "org.apache.hadoop.fs.s3a", "software.amazon.awssdk",
          // a warning per connection attempt while a broker is away; the Kafka source says it once, and when it is back
          "org.apache.kafka.clients.NetworkClient")) {
        setIfAbsent("org.slf4j.simpleLogger.log." + noisy, "error");
      }
    }
  }

  private static void setIfAbsent(String key, String value) {
    if (System.getProperty(key) == null) {
      System.setProperty(key, value);
    }
  }
}
