package dev.lakecommit.hive;

/**
 * Test-only: told when a merge passes each of its steps, so that crash tests can stop there and race tests can
 * line a commit up with the switch. Called on the merging thread.
 */
@FunctionalInterface
interface MergeHook {
  /** After a partition's merged and copied files and its manifest are written, before the checks. */
  String FILES_WRITTEN = "merge-files-written";
  /** After the checks passed, right before the partition is switched to the merged directory. */
  String BEFORE_SWITCH = "merge-before-switch";
  /** Right after the switch. */
  String SWITCHED = "merge-switched";
  /** After each replaced file a later round deletes. */
  String FILE_DELETED = "merge-file-deleted";

  MergeHook NONE = (point, partition) -> {};

  void reached(String point, String partition) throws java.io.IOException;
}
