package dev.lakecommit.staging;

/**
 * What one writer reports for one checkpoint, as an engine's aggregation step sees it before the committer combines
 * the reports of all writers: the checkpoint it is named after, the writer, and the same report under another
 * checkpoint id (an engine that learns the checkpoint id only after the writer reported renumbers it).
 * {@link StagingManifest} for a writer of one table; a multi-table writer reports one manifest per table.
 */
public interface WriterManifest {

  /** The checkpoint the staged files were named after, {@code >= 1}. */
  long checkpointId();

  /** The writer that staged them, {@code >= 0}. */
  int writerIndex();

  /** Files staged, over every table the writer wrote. */
  long fileCount();

  /** Rows in the staged data files, over every table the writer wrote. */
  long recordCount();

  /** This report as of checkpoint {@code newCheckpointId}; everything else unchanged. */
  WriterManifest withCheckpointId(long newCheckpointId);
}
