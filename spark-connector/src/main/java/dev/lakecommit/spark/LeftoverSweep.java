package dev.lakecommit.spark;

import dev.lakecommit.core.CommitId;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.SupportsPrefixOperations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * After a commit: deletes what task attempts that did not win their partition staged under the checkpoint's
 * prefix (an attempt that died before Spark could abort it, a speculative copy). Files are told apart by the
 * attempt in their names; files of the committed attempts are never touched. Best effort.
 */
final class LeftoverSweep {
  private static final Logger LOG = LoggerFactory.getLogger(LeftoverSweep.class);

  private final Target.Opened<?> opened;

  LeftoverSweep(Target.Opened<?> opened) {
    this.opened = opened;
  }

  void deleteOtherAttempts(CommitId commitId, Set<Integer> committedAttempts) {
    if (!(opened.stagingIO() instanceof SupportsPrefixOperations io)) {
      return;
    }
    String prefix = opened.layout().checkpointPrefix(commitId.jobId(), commitId.checkpointId());
    List<String> doomed = new ArrayList<>();
    try {
      for (FileInfo file : io.listPrefix(prefix)) {
        OptionalInt attempt = opened.layout().attemptOf(commitId.jobId(), file.location());
        if (attempt.isPresent() && !committedAttempts.contains(attempt.getAsInt())) {
          doomed.add(file.location());
        }
      }
      doomed.forEach(io::deleteFile);
    } catch (java.io.UncheckedIOException e) {
      if (e.getCause() instanceof java.io.FileNotFoundException) {
        return;
      }
      LOG.warn("Could not sweep staged files of failed task attempts of {} under {}: {}", commitId, prefix,
          e.toString());
      return;
    } catch (RuntimeException e) {
      LOG.warn("Could not sweep staged files of failed task attempts of {} under {}: {}", commitId, prefix,
          e.toString());
      return;
    }
    if (!doomed.isEmpty()) {
      LOG.info("Deleted {} files staged by task attempts of {} that were not committed", doomed.size(), commitId);
    }
  }
}
