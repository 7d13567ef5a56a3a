package dev.lakecommit.hive;

/**
 * Hive's basic statistics of a table or partition: {@code numFiles}, {@code numRows}, {@code totalSize}.
 *
 * @param files data files
 * @param rows rows in them
 * @param bytes their total size
 */
record Stats(long files, long rows, long bytes) {
  static final Stats ZERO = new Stats(0, 0, 0);

  Stats plus(Stats other) {
    return new Stats(files + other.files, rows + other.rows, bytes + other.bytes);
  }

  Stats plusFile(long fileRows, long fileBytes) {
    return new Stats(files + 1, rows + fileRows, bytes + fileBytes);
  }
}
