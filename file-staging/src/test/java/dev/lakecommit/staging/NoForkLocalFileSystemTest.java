package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.nativeio.NativeIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The local file system the sinks configure: the same directories, files, permissions and checksum side files as
 * Hadoop's, with no {@code chmod} process started (counted by JFR's process-start events; Hadoop's own local file
 * system, without its native library, starts one per directory).
 */
class NoForkLocalFileSystemTest {
  @TempDir
  java.nio.file.Path dir;

  @Test
  void writesWhatHadoopsLocalFileSystemWritesWithoutForkingChmod() throws Exception {
    Configuration plain = new Configuration();
    plain.setBoolean("fs.file.impl.disable.cache", true);
    Configuration noFork = NoForkLocalFileSystem.useUnlessConfigured(new Configuration(plain));
    assertThat(noFork.get("fs.file.impl")).isEqualTo(NoForkLocalFileSystem.class.getName());

    long hadoopForks = chmodForks(() -> writeTree(plain, "hadoop"));
    long noForks = chmodForks(() -> writeTree(noFork, "lakecommit"));

    assertThat(noForks).as("chmod processes started by NoForkLocalFileSystem").isZero();
    assertThat(hadoopForks > 0 || NativeIO.isAvailable())
        .as("Hadoop's local file system without native code forks chmod (%s)", hadoopForks).isTrue();
    for (String file : new String[] {"a/b=1/c=2/part-0.parquet", "a/b=1/c=2/.part-0.parquet.crc", "a/b=1/c=2",
        "a/b=1", "a/b=1/c=2/restricted"}) {
      java.nio.file.Path theirs = dir.resolve("hadoop").resolve(file);
      java.nio.file.Path ours = dir.resolve("lakecommit").resolve(file);
      assertThat(ours).as(file).exists();
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(ours))).as(file)
          .isEqualTo(PosixFilePermissions.toString(Files.getPosixFilePermissions(theirs)));
    }
    assertThat(PosixFilePermissions.toString(
        Files.getPosixFilePermissions(dir.resolve("lakecommit/a/b=1/c=2/restricted")))).isEqualTo("rw-r-----");
    assertThat(Files.readString(dir.resolve("lakecommit/a/b=1/c=2/part-0.parquet"))).isEqualTo("rows");
  }

  @Test
  void aConfiguredLocalFileSystemIsKept() {
    Configuration conf = new Configuration();
    conf.set("fs.file.impl", LocalFileSystem.class.getName());
    assertThat(NoForkLocalFileSystem.useUnlessConfigured(conf).get("fs.file.impl"))
        .isEqualTo(LocalFileSystem.class.getName());
  }

  private void writeTree(Configuration conf, String root) throws IOException {
    FileSystem fs = new Path(dir.resolve(root).toUri()).getFileSystem(conf);
    Path leaf = new Path(dir.resolve(root).resolve("a/b=1/c=2").toUri());
    try (FSDataOutputStream out = fs.create(new Path(leaf, "part-0.parquet"), false)) {
      out.write("rows".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
    try (FSDataOutputStream out = fs.create(new Path(leaf, "restricted"), false)) {
      out.write(1);
    }
    fs.setPermission(new Path(leaf, "restricted"), new FsPermission((short) 0640));
  }

  private interface Work {
    void run() throws IOException;
  }

  private long chmodForks(Work work) throws IOException {
    java.nio.file.Path events = Files.createTempFile(dir, "processes", ".jfr");
    try (Recording recording = new Recording()) {
      recording.enable("jdk.ProcessStart").withStackTrace();
      recording.start();
      work.run();
      recording.stop();
      recording.dump(events);
    }
    long count = 0;
    for (RecordedEvent event : RecordingFile.readAllEvents(events)) {
      if (event.getString("command").startsWith("chmod")) {
        count++;
      }
    }
    return count;
  }
}
