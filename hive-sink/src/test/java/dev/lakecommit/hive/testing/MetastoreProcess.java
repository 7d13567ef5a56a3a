package dev.lakecommit.hive.testing;

import dev.lakecommit.core.testing.ChildJvm;
import dev.lakecommit.core.testing.LoopbackPorts;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A Hive Metastore server of another version than the one the build links, as its own process, from Hive's binary
 * distribution on Maven Central ({@code hive-standalone-metastore[-server]:<version>:tar.gz:bin}, unpacked by the
 * build under {@value #HOME_PROPERTY}), on a fresh Derby database or a database of the tests' embedded PostgreSQL,
 * with its schema made by the version's own {@code schematool}. Hive's distributions expect a Hadoop installation
 * beside them: the handful of jars they need from one come from {@value #LIB_PROPERTY} (Hadoop's client jars and
 * the commons libraries Hadoop would bring).
 *
 * <p>The server listens on the loopback address only: Hive 4 through {@code metastore.thrift.bind.host}, Hive 3.1
 * through {@link MetastoreMain}. {@link #kill()} ends it with SIGKILL, {@link #start()} starts it again on the same
 * port and database.
 */
public final class MetastoreProcess implements AutoCloseable {
  /** Where the build unpacked the distributions: one directory per version. */
  public static final String HOME_PROPERTY = "lakecommit.metastore.home";
  /** Where the build copied the Hadoop and commons jars the distributions need. */
  public static final String LIB_PROPERTY = "lakecommit.metastore.lib";

  /** The versions the build unpacks. */
  public enum Version {
    HIVE_3_1_3("3.1.3", "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool"),
    HIVE_4_0_0("4.0.0", "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool"),
    HIVE_4_0_1("4.0.1", "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool");

    private final String number;
    private final String schemaTool;

    Version(String number, String schemaTool) {
      this.number = number;
      this.schemaTool = schemaTool;
    }

    public String number() {
      return number;
    }

    boolean hasBindHost() {
      return !number.startsWith("3.");
    }
  }

  private final Version version;
  private final Path dir;
  private final Path home;
  private final int port;
  private final String classPath;
  private Process process;
  private int starts;

  private MetastoreProcess(Version version, Path dir, Path home, int port, String classPath) {
    this.version = version;
    this.dir = dir;
    this.home = home;
    this.port = port;
    this.classPath = classPath;
  }

  /** A server on a new Derby database under {@code dir}. */
  public static MetastoreProcess onDerby(Version version, Path dir) {
    return create(version, dir, "derby", Map.of(
        "javax.jdo.option.ConnectionURL", "jdbc:derby:;databaseName=" + dir.resolve("metastore_db") + ";create=true",
        "javax.jdo.option.ConnectionDriverName", "org.apache.derby.jdbc.EmbeddedDriver"));
  }

  /** A server on a new database of {@code pg}. */
  public static MetastoreProcess onPostgres(Version version, Path dir, EmbeddedPostgres pg) {
    String url = pg.createDatabase("hms_" + version.number.replace('.', '_') + "_" + System.nanoTime());
    return create(version, dir, "postgres", Map.of(
        "javax.jdo.option.ConnectionURL", url,
        "javax.jdo.option.ConnectionDriverName", "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName", pg.user(),
        "javax.jdo.option.ConnectionPassword", pg.password()));
  }

  private static MetastoreProcess create(Version version, Path dir, String dbType, Map<String, String> database) {
    try {
      Path home = distribution(version);
      Files.createDirectories(dir.resolve("conf"));
      Map<String, String> site = new LinkedHashMap<>(database);
      site.put("metastore.warehouse.dir", dir.resolve("warehouse").toUri().toString());
      site.put("metastore.schema.verification", "false");
      site.put("metastore.thrift.bind.host", "127.0.0.1");
      // No hive-exec here: partition filters are evaluated by the metastore's own parser.
      site.put("metastore.expression.proxy", "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy");
      // 3.1's default list names a task that the standalone distribution lacks.
      site.put("metastore.task.threads.always", "org.apache.hadoop.hive.metastore.events.EventCleanerTask");
      site.put("metastore.server.min.threads", "4");
      // A failing database statement is the test's to see at once, not after the handler's 10 retries 2 s apart
      // (4.0.x on Derby fails every compare-and-swap that way).
      site.put("metastore.hmshandler.retry.attempts", "1");
      writeSite(dir.resolve("conf").resolve("metastore-site.xml"), site);
      Path launcher = launcher(dir);
      String classPath = String.join(File.pathSeparator, dir.resolve("conf").toString(), launcher.toString(),
          home.resolve("lib") + File.separator + "*", lib() + File.separator + "*");
      int port = LoopbackPorts.reserve();
      MetastoreProcess server = new MetastoreProcess(version, dir, home, port, classPath);
      server.run(List.of(version.schemaTool, "-dbType", dbType, "-initSchema"), dir.resolve("schematool.log"));
      server.start();
      return server;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public Version version() {
    return version;
  }

  public String uri() {
    return "thrift://127.0.0.1:" + port;
  }

  /** Where tables of a database created without a location go. */
  public Path warehouseDir() {
    return dir.resolve("warehouse");
  }

  /** Starts the server (again), and waits until it accepts connections. */
  public synchronized void start() {
    if (process != null && process.isAlive()) {
      return;
    }
    starts++;
    Path log = dir.resolve("metastore-" + starts + ".log");
    List<String> main = version.hasBindHost()
        ? List.of("org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", Integer.toString(port))
        : List.of(MetastoreMain.class.getName(), Integer.toString(port));
    try {
      process = environment(new ProcessBuilder(command(main))).redirectErrorStream(true)
          .redirectOutput(log.toFile()).start();
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
      while (!accepts()) {
        if (!process.isAlive() || System.nanoTime() > deadline) {
          process.destroyForcibly();
          throw new IllegalStateException("Hive Metastore " + version.number + " did not start on port " + port
              + "; its log " + log + " ends with:\n" + tail(log));
        }
        process.waitFor(100, TimeUnit.MILLISECONDS);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Ends the server at once, as a crash or {@code kill -9} would: clients see connections refused. */
  public synchronized void kill() {
    if (process != null) {
      process.destroyForcibly();
      try {
        process.waitFor(1, TimeUnit.MINUTES);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  public synchronized boolean isRunning() {
    return process != null && process.isAlive();
  }

  @Override
  public void close() {
    kill();
  }

  @Override
  public String toString() {
    return "Hive Metastore " + version.number + " at " + uri();
  }

  private boolean accepts() {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private void run(List<String> main, Path log) throws IOException {
    try {
      Process tool = environment(new ProcessBuilder(command(main))).redirectErrorStream(true)
          .redirectOutput(log.toFile()).start();
      if (!tool.waitFor(5, TimeUnit.MINUTES) || tool.exitValue() != 0) {
        tool.destroyForcibly();
        throw new IllegalStateException("Hive " + version.number + " " + String.join(" ", main) + " failed; its log "
            + log + " ends with:\n" + tail(log));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private List<String> command(List<String> main) {
    List<String> command = ChildJvm.java("512m");
    command.addAll(List.of("-Djava.net.preferIPv4Stack=true", "-cp", classPath));
    command.addAll(main);
    return command;
  }

  private ProcessBuilder environment(ProcessBuilder builder) {
    builder.environment().put("METASTORE_HOME", home.toString());
    return builder;
  }

  private static Path distribution(Version version) throws IOException {
    String root = System.getProperty(HOME_PROPERTY);
    if (root == null) {
      throw new IllegalStateException("System property " + HOME_PROPERTY + " is not set: the build unpacks Hive's"
          + " metastore distributions and sets it (run the tests through Maven)");
    }
    Path versionDir = Path.of(root, version.number);
    try (Stream<Path> entries = Files.list(versionDir)) {
      return entries.filter(p -> Files.isDirectory(p.resolve("lib"))).findFirst().orElseThrow(() ->
          new IllegalStateException("No Hive Metastore " + version.number + " distribution under " + versionDir));
    }
  }

  private static Path lib() {
    String lib = System.getProperty(LIB_PROPERTY);
    if (lib == null) {
      throw new IllegalStateException("System property " + LIB_PROPERTY + " is not set (run the tests through Maven)");
    }
    return Path.of(lib);
  }

  /** {@link MetastoreMain}'s class file alone in a directory: nothing else of the tests' class path. */
  private static Path launcher(Path dir) throws IOException {
    String name = MetastoreMain.class.getName().replace('.', '/') + ".class";
    Path target = dir.resolve("launcher").resolve(name);
    Files.createDirectories(target.getParent());
    try (InputStream in = MetastoreMain.class.getClassLoader().getResourceAsStream(name)) {
      Files.copy(in, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
    return dir.resolve("launcher");
  }

  private static void writeSite(Path file, Map<String, String> properties) throws IOException {
    StringBuilder xml = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
    properties.forEach((key, value) -> xml.append("  <property><name>").append(escape(key))
        .append("</name><value>").append(escape(value)).append("</value></property>\n"));
    xml.append("</configuration>\n");
    Files.writeString(file, xml);
  }

  private static String escape(String text) {
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }

  private static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    } catch (IOException e) {
      return "(unreadable: " + e.getMessage() + ")";
    }
  }
}
