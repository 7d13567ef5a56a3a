package dev.lakecommit.ingest.source;

import java.io.IOException;

/**
 * The job diverted as many bad records as it may ({@link FileSource#maxBadRecords(long)}), and found one more:
 * the reader stops rather than go on with input that is mostly bad. The message names the limit and the record.
 */
public final class BadRecordLimitException extends IOException {
  private static final long serialVersionUID = 1L;

  BadRecordLimitException(long limit, BadRecordException next) {
    super("More bad records than allowed: the job already diverted " + limit + " record(s) to the dead-letter "
        + "files (the limit, --max-bad-records), and found another: " + next.getMessage() + ". Nothing after the "
        + "last checkpoint is committed; fix the input or raise the limit and run the same command again", next);
  }
}
