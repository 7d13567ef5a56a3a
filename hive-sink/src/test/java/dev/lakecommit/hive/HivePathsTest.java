package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.common.FileUtils;
import org.junit.jupiter.api.Test;

/** Partition names and directories, checked against Hive's own {@code FileUtils} as the oracle. */
class HivePathsTest {
  private static final String DEFAULT = HivePaths.DEFAULT_PARTITION_NAME;

  @Test
  void escapesEveryCharacterAsHiveDoes() {
    for (char c = 0; c < 0x300; c++) {
      String value = "a" + c + "b";
      assertThat(HivePaths.escape(value, DEFAULT)).as("U+%04X", (int) c)
          .isEqualTo(FileUtils.escapePathName(value, DEFAULT));
    }
    Random random = new Random(42);
    for (int i = 0; i < 2000; i++) {
      StringBuilder value = new StringBuilder();
      for (int n = random.nextInt(12); n > 0; n--) {
        value.append(random.nextBoolean() ? (char) random.nextInt(128) : (char) random.nextInt(0x3000));
      }
      assertThat(HivePaths.escape(value.toString(), DEFAULT))
          .isEqualTo(FileUtils.escapePathName(value.toString(), DEFAULT));
    }
  }

  @Test
  void partitionNamesAreHivesAndOneSegmentPerColumn() {
    List<String> tricky = Arrays.asList("../x", "..", ".", "a/b", "a=b", "naïve ü", "%2F", "x:y", "/", "\\", null,
        "", "__HIVE_DEFAULT_PARTITION__", "日本");
    Path table = new Path("file:/warehouse/db.db/t");
    for (String value : tricky) {
      List<String> values = Arrays.asList(value, "7");
      List<String> columns = List.of("Cat", "bucket");
      String name = HivePaths.partitionName(columns, values, DEFAULT);
      assertThat(name).as("'%s'", value).isEqualTo(FileUtils.makePartName(columns, values, DEFAULT));
      Path dir = HivePaths.partitionDir(table, name);
      assertThat(dir.getParent().getParent()).as("'%s' stays two levels under the table", value).isEqualTo(table);
      assertThat(dir.getParent().getName()).startsWith("cat=");
      assertThat(dir.getName()).isEqualTo("bucket=7");
    }
    assertThat(HivePaths.partitionName(List.of("p"), Arrays.asList((String) null), DEFAULT))
        .isEqualTo("p=" + DEFAULT);
    assertThat(HivePaths.escape("a/b", DEFAULT)).isEqualTo("a%2Fb");
    assertThat(HivePaths.escape("../x", DEFAULT)).isEqualTo("..%2Fx");
    assertThat(HivePaths.escape("a=b", DEFAULT)).isEqualTo("a%3Db");
    assertThat(HivePaths.escape("naïve", DEFAULT)).isEqualTo("naïve");
  }

  @Test
  void overwriteDirectoriesAreFreshHiddenFromTheUsualDirectoryAndReadable() {
    Path usual = new Path("s3a://bucket/wh/t/dt=2024-01-01");
    Path fresh = HivePaths.overwriteDir(usual, "job-1", 7);

    assertThat(fresh.toString()).isEqualTo("s3a://bucket/wh/t/dt=2024-01-01/.lakecommit-overwrite/job-1-7");
    assertThat(HivePaths.isOverwriteDir(fresh)).isTrue();
    assertThat(HivePaths.isOverwriteDir(usual)).isFalse();
    assertThat(HivePaths.isHidden(fresh.getName())).as("a partition location must not be hidden").isFalse();
    assertThat(HivePaths.isHidden(fresh.getParent().getName())).isTrue();
    assertThat(HivePaths.isAncestor(usual, fresh)).isTrue();
    assertThat(HivePaths.isAncestor(fresh, usual)).isFalse();
    assertThat(HivePaths.isAncestor(new Path("s3a://other/wh/t/dt=2024-01-01"), fresh)).isFalse();
    assertThat(HivePaths.baseLocation(HivePaths.overwriteDir(new Path("file:/wh/t"), "j", 3)))
        .isEqualTo(new Path("file:/wh/t"));
    assertThat(HivePaths.baseLocation(new Path("file:/wh/t"))).isEqualTo(new Path("file:/wh/t"));
    assertThat(HivePaths.sameLocation(new Path("file:/wh/t/"), new Path("file:///wh/t"))).isTrue();
  }

  @Test
  void hiddenNamesAreThoseHiveReadersSkip() {
    List<String> hidden = new ArrayList<>(List.of(".lakecommit-staging", "_SUCCESS", ".x.crc"));
    hidden.forEach(name -> assertThat(HivePaths.isHidden(name)).as(name).isTrue());
    hidden.forEach(name -> assertThat(FileUtils.HIDDEN_FILES_PATH_FILTER.accept(new Path("/t/" + name))).isFalse());
    assertThat(HivePaths.isHidden("job-1-0-0-0.parquet")).isFalse();
  }
}
