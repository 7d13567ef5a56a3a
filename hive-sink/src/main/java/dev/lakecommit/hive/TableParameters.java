package dev.lakecommit.hive;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.JobId;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.EnvironmentContext;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.hive_metastoreConstants;
import org.apache.thrift.TException;

/**
 * The table and partition parameters Lakecommit reads and writes, and the one way it alters a table: a
 * compare-and-swap on {@value #VERSION_KEY}, checked by the metastore inside its own transaction
 * ({@code expected_parameter_key}, Hive 2.3.10 and 4.x) or under its table lock ({@link TableFencing}).
 * {@code alter_table} replaces all parameters, so every table
 * change of the sink is such a swap: a racing committer's change is never overwritten by a stale copy.
 */
final class TableParameters {
  /** Table-wide counter, incremented by every table change of the sink; the compare-and-swap key. */
  static final String VERSION_KEY = "lakecommit.version";
  /** On a partition or table the sink switched to new files: the location it replaced (deleted after the switch). */
  static final String REPLACED_LOCATION_KEY = "lakecommit.replaced-location";
  /**
   * A random id the sink gives a table when it creates it or first claims a run epoch in it: with the create time
   * and location, what tells a table from one dropped and created again under the same name within a second.
   */
  static final String TABLE_ID_KEY = "lakecommit.table-id";

  static final String NUM_FILES = "numFiles";
  static final String NUM_ROWS = "numRows";
  static final String TOTAL_SIZE = "totalSize";
  static final String RAW_DATA_SIZE = "rawDataSize";
  /**
   * Hive 4 counts erasure-coded files among the basic statistics and takes statistics without the count for
   * inaccurate (it dropped {@value #STATS_ACCURATE} from every partition the sink added); the sink writes none.
   */
  static final String NUM_ERASURE_CODED_FILES = "numFilesErasureCoded";
  static final String STATS_ACCURATE = "COLUMN_STATS_ACCURATE";
  static final String BASIC_STATS_ACCURATE = "{\"BASIC_STATS\":\"true\"}";
  /** Environment-context flag: the metastore must keep the statistics the sink wrote (and not list files). */
  static final String DO_NOT_UPDATE_STATS = "DO_NOT_UPDATE_STATS";
  private static final String DDL_TIME = hive_metastoreConstants.DDL_TIME;
  /** How the metastore's message for a stale {@code expected_parameter_value} starts. */
  static final String CONCURRENT_CHANGE = "The table has been modified";

  private TableParameters() {}

  /** The checkpoint of the job recorded in these (table or partition) parameters. */
  static OptionalLong committed(Map<String, String> parameters, JobId jobId) {
    String value = parameters == null ? null : parameters.get(CommitId.watermarkKey(jobId));
    if (value == null) {
      return OptionalLong.empty();
    }
    try {
      return OptionalLong.of(Long.parseLong(value.trim()));
    } catch (NumberFormatException e) {
      throw new IllegalStateException(
          String.format("Corrupt watermark %s=%s: not a checkpoint id", CommitId.watermarkKey(jobId), value), e);
    }
  }

  static void setCommitted(Map<String, String> parameters, CommitId id) {
    parameters.put(CommitId.watermarkKey(id.jobId()), Long.toString(id.checkpointId()));
  }

