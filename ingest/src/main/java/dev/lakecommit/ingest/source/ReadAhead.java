package dev.lakecommit.ingest.source;

import dev.lakecommit.core.runtime.JobListener;

/**
 * Counts what a Kafka job holds that no completed checkpoint covers yet: the records its reader fetched and has not
 * handed out (the reader's buffer, in records and bytes), plus the records handed out since the last completed
 * checkpoint (in the writers' queues and open files). Their sum is what a crash would make the job read again and
 * what memory holds beyond the writers' buffers; it is bounded by the configuration (records per checkpoint, the
 * reader's buffer limits), however far the producers are ahead and however slow the commits are. The highest values
 * of a run are kept for the run's report.
 *
 * <p>The reader and the job's listener calls come from the job's coordinator thread; the values may be read from
 * any thread.
 */
public final class ReadAhead implements JobListener {
  private long buffered;
  private long bufferedBytes;
  private long handedOut;
  private long completedBase;
  private long completed;
  private long maxInFlight;
  private long maxBuffered;
  private long maxBufferedBytes;

  /** A run starts: what it restored is completed; nothing is buffered or handed out yet. */
  @Override
  public synchronized void onStart(int attempt, long restoredCheckpointId, long recordCount) {
    completedBase = recordCount;
    completed = 0;
    handedOut = 0;
    buffered = 0;
    bufferedBytes = 0;
  }

  /** The checkpoint holding every record handed out so far is complete (durable and committed). */
  @Override
  public synchronized void onCheckpointComplete(long checkpointId, long recordCount) {
    completed = recordCount - completedBase;
  }

  /** The reader fetched records into its buffer. */
  synchronized void fetched(int records, long bytes) {
    buffered += records;
    bufferedBytes += bytes;
    maxBuffered = Math.max(maxBuffered, buffered);
    maxBufferedBytes = Math.max(maxBufferedBytes, bufferedBytes);
    observe();
  }

  /** The reader took a record out of its buffer; {@code handed}: to the job (not diverted or past the end). */
  synchronized void taken(long bytes, boolean handed) {
    buffered--;
    bufferedBytes -= bytes;
    if (handed) {
      handedOut++;
      observe();
    }
  }

  /** The reader's buffer was dropped (a new run of the reader). */
  synchronized void cleared() {
    buffered = 0;
    bufferedBytes = 0;
  }

  private void observe() {
    maxInFlight = Math.max(maxInFlight, buffered + handedOut - completed);
  }

  /** Records read from Kafka that no completed checkpoint holds, now. */
  public synchronized long inFlight() {
    return buffered + handedOut - completed;
  }

  /** The highest {@link #inFlight} seen. */
  public synchronized long maxInFlight() {
    return maxInFlight;
  }

  /** The most records the reader's buffer held. */
  public synchronized long maxBuffered() {
    return maxBuffered;
  }

  /** The most key and value bytes the reader's buffer held. */
  public synchronized long maxBufferedBytes() {
    return maxBufferedBytes;
  }
}
