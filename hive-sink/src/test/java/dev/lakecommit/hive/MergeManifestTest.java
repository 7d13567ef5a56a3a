package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MergeManifestTest {
  @TempDir java.nio.file.Path dir;

  @Test
  void writtenManifestReadsBack() throws Exception {
    FileSystem fs = FileSystem.getLocal(new Configuration());
    MergeManifest manifest = new MergeManifest(new Path("file:/wh/t/cat=a b"),
        Map.of("job-1-0-0-0.parquet", 120L, "other file.parquet", 7L), Map.of("lakecommit-merged-1-0.parquet", 99L));
    manifest.write(fs, new Path(dir.toUri()));

    assertThat(MergeManifest.read(fs, new Path(dir.toUri()))).contains(manifest);
    assertThat(MergeManifest.read(fs, new Path(dir.resolve("none").toUri()))).isEmpty();
  }

  /** Version 1 as stored: what every later reader must still read. */
  @Test
  void readsVersionOneAndRefusesUnknownVersions() throws Exception {
    FileSystem fs = FileSystem.getLocal(new Configuration());
    Files.writeString(dir.resolve(MergeManifest.NAME), "lakecommit-merge 1\nfrom file:/wh/t/cat=a\n"
        + "replaced 12 j-1-0-0-0.parquet\nwritten 30 lakecommit-merged-7-0.parquet\n", StandardCharsets.UTF_8);
    assertThat(MergeManifest.read(fs, new Path(dir.toUri()))).contains(new MergeManifest(new Path("file:/wh/t/cat=a"),
        Map.of("j-1-0-0-0.parquet", 12L), Map.of("lakecommit-merged-7-0.parquet", 30L)));

    Files.writeString(dir.resolve(MergeManifest.NAME), "lakecommit-merge 2\nfrom file:/x\n", StandardCharsets.UTF_8);
    assertThatThrownBy(() -> MergeManifest.read(fs, new Path(dir.toUri()))).hasMessageContaining("Unknown version 2");
  }
}
