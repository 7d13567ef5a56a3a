package dev.lakecommit.ingest;

import dev.lakecommit.core.testing.KafkaBroker;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TimeoutException;

/**
 * The stream audit's producer: each batch of ids goes in one transaction, and a batch counts as produced only once
 * its commit returned. It rides through broker outages of any length up to a bound per batch:
 * <ul>
 *   <li>a commit that timed out is called again: the outcome is pending in the producer, and Kafka allows only a
 *       retry of the same call (an abort could race a commit the coordinator already has);</li>
 *   <li>any other error before the commit went out aborts the transaction and the batch is sent again: aborted
 *       records stay invisible to a read_committed reader, so the topic holds each id once;</li>
 *   <li>a producer left unusable (a fatal error) is replaced by a new one with the same transactional id, whose
 *       initialisation fences the old one and aborts its open transaction — but only while that transaction was
 *       never asked to commit: after a commit request its outcome is unknown, and the writer fails rather than
 *       guess, since a re-sent batch that had committed would put its ids in the topic twice.</li>
 * </ul>
 */
final class TransactionalBatches implements AutoCloseable {
  private final KafkaBroker broker;
  private final String transactionalId;
  private final Duration bound;
  private final Map<String, String> overrides;
  private KafkaProducer<String, String> producer;
  // written by the producing thread only; volatile for a test that watches from another
  private volatile long committed;
  private volatile long resent;
  private volatile long commitRetries;
  private volatile long abortRetries;
  private volatile long replaced;

  /** A writer for {@code transactionalId}; {@code bound} is how long one batch may take, retries included. */
  TransactionalBatches(KafkaBroker broker, String transactionalId, Duration bound) {
    this(broker, transactionalId, bound, Map.of());
  }

  /** The same with further producer properties ({@code overrides}: shorter client timeouts in a test). */
  TransactionalBatches(KafkaBroker broker, String transactionalId, Duration bound, Map<String, String> overrides) {
    this.broker = broker;
    this.transactionalId = transactionalId;
    this.bound = bound;
    this.overrides = Map.copyOf(overrides);
  }

  /** How often the writer met a timeout or an error and tried again: commit and abort retries, re-sent batches. */
  long setbacks() {
    return resent + commitRetries + abortRetries;
  }

  /**
   * Produces ids {@code [from, to)} to {@code topic} in one transaction and returns once its commit returned.
   *
   * @throws IllegalStateException if the batch is not committed within the bound, or if its outcome became unknown
   *     (the message names the ids and the last error)
   */
  void commit(String topic, long from, long to) {
    long deadline = System.nanoTime() + bound.toNanos();
    KafkaException last = null;
    while (System.nanoTime() < deadline) {
      if (producer == null) {
        producer = init(deadline, from, to);
      }
      boolean commitRequested = false;
      try {
        producer.beginTransaction();
        KafkaTopics.send(producer, topic, from, to);
        commitRequested = true;
        commitUntil(deadline, from, to);
        committed++;
        return;
      } catch (KafkaException e) {
        last = e;
        if (!abort(deadline)) {
          if (commitRequested) {
            throw new IllegalStateException("Producer " + transactionalId + " failed after asking to commit ids ["
                + from + ", " + to + "); the outcome is unknown", e);
          }
          replace();
        }
        resent++;
      }
    }
    throw new IllegalStateException("Producer " + transactionalId + " did not commit ids [" + from + ", " + to
        + ") within " + bound, last);
  }

  /** Calls commit again while it times out: the only call Kafka allows after a commit that timed out. */
  private void commitUntil(long deadline, long from, long to) {
    while (true) {
      try {
        producer.commitTransaction();
        return;
      } catch (TimeoutException e) {
        commitRetries++;
        if (System.nanoTime() >= deadline) {
          throw new IllegalStateException("Producer " + transactionalId + " could not learn whether ids [" + from
              + ", " + to + ") committed within " + bound, e);
        }
      }
    }
  }

  /** Aborts the open transaction, again while it times out; false if the producer is unusable (a fatal error). */
  private boolean abort(long deadline) {
    while (true) {
      try {
        producer.abortTransaction();
        return true;
      } catch (TimeoutException e) {
        abortRetries++;
        if (System.nanoTime() >= deadline) {
          return false;
        }
      } catch (KafkaException e) {
        return false;
      }
    }
  }

  private void replace() {
    producer.close(Duration.ZERO);
    producer = null;
    replaced++;
  }

  /** A new producer for the transactional id; its initialisation, retried while it times out, fences the old one. */
  private KafkaProducer<String, String> init(long deadline, long from, long to) {
    KafkaProducer<String, String> created = KafkaTopics.uninitialisedProducer(broker, transactionalId, overrides);
    while (true) {
      try {
        created.initTransactions();
        return created;
      } catch (TimeoutException e) {
        if (System.nanoTime() >= deadline) {
          created.close(Duration.ZERO);
          throw new IllegalStateException("Producer " + transactionalId + " could not initialise for ids [" + from
              + ", " + to + ") within " + bound, e);
        }
      } catch (RuntimeException e) {
        created.close(Duration.ZERO);
        throw e;
      }
    }
  }

  @Override
  public void close() {
    if (producer != null) {
      producer.close(Duration.ofSeconds(10));
    }
  }

  @Override
  public String toString() {
    return String.format("producer %s: %,d transactions committed, %,d batches re-sent after an abort, %,d commit "
        + "and %,d abort retries after a timeout, %,d producers replaced", transactionalId, committed, resent,
        commitRetries, abortRetries, replaced);
  }
}
