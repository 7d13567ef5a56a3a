package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;

/**
 * Test-only: told when a commit attempt passes each of its steps, so that crash tests can stop the "process"
 * there ({@code CrashSchedule.reach}) and race tests can line two committers up. Called on the committer's thread.
 */
@FunctionalInterface
interface CommitHook {
  /** After the commit intent is written (or found written), before the first file moves. */
  String INTENT_WRITTEN = "hive-intent-written";
  /** After each staged file is in its partition directory (moved now, or found moved). */
  String FILE_MOVED = "hive-file-moved";
  /** After every file of the checkpoint is in place. */
  String FILES_MOVED = "hive-files-moved";
  /** After the checkpoint's new partitions are added (partitioned tables; also when there were none). */
  String PARTITIONS_ADDED = "hive-partitions-added";
  /**
   * After the existing partitions got their new statistics (append) or were switched to their new directory
   * (insert-overwrite; for an unpartitioned table, the table).
   */
  String STATS_UPDATED = "hive-stats-updated";
  /** After the files that insert-overwrite replaced are deleted. */
  String REPLACED_DELETED = "hive-replaced-deleted";
  /** After the {@code _SUCCESS} markers are written (when configured). */
  String SUCCESS_FILES = "hive-success-files";
  /** Right before the table change that records the watermark. */
  String BEFORE_WATERMARK = "hive-before-watermark";
  /** Right after it, before the committer returns. */
  String AFTER_WATERMARK = "hive-after-watermark";

  /**
   * A claim's recovery listed an unfinished intent of this checkpoint and is about to read it (its run may take it
   * back meanwhile: fenced before its first move).
   */
  String INTENT_LISTED = "hive-intent-listed";

  CommitHook NONE = (point, id) -> {};

  void reached(String point, CommitId id);
}
