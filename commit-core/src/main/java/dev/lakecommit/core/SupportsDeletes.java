package dev.lakecommit.core;

import java.io.IOException;

/**
 * A {@link SinkWriter} of a keyed target (an upsert table) that can also delete rows by key, so that a changelog
 * (retractions of an aggregate, a CDC stream) can be written: its inserts and updates through {@link
 * SinkWriter#write}, which replaces the row of the record's key, and its deletes through {@link #delete}. Writers of
 * targets that only add rows do not implement it; an engine adapter refuses a delete for them.
 *
 * @param <IN> records written
 */
public interface SupportsDeletes<IN> {

  /**
   * Stages a delete of the row with the key of {@code record} (only its key columns are read), ordered with the
   * writer's {@link SinkWriter#write} calls: a row written earlier in the same checkpoint is deleted, a row written
   * later stays. Becomes visible with the checkpoint's commit, like a write; deleting a key that has no row is
   * not an error. Side effects: staged bytes only.
   *
   * @throws IOException on a storage failure; the checkpoint in progress will not complete
   * @throws IllegalArgumentException if the record's key does not fit the target; the message names the record
   *     and the key column
   * @throws IllegalStateException if the key belongs to another writer (records not routed by key)
   */
  void delete(IN record) throws IOException;
}
