package dev.lakecommit.ingest.source;

import java.io.IOException;

/**
 * The job diverted as many bad records as it may ({@link FileSource#maxBadRecords(long)}), and found one more, or
 * more of the records it read were bad than {@link FileSource#maxBadRecordRate(double)} allows: the reader stops
 * rather than go on with input that is mostly bad. The message names the limit, the counts and the record.
 */
public final class BadRecordLimitException extends IOException {
  private static final long serialVersionUID = 1L;

  BadRecordLimitException(long limit, BadRecordException next) {
    super("More bad records than allowed: the job already diverted " + limit + " record(s) to the dead-letter "
        + "files (the limit, --max-bad-records), and found another: " + next.getMessage() + ". Nothing after the "
        + "last checkpoint is committed; fix the input or raise the limit and run the same command again", next);
  }

  BadRecordLimitException(double rate, long bad, long read, BadRecordException next) {
    super(rateText(rate, bad, read) + "; the last: " + next.getMessage() + ". Nothing after the last checkpoint "
        + "is committed; fix the input or raise the limit and run the same command again", next);
  }

  BadRecordLimitException(double rate, long bad, long read) {
    super(rateText(rate, bad, read) + " at the end of the input. Nothing after the last checkpoint is committed; "
        + "fix the input or raise the limit and run the same command again");
  }

  private static String rateText(double rate, long bad, long read) {
    return String.format(java.util.Locale.ROOT, "More bad records than allowed: %,d of the %,d records the job read "
        + "(%.2f %%) were bad, more than the limit of %s %% (--max-bad-records)", bad, read, 100.0 * bad / read,
        java.math.BigDecimal.valueOf(rate * 100).stripTrailingZeros().toPlainString());
  }
}
