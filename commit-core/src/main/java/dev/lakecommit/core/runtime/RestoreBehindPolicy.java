package dev.lakecommit.core.runtime;

/**
 * What a restored job does when the target has already committed a checkpoint of this job newer than the one
 * restored (a restore from an older checkpoint or a copied checkpoint directory). Never silent loss.
 */
public enum RestoreBehindPolicy {
  /** Stop with a message that names both checkpoints (the default). */
  FAIL,
  /**
   * Go on from the restored position with checkpoint ids above the target's: rows after the restored checkpoint
   * are written again (duplicates, never loss). For a deliberate rewind.
   */
  CONTINUE
}
