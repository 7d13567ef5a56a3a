package dev.lakecommit.core.runtime;

import dev.lakecommit.core.JobId;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The cut records of a job whose tables commit one by one (DESIGN.md rule 14): after every table of checkpoint N
 * holds N, one record naming each table's version of N is published in one atomic write. A reader that reads every
 * table as the newest record names it sees one checkpoint of all of them; a run that crashed between the tables'
 * commits and the record publishes it when it replays the checkpoint, before it writes anything new.
 *
 * <p>Records are objects {@code cut-<checkpoint>} of a {@link BlobStore}, each a small text: a header line, the
 * job, the checkpoint, one {@code table<TAB>name<TAB>version} line per table and one
 * {@code property<TAB>key<TAB>value} line per property of the job's position. A store holds one job's records. Publishing the same record again is a
 * no-op; a different record under a published name is refused.
 */
public final class CutRecords {
  private static final String PREFIX = "cut-";
  private static final String HEADER = "lakecommit-cut 1";
  /** Records kept besides the newest: a reader that listed an older one can still read it. */
  private static final int KEEP = 10;

  private final BlobStore store;

  public CutRecords(BlobStore store) {
    this.store = store;
  }

  /**
   * One checkpoint's cut.
   *
   * @param tables each table's version of the checkpoint (an Iceberg snapshot id, Hive partitions), by table name
   * @param properties the job's position at the checkpoint (its source offsets, say), by key
   */
  public record Cut(JobId jobId, long checkpointId, SortedMap<String, String> tables,
      SortedMap<String, String> properties) {
    public Cut {
      if (checkpointId < 1) {
        throw new IllegalArgumentException("Invalid checkpoint id of a cut: " + checkpointId);
      }
      tables = checked(tables, "table");
      properties = checked(properties, "property");
    }

    /** A cut without properties. */
    public Cut(JobId jobId, long checkpointId, SortedMap<String, String> tables) {
      this(jobId, checkpointId, tables, new TreeMap<>());
    }

    private static SortedMap<String, String> checked(Map<String, String> entries, String kind) {
      for (Map.Entry<String, String> entry : entries.entrySet()) {
        if (entry.getKey().contains("\t") || entry.getKey().contains("\n") || entry.getValue().contains("\n")) {
          throw new IllegalArgumentException("Invalid " + kind + " in a cut: " + entry);
        }
      }
      return Collections.unmodifiableSortedMap(new TreeMap<>(entries));
    }

    byte[] toBytes() {
      StringBuilder text = new StringBuilder(HEADER).append('\n');
      text.append("job\t").append(jobId.value()).append('\n');
      text.append("checkpoint\t").append(checkpointId).append('\n');
      tables.forEach((table, version) -> text.append("table\t").append(table).append('\t').append(version)
          .append('\n'));
      properties.forEach((key, value) -> text.append("property\t").append(key).append('\t').append(value)
          .append('\n'));
      return text.toString().getBytes(StandardCharsets.UTF_8);
    }

    static Cut parse(byte[] bytes, String where) throws IOException {
      String[] lines = new String(bytes, StandardCharsets.UTF_8).split("\n");
      if (lines.length < 3 || !lines[0].equals(HEADER)) {
        throw new IOException("Cut record " + where + " is not a Lakecommit cut record (first line '"
            + (lines.length == 0 ? "" : lines[0]) + "')");
      }
      try {
        JobId job = JobId.of(field(lines[1], "job", where));
        long checkpoint = Long.parseLong(field(lines[2], "checkpoint", where));
        SortedMap<String, String> tables = new TreeMap<>();
        SortedMap<String, String> properties = new TreeMap<>();
        for (int i = 3; i < lines.length; i++) {
          String[] parts = lines[i].split("\t", 3);
          if (parts.length == 3 && parts[0].equals("table")) {
            tables.put(parts[1], parts[2]);
          } else if (parts.length == 3 && parts[0].equals("property")) {
            properties.put(parts[1], parts[2]);
          } else {
            throw new IOException("Cut record " + where + ": line " + (i + 1) + " is neither 'table<TAB>name<TAB>"
                + "version' nor 'property<TAB>key<TAB>value'");
          }
        }
        return new Cut(job, checkpoint, tables, properties);
      } catch (IllegalArgumentException e) {
        throw new IOException("Corrupt cut record " + where + ": " + e.getMessage(), e);
      }
    }

    private static String field(String line, String name, String where) throws IOException {
      if (!line.startsWith(name + "\t")) {
        throw new IOException("Cut record " + where + ": expected '" + name + "' but read '" + line + "'");
      }
      return line.substring(name.length() + 1);
    }
  }

  /**
   * Publishes the cut; again for a cut already published (a replay) it does nothing, and it removes records older
   * than the newest few.
   *
   * @throws IllegalStateException if a different cut of the same checkpoint was published
   */
  public void publish(Cut cut) throws IOException {
    String name = name(cut.checkpointId());
    try {
      store.publish(name, cut.toBytes());
    } catch (FileAlreadyExistsException e) {
      Cut published = Cut.parse(store.read(name), where(name));
      if (!published.equals(cut)) {
        throw new IllegalStateException("Cut record " + where(name) + " names " + published.tables()
            + ", not " + cut.tables() + ": two runs published checkpoint " + cut.checkpointId()
            + " of job " + cut.jobId() + " differently");
      }
      return;
    }
    try {
      List<Long> checkpoints = checkpoints();
      for (int i = 0; i < checkpoints.size() - 1 - KEEP; i++) {
        store.delete(name(checkpoints.get(i)));
      }
    } catch (IOException | RuntimeException e) {
      // the record is published; older ones go at the next publish
      org.slf4j.LoggerFactory.getLogger(CutRecords.class).debug("Could not delete old cut records at {}: {}",
          store.location(), e.toString());
    }
  }

  /** The newest published cut, if any. */
  public Optional<Cut> last() throws IOException {
    List<Long> checkpoints = checkpoints();
    if (checkpoints.isEmpty()) {
      return Optional.empty();
    }
    String name = name(checkpoints.get(checkpoints.size() - 1));
    return Optional.of(Cut.parse(store.read(name), where(name)));
  }

  /** The published cut of the checkpoint, if any. */
  public Optional<Cut> of(long checkpointId) throws IOException {
    String name = name(checkpointId);
    if (!store.list().contains(name)) {
      return Optional.empty();
    }
    return Optional.of(Cut.parse(store.read(name), where(name)));
  }

  /** Where the records are, for messages. */
  public String location() {
    return store.location();
  }

  private List<Long> checkpoints() throws IOException {
    List<Long> checkpoints = new ArrayList<>();
    for (String name : store.list()) {
      if (name.startsWith(PREFIX)) {
        try {
          checkpoints.add(Long.parseLong(name.substring(PREFIX.length())));
        } catch (NumberFormatException e) {
          // not a record: a temporary file of a local store, or someone else's object
        }
      }
    }
    Collections.sort(checkpoints);
    return checkpoints;
  }

  private static String name(long checkpointId) {
    return PREFIX + String.format("%020d", checkpointId);
  }

  private String where(String name) {
    return store.location() + "/" + name;
  }
}
