package dev.lakecommit.ingest.verify;

import java.io.IOException;
import org.apache.iceberg.io.CloseableIterable;

/**
 * A table as the audit reads it back: the value of one column in every row of the table's current state, read
 * lazily, so that no more than a file's reader is held at a time.
 */
public interface TableRows {
  /** The table's name, for reports and messages. */
  String name();

  /**
   * Checks that the table has this column and that it is of a primitive type. Called before anything is read.
   *
   * @throws IllegalArgumentException naming the column and the columns there are
   */
  void checkColumn(String column);

  /**
   * The value of {@code column} in every row, once per row, in any order. Reads nothing until iterated; the
   * caller closes it.
   *
   * @throws IOException if the table cannot be read
   */
  CloseableIterable<Object> values(String column) throws IOException;

  /**
   * The rows whose {@code eventTimeColumn} is lower than the largest event time committed before them
   * (DESIGN.md's out-of-order rate, numerator).
   *
   * @throws IllegalArgumentException if the table keeps no commit order to measure it by
   * @throws IOException if the table cannot be read
   */
  long outOfOrderRows(String eventTimeColumn) throws IOException;
}
