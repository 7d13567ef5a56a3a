package dev.lakecommit.hive;

import java.util.List;
import org.apache.hadoop.fs.Path;

/**
 * Hive's names for partitions and directories, and the directories the sink adds to a table.
 *
 * <p>Partition directory names follow Hive's {@code FileUtils.escapePathName}: ASCII control characters and
 * {@code " # % ' * / : = ? \ DEL { [ ] ^} become {@code %XX} (upper-case hex); everything else, non-ASCII included,
 * stays; a null or empty value is the default partition name. So a value can never add a path segment: {@code
 * ../x} is {@code ..%2Fx}, {@code a/b} is {@code a%2Fb}, {@code a=b} is {@code a%3Db}.
 */
final class HivePaths {
  /** Hive's default name of the partition that holds null and empty values. */
  static final String DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__";

  /** Hidden directory in the table location where writers stage files; Hive readers skip hidden names. */
  static final String STAGING_DIR = ".lakecommit-staging";

  /** Hidden directory, inside a partition's usual directory, that holds the files of overwritten partitions. */
  static final String OVERWRITE_DIR = ".lakecommit-overwrite";

  /** The marker a partition gets when it is committed, if configured (Hadoop's and Flink's success file). */
  static final String SUCCESS_FILE = "_SUCCESS";

  private static final boolean[] ESCAPED = new boolean[128];

  static {
    for (char c = 0; c < ' '; c++) {
      ESCAPED[c] = true;
    }
    for (char c : "\"#%'*/:=?\\\u007F{[]^".toCharArray()) {
      ESCAPED[c] = true;
    }
  }

  private HivePaths() {}

  /** {@code FileUtils.escapePathName(value)} of Hive: one path segment, whatever the value. */
  static String escape(String value, String defaultName) {
    if (value == null || value.isEmpty()) {
      return defaultName;
    }
    StringBuilder escaped = null;
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < ESCAPED.length && ESCAPED[c]) {
        if (escaped == null) {
          escaped = new StringBuilder(value.length() + 8).append(value, 0, i);
        }
        escaped.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
            .append(Character.toUpperCase(Character.forDigit(c & 0xF, 16)));
      } else if (escaped != null) {
        escaped.append(c);
      }
    }
    return escaped == null ? value : escaped.toString();
  }

  /**
   * The partition name Hive gives these values, {@code k1=v1/k2=v2}: column names lower-cased, names and values
   * escaped, null or empty values named {@code defaultName}. It is also the partition's path under the table.
   */
  static String partitionName(List<String> columns, List<String> values, String defaultName) {
    if (columns.size() != values.size()) {
      throw new IllegalArgumentException(
          String.format("Partition columns %s and values %s differ in number", columns, values));
    }
    StringBuilder name = new StringBuilder();
    for (int i = 0; i < columns.size(); i++) {
      if (i > 0) {
        name.append('/');
      }
      name.append(escape(columns.get(i).toLowerCase(java.util.Locale.ROOT), defaultName))
          .append('=')
          .append(escape(values.get(i), defaultName));
    }
    return name.toString();
  }

  /** Hive's location of a partition under the table: {@code <table location>/<partition name>}. */
  static Path partitionDir(Path tableLocation, String partitionName) {
    return new Path(tableLocation, partitionName);
  }

  /**
   * Where checkpoint {@code checkpointId} of {@code jobId} puts the new files of a partition it overwrites:
   * {@code <usual dir>/.lakecommit-overwrite/<job-id>-<checkpoint-id>}. Fresh per checkpoint, so the old files
   * stay visible until the partition is switched to it; hidden from readers of the usual directory; and its own
   * name is not hidden, so it can be a partition's location.
   */
  static Path overwriteDir(Path usualDir, String jobId, long checkpointId) {
    return new Path(new Path(usualDir, OVERWRITE_DIR), jobId + "-" + checkpointId);
  }

  /** Whether {@code dir} is a directory {@link #overwriteDir} made (and so holds only files the sink put there). */
  static boolean isOverwriteDir(Path dir) {
    Path parent = dir.getParent();
    return parent != null && OVERWRITE_DIR.equals(parent.getName());
  }

  /**
   * The table's own location when the table is unpartitioned and was overwritten (its location is then an
   * {@link #overwriteDir}); otherwise the location itself. Staging and new overwrite directories go under it.
   */
  static Path baseLocation(Path tableLocation) {
    return isOverwriteDir(tableLocation) ? tableLocation.getParent().getParent() : tableLocation;
  }

  /** Whether readers skip this name: Hive and Hadoop input formats ignore names starting with '.' or '_'. */
  static boolean isHidden(String name) {
    return name.startsWith(".") || name.startsWith("_");
  }

  /** Whether two locations name the same directory (the metastore may qualify what it was given). */
  static boolean sameLocation(Path a, Path b) {
    return isAncestor(a, b) && isAncestor(b, a);
  }

  /** Whether {@code ancestor} is {@code path} or one of its parents (same scheme and authority). */
  static boolean isAncestor(Path ancestor, Path path) {
    String a = trimSlash(ancestor.toUri().getPath());
    String p = trimSlash(path.toUri().getPath());
    if (!java.util.Objects.equals(ancestor.toUri().getScheme(), path.toUri().getScheme())
        || !java.util.Objects.equals(blankToNull(ancestor.toUri().getAuthority()),
            blankToNull(path.toUri().getAuthority()))) {
      return false;
    }
    String prefix = a.endsWith("/") ? a : a + "/";
    return p.equals(a) || p.startsWith(prefix);
  }

  private static String trimSlash(String path) {
    return path.length() > 1 && path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
  }

  private static String blankToNull(String value) {
    return value == null || value.isEmpty() ? null : value;
  }
}
