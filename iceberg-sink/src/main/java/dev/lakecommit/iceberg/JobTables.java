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
  private static final String UUID = "uuid-";
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
   * Registers a table the job is about to stage into, with its UUID; a table registered before keeps its entry (an
   * empty one, of a registration that a crash cut short, is written again).
   *
   * @throws IllegalStateException naming the table if it was registered with another UUID: it was dropped and
   *     created again while the job wrote it
   */
  void register(TableIdentifier table, String uuid) throws IOException {
    String name = TABLE + URLEncoder.encode(TableNames.encode(table), StandardCharsets.UTF_8);
    Optional<String> registered = read(name);
    if (registered.isPresent() && registered.get().isBlank()) {
      store.delete(name);
      registered = Optional.empty();
    }
    if (registered.isEmpty()) {
      claimName(table, uuid);
      try {
        store.publish(name, uuid.getBytes(StandardCharsets.UTF_8));
        return;
      } catch (FileAlreadyExistsException raced) {
        registered = written(name); // another writer of the job registered it meanwhile
      }
    }
    if (registered.isPresent() && !registered.get().isBlank() && !registered.get().equals(uuid)) {
      throw new IllegalStateException(recreated(table, registered.get(), uuid));
    }
  }

  /**
   * Records which name the job writes a table by ({@code uuid-<uuid>}): two names of one table (a catalog that
   * ignores case reads {@code db.EU} and {@code db.eu} as one) would commit one checkpoint's rows twice into it, and
   * the second would find the checkpoint there and add nothing.
   */
  private void claimName(TableIdentifier table, String uuid) throws IOException {
    String name = UUID + uuid;
    String encoded = TableNames.encode(table);
    Optional<String> named = read(name).filter(value -> !value.isBlank());
    if (named.isEmpty()) {
      try {
        store.publish(name, encoded.getBytes(StandardCharsets.UTF_8));
        return;
      } catch (FileAlreadyExistsException raced) {
        named = written(name); // another writer of the job named the table meanwhile
      }
    }
    if (named.isPresent() && !named.get().equals(encoded)) {
      throw new IllegalStateException("Tables " + TableNames.decode(named.get()) + " and " + table + " are the same"
          + " table (UUID " + uuid + "): the catalog does not tell their names apart (does it ignore case?); route"
          + " the records of one table to one name");
    }
  }

  /**
   * The value of an object another writer is publishing: on a file system the object exists, empty, before its
   * bytes are written. Read again for up to a second; empty if it stays empty (a publish a crash cut short).
   */
  private Optional<String> written(String name) throws IOException {
    for (int read = 0; ; read++) {
      Optional<String> value = read(name).filter(text -> !text.isBlank());
      if (value.isPresent() || read == 20) {
        return value;
      }
      try {
        Thread.sleep(50); // polling another process's write, bounded
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException("Interrupted while reading " + name);
      }
    }
  }

  static String recreated(TableIdentifier table, String registered, String now) {
    return "Table " + table + " is not the table the job wrote (UUID " + registered + " then, " + now + " now): it"
        + " was dropped and created again. Its staged files and checkpoints belong to the old table; start the job"
        + " afresh with a new job id";
  }

  /**
   * The registered tables and the UUIDs they were registered with. An empty entry (a registration a crash cut
   * short, before anything was staged) is none.
   */
  SortedMap<TableIdentifier, String> tables() throws IOException {
    SortedMap<TableIdentifier, String> tables = new TreeMap<>(java.util.Comparator.comparing(Object::toString));
    for (String name : store.list()) {
      if (name.startsWith(TABLE)) {
        Optional<String> uuid = read(name).filter(value -> !value.isBlank());
        uuid.ifPresent(value -> tables.put(TableNames.decode(
            URLDecoder.decode(name.substring(TABLE.length()), StandardCharsets.UTF_8)), value));
      }
    }
    return tables;
  }

  /**
   * Publishes a run's claim of an epoch before the run claims it in the tables, and keeps it only if no other run
   * published a claim of the same epoch by then: of two runs that claim the same epoch at the same moment, at least
   * one sees the other's claim and withdraws its own (a store on a file system or S3 cannot refuse a name two runs
   * write at once, but each run's claim has a name of its own). The oldest claims beyond the newest few go.
   *
   * @return false if another run claimed the same epoch: claim above it
   */
  boolean publishClaim(RunEpoch claim) throws IOException {
    String own = claimName(claim);
    store.publish(own, claim.value().getBytes(StandardCharsets.UTF_8));
    List<Claim> claims = claims();
    for (Claim other : claims) {
      if (other.epoch() == claim.epoch() && !other.name().equals(own)) {
        store.delete(own);
        return false;
      }
    }
    for (int i = 0; i < claims.size() - KEEP_CLAIMS - 1; i++) {
      try {
        store.delete(claims.get(i).name());
      } catch (IOException | RuntimeException e) {
        // an old claim left over is harmless: only the newest counts
      }
    }
    return true;
  }

  /** The newest claim published, if any (an empty or unreadable one, of a publication a crash cut short, is none). */
  Optional<RunEpoch> newestClaim() throws IOException {
    List<Claim> claims = claims();
    for (int i = claims.size() - 1; i >= 0; i--) {
      Optional<RunEpoch> claim = parse(claims.get(i).name());
      if (claim.isPresent()) {
        return claim;
      }
    }
    return Optional.empty();
  }

  /**
   * The highest epoch any claim published here names, readable or not (a claim a crash cut short still took its
   * epoch: the next run claims above it).
   */
  long highestClaimedEpoch() throws IOException {
    List<Claim> claims = claims();
    return claims.isEmpty() ? 0 : claims.get(claims.size() - 1).epoch();
  }

  /** The claim of an epoch, if it was published here. */
  Optional<RunEpoch> claim(long epoch) throws IOException {
    for (Claim claim : claims()) {
      if (claim.epoch() == epoch) {
        Optional<RunEpoch> parsed = parse(claim.name());
        if (parsed.isPresent()) {
          return parsed;
        }
      }
    }
    return Optional.empty();
  }

  private Optional<RunEpoch> parse(String name) throws IOException {
    Optional<String> value = read(name);
    if (value.isEmpty() || value.get().isBlank()) {
      return Optional.empty();
    }
    try {
      return Optional.of(RunEpoch.parse(jobId, value.get()));
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }

  private record Claim(long epoch, String name) {}

  /** The published claims, oldest epoch first. */
  private List<Claim> claims() throws IOException {
    List<Claim> claims = new ArrayList<>();
    for (String name : store.list()) {
      if (name.startsWith(CLAIM)) {
        String rest = name.substring(CLAIM.length());
        int dash = rest.indexOf('-');
        try {
          claims.add(new Claim(Long.parseLong(dash < 0 ? rest : rest.substring(0, dash)), name));
        } catch (NumberFormatException e) {
          // not a claim of this store's making
        }
      }
    }
    claims.sort(java.util.Comparator.comparingLong(Claim::epoch).thenComparing(Claim::name));
    return claims;
  }

  private static String claimName(RunEpoch claim) {
    try {
      byte[] digest = java.security.MessageDigest.getInstance("SHA-256")
          .digest(claim.value().getBytes(StandardCharsets.UTF_8));
      return String.format("%s%020d-%s", CLAIM, claim.epoch(), java.util.HexFormat.of().formatHex(digest, 0, 8));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private Optional<String> read(String name) throws IOException {
    try {
      return Optional.of(new String(store.read(name), StandardCharsets.UTF_8));
    } catch (FileNotFoundException | NoSuchFileException e) {
      return Optional.empty();
    }
  }
}
