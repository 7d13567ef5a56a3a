package dev.lakecommit.core;

/**
 * Marks a record that a source hands to a standalone job as the delete of a row by key rather than a row to write
 * (a change stream's delete event): the job's writer gets it through {@link SupportsDeletes#delete}, which reads
 * only its key columns. A job whose writers only add rows refuses it, naming the record. Engines carry the kind of
 * a change their own way (Flink's {@code RowKind}).
 */
public interface Deletion {}