  /** The statistics, if all three are recorded. */
  static Optional<Stats> stats(Map<String, String> parameters) {
    try {
      String files = parameters.get(NUM_FILES);
      String rows = parameters.get(NUM_ROWS);
      String bytes = parameters.get(TOTAL_SIZE);
      if (files == null || rows == null || bytes == null) {
        return Optional.empty();
      }
      Stats stats = new Stats(Long.parseLong(files), Long.parseLong(rows), Long.parseLong(bytes));
      return stats.rows() < 0 ? Optional.empty() : Optional.of(stats);
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  /** Statistics the sink knows exactly (new partitions, replaced partitions): marked accurate. */
  static void setExactStats(Map<String, String> parameters, Stats stats) {
    parameters.put(NUM_FILES, Long.toString(stats.files()));
    parameters.put(NUM_ROWS, Long.toString(stats.rows()));
    parameters.put(TOTAL_SIZE, Long.toString(stats.bytes()));
    parameters.put(NUM_ERASURE_CODED_FILES, "0");
    parameters.remove(RAW_DATA_SIZE);
    parameters.put(STATS_ACCURATE, BASIC_STATS_ACCURATE);
  }

  /**
   * Adds the files of a checkpoint to recorded statistics. Unknown statistics stay unknown; column statistics are
   * no longer accurate (they do not cover the new rows).
   */
  static void addStats(Map<String, String> parameters, Stats added) {
    Optional<Stats> current = stats(parameters);
    boolean accurate = BASIC_STATS_ACCURATE.equals(parameters.get(STATS_ACCURATE))
        || String.valueOf(parameters.get(STATS_ACCURATE)).contains("\"BASIC_STATS\":\"true\"");
    parameters.remove(RAW_DATA_SIZE);
    if (current.isEmpty()) {
      parameters.remove(STATS_ACCURATE);
      return;
    }
    Stats sum = current.get().plus(added);
    parameters.put(NUM_FILES, Long.toString(sum.files()));
    parameters.put(NUM_ROWS, Long.toString(sum.rows()));
    parameters.put(TOTAL_SIZE, Long.toString(sum.bytes()));
    if (accurate) {
      parameters.putIfAbsent(NUM_ERASURE_CODED_FILES, "0");
      parameters.put(STATS_ACCURATE, BASIC_STATS_ACCURATE);
    } else {
      parameters.remove(STATS_ACCURATE);
    }
  }

  /** Keeps the statistics the sink writes: the metastore would otherwise recompute them by listing files. */
  static EnvironmentContext keepStats() {
    EnvironmentContext context = new EnvironmentContext(new HashMap<>());
    context.putToProperties(DO_NOT_UPDATE_STATS, "true");
    return context;
  }

  /** The table's change counter; empty if the sink never changed the table. */
  static Optional<Long> version(Table table) {
    String value = table.getParameters() == null ? null : table.getParameters().get(VERSION_KEY);
    try {
      return value == null ? Optional.empty() : Optional.of(Long.parseLong(value.trim()));
    } catch (NumberFormatException e) {
      throw new IllegalStateException(String.format("Corrupt %s=%s of table %s.%s: not a number", VERSION_KEY,
          value, table.getDbName(), table.getTableName()), e);
    }
  }

  /**
   * Replaces the table with {@code changed} if nobody changed the table since {@code read} was read (compared by
   * {@value #VERSION_KEY}, or by {@code transient_lastDdlTime} before the sink's first change), and increments
   * the counter: checked by the metastore, or under its table lock where it does not check ({@link TableFencing}).
   *
   * @throws ConflictException if the table changed meanwhile
   */
  static void swap(IMetaStoreClient client, TableFencing fencing, Table read, Table changed)
      throws TException, ConflictException {
    Map<String, String> params = changed.getParameters();
    EnvironmentContext context = keepStats();
    Optional<Long> version = version(read);
    String expectedKey;
    String expectedValue;
    if (version.isPresent()) {
      params.put(VERSION_KEY, Long.toString(version.get() + 1));
      expectedKey = VERSION_KEY;
      expectedValue = Long.toString(version.get());
    } else {
      // The first change of the sink: compare by the DDL time every table has, and start the counter.
      String ddlTime = read.getParameters() == null ? null : read.getParameters().get(DDL_TIME);
      if (ddlTime == null) {
        throw new IllegalStateException("Table " + read.getDbName() + "." + read.getTableName() + " has neither "
            + VERSION_KEY + " nor " + DDL_TIME + "; set " + VERSION_KEY + "=0 on it to let the sink write it");
      }
      params.put(VERSION_KEY, "1");
      params.put(DDL_TIME, Long.toString(Math.max(Long.parseLong(ddlTime) + 1, System.currentTimeMillis() / 1000)));
      expectedKey = DDL_TIME;
      expectedValue = ddlTime;
    }
    String name = read.getDbName() + "." + read.getTableName();
    if (fencing == TableFencing.TABLE_LOCK) {
      long lock = TableFencing.lock(client, read.getDbName(), read.getTableName());
      try {
        Table current = client.getTable(read.getDbName(), read.getTableName());
        String held = current.getParameters() == null ? null : current.getParameters().get(expectedKey);
        if (!expectedValue.equals(held)) {
          throw new ConflictException("Table " + name + " changed while committing: " + expectedKey + " is " + held
              + ", expected " + expectedValue + " (checked under the metastore's table lock)", null);
        }
        client.alter_table_with_environmentContext(read.getDbName(), read.getTableName(), changed, context);
      } finally {
        TableFencing.unlockQuietly(client, lock);
      }
      return;
    }
    expect(context, expectedKey, expectedValue);
    try {
      client.alter_table_with_environmentContext(read.getDbName(), read.getTableName(), changed, context);
    } catch (MetaException e) {
      if (e.getMessage() != null && e.getMessage().startsWith(CONCURRENT_CHANGE)) {
        throw new ConflictException("Table " + name + " changed while committing: " + e.getMessage(), e);
      }
      throw e;
    }
  }

  private static void expect(EnvironmentContext context, String key, String value) {
    context.putToProperties(hive_metastoreConstants.EXPECTED_PARAMETER_KEY, key);
    context.putToProperties(hive_metastoreConstants.EXPECTED_PARAMETER_VALUE, value);
  }

  /** Another writer changed the table or added a partition first: re-check and retry. */
  static final class ConflictException extends Exception {
    ConflictException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
