package dev.lakecommit.iceberg;

import org.apache.iceberg.exceptions.CommitFailedException;

/**
 * A commit attempt found that the field ids its files were written (or rewritten, {@link FieldIdRewrite}) with no
 * longer match the ids the table's schema gives their columns: another job changed the schema after this commit
 * planned its files. Nothing was committed; a new attempt plans again against the table as it is then.
 */
final class StaleFieldIdsException extends CommitFailedException {
  StaleFieldIdsException(String message) {
    super("%s", message);
  }
}
