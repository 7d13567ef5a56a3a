package dev.lakecommit.iceberg;

import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.runtime.BlobStore;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * What a job of a {@link MultiTableSink} keeps of itself beside its tables (DESIGN.md rule 15): every table it stages
 * into, registered with the table's UUID before the job's first staged file there, so that a restart finds and
 * sweeps what it staged even in a table it never committed to; and every run's claim of an epoch, published before
 * the run claims it in the tables, so that a writer that registered a table the claim did not see finds itself
 * fenced. Objects {@code table-<name>} and {@code claim-<epoch>} of a {@link BlobStore} of the job's own.
 */
final class JobTables {
  private static final String TABLE = "table-";
  private static final String CLAIM = "claim-";
  /** Claims kept besides the newest. */
  private static final int KEEP_CLAIMS = 10;

  private final JobId jobId;
  private final BlobStore store;

  JobTables(JobId jobId, BlobStore store) {
    this.jobId = jobId;
    this.store = store;
  }

  String location() {
    return store.location();
  }

  /**
   * Registers a table the job is about to stage into, with its UUID; a table registered before keeps its entry.
   *
   * @throws IllegalStateException naming the table if it was registered with another UUID: it was dropped and
   *     created again while the job wrote it
   */
  void register(TableIdentifier table, String uuid) throws IOException {
    String name = TABLE + URLEncoder.encode(table.toString(), StandardCharsets.UTF_8);
    Optional<String> registered = read(name);
    if (registered.isEmpty()) {
      try {
        store.publish(name, uuid.getBytes(StandardCharsets.UTF_8));
        return;
      } catch (FileAlreadyExistsException raced) {
        registered = read(name); // another writer of the job registered it meanwhile
      }
    }
    if (registered.isPresent() && !registered.get().equals(uuid)) {
      throw new IllegalStateException(recreated(table, registered.get(), uuid));
    }
  }

  static String recreated(TableIdentifier table, String registered, String now) {
    return "Table " + table + " is not the table the job wrote (UUID " + registered + " then, " + now + " now): it"
        + " was dropped and created again. Its staged files and checkpoints belong to the old table; start the job"
        + " afresh with a new job id";
  }

  /** The registered tables and the UUIDs they were registered with. */
  SortedMap<TableIdentifier, String> tables() throws IOException {
    SortedMap<TableIdentifier, String> tables = new TreeMap<>(java.util.Comparator.comparing(Object::toString));
    for (String name : store.list()) {
      if (name.startsWith(TABLE)) {
        Optional<String> uuid = read(name);
        uuid.ifPresent(value -> tables.put(TableIdentifier.parse(
            URLDecoder.decode(name.substring(TABLE.length()), StandardCharsets.UTF_8)), value));
      }
    }
    return tables;
  }

  /**
   * Publishes a run's claim before the run claims it in the tables; the oldest claims beyond the newest few go.
   *
   * @throws FileAlreadyExistsException if another run published a claim of the same epoch first (where the store
   *     can tell)
   */
  void publishClaim(RunEpoch claim) throws IOException {
    store.publish(claimName(claim.epoch()), claim.value().getBytes(StandardCharsets.UTF_8));
    List<Long> epochs = claims();
    for (int i = 0; i < epochs.size() - KEEP_CLAIMS - 1; i++) {
      try {
        store.delete(claimName(epochs.get(i)));
      } catch (IOException | RuntimeException e) {
        // an old claim left over is harmless: only the newest counts
      }
    }
  }

  /** The newest claim published, if any. */
  Optional<RunEpoch> newestClaim() throws IOException {
    List<Long> epochs = claims();
    for (int i = epochs.size() - 1; i >= 0; i--) {
      Optional<String> value = read(claimName(epochs.get(i)));
      if (value.isPresent()) {
        return Optional.of(RunEpoch.parse(jobId, value.get()));
      }
    }
    return Optional.empty();
  }

  /** The claim of an epoch, if it was published here. */
  Optional<RunEpoch> claim(long epoch) throws IOException {
    return read(claimName(epoch)).map(value -> RunEpoch.parse(jobId, value));
  }

  private List<Long> claims() throws IOException {
    List<Long> epochs = new ArrayList<>();
    for (String name : store.list()) {
      if (name.startsWith(CLAIM)) {
        try {
          epochs.add(Long.parseLong(name.substring(CLAIM.length())));
        } catch (NumberFormatException e) {
          // not a claim of this store's making
        }
      }
    }
    Collections.sort(epochs);
    return epochs;
  }

  private static String claimName(long epoch) {
    return String.format("%s%020d", CLAIM, epoch);
  }

  private Optional<String> read(String name) throws IOException {
    try {
      return Optional.of(new String(store.read(name), StandardCharsets.UTF_8));
    } catch (FileNotFoundException | NoSuchFileException e) {
      return Optional.empty();
    }
  }
}
