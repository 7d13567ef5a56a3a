package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.FencedException;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.WriterContext;
import dev.lakecommit.core.runtime.BlobStore;
import dev.lakecommit.core.runtime.CutRecords;
import dev.lakecommit.core.runtime.LocalBlobStore;
import dev.lakecommit.staging.FileIOBlobStore;
import dev.lakecommit.staging.InputConverter;
import dev.lakecommit.staging.StagingLayout;
import dev.lakecommit.staging.StagingWriterConfig;
import dev.lakecommit.staging.StagingWriterState;
import dev.lakecommit.staging.StagingWriterStateSerializer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.io.FileIO;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes one job's records to many Iceberg tables of one catalog, each checkpoint one <b>cut</b> over every table it
 * touched (DESIGN.md rules 14–16): where the catalog commits several tables at once (a JDBC catalog; a REST catalog
 * declared atomic) all of them show the checkpoint or none does; elsewhere the tables commit one by one and a cut
 * record names each table's snapshot of the checkpoint ({@link CutCommitter}).
 *
 * <p>Each record names its table through the sink's router. A table is created on its first record from the
 * template (the schema for its name, the partitioning, the properties); a table that exists is written with its own
 * schema. Before a writer stages its first file in a table, the table is registered in the job's state (so a
 * restart sweeps it) and holds the run's epoch (so an older run stages and commits nothing there). One writer's open
 * files and buffered bytes stay within the sink's bounds over all its tables together ({@code WriteBudget}).
 *
 * <p>The job's state (its tables and run claims, and in cut-record mode its cut records) lives under the state
 * location, one directory per job: by default {@code <warehouse>/_lakecommit/jobs}.
 *
 * @param <IN> records written
 */
public final class MultiTableSink<IN>
    implements Sink<IN, TableManifests, StagingWriterState>,
        SupportsAggregatedCommitter<TableManifests, CutCommittable>,
        SupportsTarget {
  private static final Logger LOG = LoggerFactory.getLogger(MultiTableSink.class);

  private final Builder<IN> config;
  private final Catalog catalog;
  private final FileIO stateIo;
  private final String stateLocation;
  /** How a cut becomes visible on the catalog, found when the sink was built. */
  private final String cutMode;
  /** The tables this process prepared for a run (job and epoch), so each is prepared once per run. */
  private final Map<String, Table> prepared = new ConcurrentHashMap<>();
  /** The epoch each job's run claimed in this process ({@link MultiTableTarget#claimEpoch}). */
  private final Map<JobId, RunEpoch> claims = new ConcurrentHashMap<>();
  /** The cut committers the writers carry epochs with, one per job. */
  private final Map<JobId, CutCommitter> carriers = new ConcurrentHashMap<>();
  private boolean idempotencyCheck = true;
  private Runnable beforeCutRecord = () -> {};

  private MultiTableSink(Builder<IN> config) {
    this.config = config;
    try {
      this.catalog = CatalogLoader.load(config.catalogName, config.catalogProperties,
          HadoopConfs.from(config.catalogProperties));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(String.format("Cannot load catalog '%s' (type=%s): %s", config.catalogName,
          config.catalogProperties.getOrDefault("type", config.catalogProperties.get("catalog-impl")),
          e.getMessage()), e);
    }
    String warehouse = config.catalogProperties.get(CatalogProperties.WAREHOUSE_LOCATION);
    String given = config.stateLocation != null ? config.stateLocation
        : config.catalogProperties.get(STATE_LOCATION_KEY);
    if (given == null && !isLocation(warehouse)) {
      throw new IllegalArgumentException("Catalog '" + config.catalogName + "' has no warehouse location"
          + (warehouse == null ? "" : " ('" + warehouse + "' names none)") + ": give a location for the jobs' tables"
          + " and cut records, the catalog property " + STATE_LOCATION_KEY + " (-C " + STATE_LOCATION_KEY
          + "=s3://bucket/lakecommit) or stateLocation(...)");
    }
    this.stateLocation = given != null ? strip(given) : strip(warehouse) + "/_lakecommit/jobs";
    String io = config.catalogProperties.getOrDefault(CatalogProperties.FILE_IO_IMPL,
        "org.apache.iceberg.hadoop.HadoopFileIO");
    this.stateIo = CatalogUtil.loadFileIO(io, config.catalogProperties, HadoopConfs.from(config.catalogProperties));
    // refuses a catalog without atomic cuts where one is required, before anything is written
    try (CutCommitter check = cutCommitter(JobId.of("check"))) {
      this.cutMode = check.mode();
    }
    LOG.info("Multi-table sink on catalog {}: {}", config.catalogName, cutMode);
  }

  /**
   * The catalog property naming where the jobs' state lives (their tables, run claims, cut records), for catalogs
   * whose warehouse is no location (a REST catalog's warehouse is often a name).
   */
  public static final String STATE_LOCATION_KEY = "lakecommit.state-location";

  private static boolean isLocation(String warehouse) {
    return warehouse != null
        && (warehouse.contains("://") || warehouse.startsWith("/") || warehouse.startsWith("file:"));
  }

  private static String strip(String location) {
    return location.endsWith("/") ? location.substring(0, location.length() - 1) : location;
  }

  /** A sink of Iceberg generic records, each of its table's schema (the template's for a table it creates). */
  public static Builder<Record> forRecords(Map<String, String> catalogProperties) {
    return new Builder<Record>(catalogProperties).converter(schema -> InputConverter.records());
  }

  /**
   * A sink of Iceberg generic records of {@code recordSchema}: every table the sink creates gets it, and a table
   * that exists takes the records' columns by name.
   */
  public static Builder<Record> forRecords(Map<String, String> catalogProperties, Schema recordSchema) {
    return new Builder<Record>(catalogProperties).schema(recordSchema).checkTemplate(true)
        .converter(tableSchema -> RecordProjection.of(recordSchema, tableSchema));
  }

  /**
   * A sink of Iceberg generic records of several schemas (the rows of a change stream's source tables): each
   * record's columns are taken by name into its table's schema. A table is created from {@link Builder#schemas}; one
   * that exists is checked against it as with {@link #forRecords(Map, Schema)}.
   */
  public static Builder<Record> forRecordsByName(Map<String, String> catalogProperties) {
    return new Builder<Record>(catalogProperties).checkTemplate(true).converter(tableSchema -> {
      Map<org.apache.iceberg.types.Types.StructType, InputConverter<Record>> byStruct =
          java.util.Collections.synchronizedMap(new java.util.IdentityHashMap<>());
      return record -> byStruct.computeIfAbsent(record.struct(),
          struct -> RecordProjection.of(new Schema(struct.fields()), tableSchema)).convert(record);
    });
  }

  /** A sink of any input, converted to each table's schema by a function of that schema. */
  public static <IN> Builder<IN> forInput(Map<String, String> catalogProperties,
      Function<Schema, InputConverter<IN>> converterForTableSchema) {
    return new Builder<IN>(catalogProperties).converter(converterForTableSchema);
  }

  /** Where the jobs' state lives: {@code <location>/<job id>/}. */
  public String stateLocation() {
    return stateLocation;
  }

  /** How a cut becomes visible on this sink's catalog, for a run's start message. */
  public String cutMode() {
    return cutMode;
  }

  /**
   * The job's last cut: its checkpoint and every table's snapshot of it (a table the checkpoint did not touch at its
   * newest snapshot of the job before it). Reading each table at its snapshot reads the cut.
   *
   * @return empty if the job has committed no cut
   * @throws IOException if the job's state or a table cannot be read
   */
  public java.util.Optional<CutCommitter.Cut> lastCut(JobId jobId) throws IOException {
    return lastCut(jobId, List.of());
  }

  /**
   * The job's last cut, with those of its properties named (set by the cut's commits, as an engine adapter sets its
   * own position: see {@link dev.lakecommit.core.SupportsCommitProperties}).
   *
   * @return empty if the job has committed no cut
   * @throws IOException if the job's state or a table cannot be read
   */
  public java.util.Optional<CutCommitter.Cut> lastCut(JobId jobId, java.util.Collection<String> propertyKeys)
      throws IOException {
    java.util.Collection<TableIdentifier> tables = jobTables(jobId).tables().keySet();
    try (CutCommitter cut = cutCommitter(jobId)) {
      return cut.lastCut(jobId, tables, propertyKeys);
    } catch (RuntimeException e) {
      throw new IOException("Cannot read the last cut of job " + jobId + ": " + e.getMessage(), e);
    }
  }

  /** Test-only: cut without the idempotency check. */
  MultiTableSink<IN> idempotencyCheck(boolean enabled) {
    this.idempotencyCheck = enabled;
    return this;
  }

  /** Test-only: runs between a cut's table commits and its record (cut-record mode). */
  MultiTableSink<IN> beforeCutRecord(Runnable hook) {
    this.beforeCutRecord = hook;
    return this;
  }

  /** A run of the job claimed {@code claim} in this process: its writers carry exactly it into their tables. */
  void claimed(JobId jobId, RunEpoch claim) {
    claims.put(jobId, claim);
  }

  /** The sink's catalog, usable until the sink is closed. */
  public Catalog catalog() {
    return catalog;
  }

  /** The job's tables and run claims. */
  JobTables jobTables(JobId jobId) {
    return new JobTables(jobId, stateStore(jobId, "tables"));
  }

  /**
   * A directory of the job's state. On local disk through the file system itself: each object is published whole
   * (written aside, then linked in place), and a listing does not start a process per file as Hadoop's local file
   * system does without its native library. Elsewhere through the catalog's file IO.
   */
  private BlobStore stateStore(JobId jobId, String directory) {
    String location = stateLocation + "/" + jobId.value() + "/" + directory;
    if (location.startsWith("/") || location.startsWith("file:")) {
      try {
        return new LocalBlobStore(location.startsWith("/") ? Path.of(location)
            : Path.of(java.net.URI.create(location)));
      } catch (IOException e) {
        throw new UncheckedIOException("Cannot create the job's state directory " + location + ": "
            + e.getMessage(), e);
      }
    }
    return new FileIOBlobStore(stateIo, location);
  }

  /** A cut committer for the job on this sink's catalog; the caller closes it. */
  CutCommitter cutCommitter(JobId jobId) {
    CutRecords records = new CutRecords(stateStore(jobId, "cuts"));
    return CutCommitter.forCatalog(catalog, config.catalogProperties, records,
        config.requireAtomicCut).idempotencyCheck(idempotencyCheck).beforeRecord(beforeCutRecord);
  }

  /** Where the sink stages files of a table. */
  static StagingLayout layout(Table table) {
    return StagingLayout.under(IcebergSink.stagingRoot(table));
  }

  /** The table a record goes to, checked. */
  TableIdentifier route(IN record) {
    TableIdentifier table;
    try {
      table = config.router.apply(record);
    } catch (IllegalArgumentException e) {
      throw e; // the router's own message names the record
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("Cannot route record " + abbreviated(record) + " to a table: "
          + e.getMessage(), e);
    }
    if (table == null || table.name().isBlank()) {
      throw new IllegalArgumentException("Record " + abbreviated(record) + " routes to no table");
    }
    return table;
  }

  private static String abbreviated(Object record) {
    String text = String.valueOf(record);
    return text.length() > 200 ? text.substring(0, 200) + "…" : text;
  }

  /**
   * The table a writer of a run stages into, made ready once per run in this process: loaded, or created from
   * the template; registered in the job's state; holding the run's epoch. Thread-safe.
   *
   * @throws FencedException if a newer run of the job holds the table or has claimed the job
   */
  Table prepare(JobId jobId, long epoch, TableIdentifier identifier) {
    String key = jobId.value() + "\n" + epoch + "\n" + identifier;
    Table ready = prepared.get(key);
    if (ready != null) {
      return ready;
    }
    synchronized (prepared) {
      ready = prepared.get(key);
      if (ready == null) {
        try {
          ready = prepareNow(jobId, epoch, identifier);
        } catch (IOException e) {
          throw new UncheckedIOException("Cannot prepare table " + identifier + " for job " + jobId + ": "
              + e.getMessage(), e);
        }
        prepared.put(key, ready);
      }
      return ready;
    }
  }

  private Table prepareNow(JobId jobId, long epoch, TableIdentifier identifier) throws IOException {
    if (epoch <= 0) {
      throw new IllegalStateException("No run epoch was claimed for job " + jobId + " (writer context epoch 0):"
          + " refusing to write table " + identifier + " unfenced; run the sink in a runtime that claims one");
    }
    Table table = loadOrCreate(identifier);
    JobTables tables = jobTables(jobId);
    tables.register(identifier, ((HasTableOperations) table).operations().current().uuid());
    // the run's own claim where it was made in this process, else as the job's state holds it
    RunEpoch claimed = claims.get(jobId);
    RunEpoch run = claimed != null && claimed.epoch() == epoch ? claimed
        : tables.claim(epoch).orElse(new RunEpoch(epoch, "a run of job " + jobId));
    carriers.computeIfAbsent(jobId, this::cutCommitter).carry(jobId, run, identifier);
    // a claim that did not see this table's registration fences this run here (JobTables)
    RunEpoch newest = tables.newestClaim().orElse(run);
    if (newest.epoch() > epoch) {
      throw new FencedException(identifier.toString(), jobId, epoch, newest);
    }
    return catalog.loadTable(identifier);
  }

  private Table loadOrCreate(TableIdentifier identifier) {
    try {
      return catalog.loadTable(identifier);
    } catch (NoSuchTableException missing) {
      Schema schema;
      try {
        schema = Objects.requireNonNull(config.schemas.apply(identifier), "no schema");
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("Table " + identifier + " does not exist and the sink has no schema to"
            + " create it with: " + e.getMessage(), e);
      }
      Namespace namespace = identifier.namespace();
      if (catalog instanceof SupportsNamespaces namespaces && !namespace.isEmpty()
          && !namespaces.namespaceExists(namespace)) {
        try {
          namespaces.createNamespace(namespace);
        } catch (RuntimeException raced) {
          // another writer created it meanwhile: AlreadyExistsException, or a JDBC catalog's failed insert
          if (!namespaces.namespaceExists(namespace)) {
            throw raced;
          }
        }
      }
      Map<String, String> properties = new HashMap<>(config.tableProperties);
      properties.putIfAbsent(org.apache.iceberg.TableProperties.METADATA_DELETE_AFTER_COMMIT_ENABLED, "true");
      properties.putIfAbsent(org.apache.iceberg.TableProperties.METADATA_PREVIOUS_VERSIONS_MAX,
          Integer.toString(TableSetup.DEFAULT_PREVIOUS_VERSIONS_MAX));
      List<String> key = upsertKey(identifier);
      if (!key.isEmpty()) {
        // as for one table: delete files need format v2, and the key becomes the table's identifier fields
        properties.putIfAbsent("format-version", "2");
        java.util.Set<Integer> ids = new java.util.HashSet<>();
        for (String column : key) {
          org.apache.iceberg.types.Types.NestedField field = schema.asStruct().field(column);
          if (field == null || field.isOptional() || !field.type().isPrimitiveType()) {
            throw new IllegalArgumentException(String.format("Invalid upsert key %s of table %s: '%s' is not a"
                + " required primitive top-level column of its schema %s", key, identifier, column,
                schema.asStruct()));
          }
          ids.add(field.fieldId());
        }
        schema = new Schema(schema.columns(), ids);
      }
      org.apache.iceberg.PartitionSpec spec = PartitionSpecs.parse(schema, config.partitionBy.apply(identifier));
      try {
        Table table = catalog.createTable(identifier, schema, spec, properties);
        LOG.info("Created table {} on its first record", identifier);
        return table;
      } catch (RuntimeException raced) {
        // another writer created it meanwhile: AlreadyExistsException, or a JDBC catalog's failed insert
        if (!catalog.tableExists(identifier)) {
          throw raced;
        }
        return catalog.loadTable(identifier);
      }
    }
  }

  /**
   * The schema a writer stages into {@code table} with. The table's own, unless the records' schema is checked
   * against it ({@link #forRecords(Map, Schema)}, or a schema function given with {@link Builder#checkTemplate}) or
   * may evolve it ({@link Builder#addNewColumns}); then by the rules of one table ({@link TableSetup#writeSchema}):
   * the table's own if the template fits it, with the template's new optional columns and wider types where the
   * sink adds them, the table then evolving in the cut that commits the files.
   *
   * @throws IllegalArgumentException naming the table and the column if the template's schema does not fit the
   *     table (and may not evolve it)
   */
  Schema writeSchema(TableIdentifier identifier, Table table) {
    if (!config.addNewColumns && !config.checkTemplate) {
      return table.schema();
    }
    Schema template;
    try {
      template = config.schemas.apply(identifier);
    } catch (RuntimeException e) {
      // a function of the schemas of the tables the sink creates may know no other table
      template = null;
    }
    return template == null ? table.schema() : TableSetup.writeSchema(table, template, config.addNewColumns);
  }

  /**
   * How a writer stages into a table with {@code writeSchema} ({@link #writeSchema}): the table's spec and
   * properties, the sink's bounds; the schema goes with the files if it evolves the table's.
   */
  StagingWriterConfig writerConfig(Table table, Schema writeSchema) {
    StagingWriterConfig.Builder builder = StagingWriterConfig.builder().forTable(table).layout(layout(table))
        .maxRowsPerFile(config.maxRowsPerFile).maxOpenFiles(config.maxOpenFiles)
        .maxBufferedBytes(config.maxBufferedBytes);
    if (!writeSchema.sameSchema(table.schema())) {
      builder.evolvedSchema(writeSchema);
    }
    return builder.build();
  }

  InputConverter<IN> converter(Schema schema) {
    return config.converters.apply(schema);
  }

  /** The key columns of a table written by key; empty for a table appended to. */
  List<String> upsertKey(TableIdentifier identifier) {
    List<String> key = config.upsertKeys.apply(identifier);
    return key == null ? List.of() : key;
  }

  /**
   * How a writer of this sink writes {@code table} by key ({@code key} its columns): the writer that owns a key is
   * {@link #writerOf}, as {@link #keyRouter()} routes.
   */
  UpsertWriter.Settings upsertSettings(TableIdentifier identifier, List<String> key) {
    String name = identifier.toString();
    return new UpsertWriter.Settings(key, null, 0, (row, writers) -> writerOf(name, row, key, writers),
        "MultiTableSink.keyRouter() (for the standalone runtime: StandaloneJob.builder(..).router(sink.keyRouter()))");
  }

  /**
   * Chooses the writer of a record, for the runtime's router: in a table written by key ({@link
   * Builder#upsertKey}) by the table's name and the key's values, so that every record of a key reaches the same
   * writer (its upsert writer refuses others); records of tables appended to go round robin. The choice for a key
   * depends only on the name and the values (integers as longs, text as strings), so it is the same after a restart
   * and whichever schema converted the record. Thread-safe.
   */
  public java.util.function.ToIntBiFunction<IN, Integer> keyRouter() {
    Map<TableIdentifier, InputConverter<IN>> converters = new ConcurrentHashMap<>();
    java.util.concurrent.atomic.AtomicLong spread = new java.util.concurrent.atomic.AtomicLong();
    return (input, writers) -> {
      TableIdentifier table = route(input);
      List<String> key = upsertKey(table);
      if (key.isEmpty()) {
        return (int) Math.floorMod(spread.getAndIncrement(), (long) writers);
      }
      Record row = converters.computeIfAbsent(table, this::routingConverter).convert(input);
      return writerOf(table.toString(), row, key, writers);
    };
  }

  /** Converts records for routing: to the table's schema where it exists, else to the schema it is created with. */
  private InputConverter<IN> routingConverter(TableIdentifier identifier) {
    Schema schema;
    try {
      Table table = catalog.loadTable(identifier);
      schema = writeSchema(identifier, table);
    } catch (NoSuchTableException missing) {
      schema = config.schemas.apply(identifier);
      if (schema == null) {
        throw new IllegalArgumentException("Table " + identifier + " does not exist and the sink has no schema to"
            + " create it with");
      }
    }
    return config.converters.apply(schema);
  }

  /** The writer of the key of {@code row} in {@code table}, among {@code writers}. */
  static int writerOf(String table, Record row, List<String> key, int writers) {
    int hash = table.hashCode();
    for (String column : key) {
      hash = 31 * hash + java.util.Objects.hashCode(comparable(row.getField(column)));
    }
    return Math.floorMod(hash, writers);
  }

  /** A key value as every schema's record of it holds it: integers as long, floats as double, text as string. */
  private static Object comparable(Object value) {
    if (value instanceof Integer || value instanceof Long || value instanceof Short || value instanceof Byte) {
      return ((Number) value).longValue();
    }
    if (value instanceof Float || value instanceof Double) {
      return ((Number) value).doubleValue();
    }
    if (value instanceof CharSequence text) {
      return text.toString();
    }
    if (value instanceof java.math.BigDecimal decimal) {
      return decimal.signum() == 0 ? java.math.BigDecimal.ZERO : decimal.stripTrailingZeros();
    }
    if (value instanceof byte[] bytes) {
      return java.nio.ByteBuffer.wrap(bytes);
    }
    return value;
  }

  int maxOpenFiles() {
    return config.maxOpenFiles;
  }

  long maxBufferedBytes() {
    return config.maxBufferedBytes;
  }

  @Override
  public SinkWriter<IN, TableManifests, StagingWriterState> createWriter(WriterContext context) {
    return new MultiTableWriter<>(this, context);
  }

  @Override
  public SinkWriter<IN, TableManifests, StagingWriterState> restoreWriter(WriterContext context,
      List<StagingWriterState> states) {
    // every file closes at each checkpoint: a restored writer starts with nothing open
    return createWriter(context);
  }

  @Override
  public SimpleVersionedSerializer<TableManifests> commitInfoSerializer() {
    return new TableManifests.Serializer();
  }

  @Override
  public SimpleVersionedSerializer<StagingWriterState> writerStateSerializer() {
    return new StagingWriterStateSerializer();
  }

  @Override
  public SinkAggregatedCommitter<TableManifests, CutCommittable> createAggregatedCommitter() {
    return new CutAggregatedCommitter(this);
  }

  @Override
  public SimpleVersionedSerializer<CutCommittable> aggregatedCommitSerializer() {
    return new CutCommittable.Serializer();
  }

  /** The job's tables as one {@link CommitTarget}: run epochs, the last cut, staged files in every table. */
  @Override
  public CommitTarget openTarget() {
    return new MultiTableTarget(this);
  }

  /** Closes the catalog, the state's file IO and what the writers' epoch carriers hold. */
  @Override
  public void close() throws IOException {
    carriers.values().forEach(CutCommitter::close);
    carriers.clear();
    stateIo.close();
    if (catalog instanceof java.io.Closeable closeable) {
      closeable.close();
    }
  }

  /** Configuration of a {@link MultiTableSink}. */
  public static final class Builder<IN> {
    private final Map<String, String> catalogProperties;
    private String catalogName = "lakecommit";
    private Function<IN, TableIdentifier> router;
    private Function<TableIdentifier, Schema> schemas = table -> null;
    private Function<TableIdentifier, List<String>> partitionBy = table -> List.of();
    private Map<String, String> tableProperties = Map.of();
    private Function<Schema, InputConverter<IN>> converters;
    private String stateLocation;
    private int maxOpenFiles = StagingWriterConfig.DEFAULT_MAX_OPEN_FILES;
    private long maxBufferedBytes = StagingWriterConfig.DEFAULT_MAX_BUFFERED_BYTES;
    private long maxRowsPerFile = Long.MAX_VALUE;
    private boolean requireAtomicCut;
    private boolean addNewColumns;
    private boolean checkTemplate;
    private Function<TableIdentifier, List<String>> upsertKeys = table -> List.of();

    private Builder(Map<String, String> catalogProperties) {
      this.catalogProperties = Map.copyOf(Objects.requireNonNull(catalogProperties, "catalogProperties"));
    }

    public Builder<IN> catalogName(String name) {
      this.catalogName = Objects.requireNonNull(name, "name");
      return this;
    }

    /** The table of each record; called by the writers, so it must be thread-safe and cheap. */
    public Builder<IN> router(Function<IN, TableIdentifier> tableOfRecord) {
      this.router = Objects.requireNonNull(tableOfRecord, "tableOfRecord");
      return this;
    }

    /** The schema a missing table is created with, by its name. */
    public Builder<IN> schemas(Function<TableIdentifier, Schema> schemaOfTable) {
      this.schemas = Objects.requireNonNull(schemaOfTable, "schemaOfTable");
      return this;
    }

    /** One schema for every table the sink creates. */
    public Builder<IN> schema(Schema schema) {
      Objects.requireNonNull(schema, "schema");
      return schemas(table -> schema);
    }

    /** The partition transforms of a table the sink creates ({@code day(ts)}, {@code bucket(16, id)}, ...). */
    public Builder<IN> partitionBy(Function<TableIdentifier, List<String>> transforms) {
      this.partitionBy = Objects.requireNonNull(transforms, "transforms");
      return this;
    }

    /** Properties of a table the sink creates. */
    public Builder<IN> tableProperties(Map<String, String> properties) {
      this.tableProperties = Map.copyOf(properties);
      return this;
    }

    Builder<IN> converter(Function<Schema, InputConverter<IN>> converterForTableSchema) {
      this.converters = Objects.requireNonNull(converterForTableSchema, "converterForTableSchema");
      return this;
    }

    /** Where the jobs' tables, run claims and cut records live (a directory of the catalog's file IO). */
    public Builder<IN> stateLocation(String location) {
      this.stateLocation = Objects.requireNonNull(location, "location");
      return this;
    }

    /** Files one writer keeps open over all its tables together. */
    public Builder<IN> maxOpenFiles(int files) {
      if (files < 1) {
        throw new IllegalArgumentException("Invalid maxOpenFiles: " + files + " (must be > 0)");
      }
      this.maxOpenFiles = files;
      return this;
    }

    /** Bytes one writer's open files buffer over all its tables together. */
    public Builder<IN> maxBufferedBytes(long bytes) {
      if (bytes < 1) {
        throw new IllegalArgumentException("Invalid maxBufferedBytes: " + bytes + " (must be > 0)");
      }
      this.maxBufferedBytes = bytes;
      return this;
    }

    public Builder<IN> maxRowsPerFile(long rows) {
      if (rows < 1) {
        throw new IllegalArgumentException("Invalid maxRowsPerFile: " + rows + " (must be > 0)");
      }
      this.maxRowsPerFile = rows;
      return this;
    }

    /**
     * Adds to a table that exists the optional columns (and struct fields) of its schema in the template that it
     * lacks, and widens the types the template widens, as the one-table sink does: the writers stage with the
     * evolved schema and the cut that commits their files evolves the table in the same change.
     */
    public Builder<IN> addNewColumns(boolean add) {
      this.addNewColumns = add;
      return this;
    }

    /**
     * Checks a table that exists against its template schema (as for one table with a given schema): a column the
     * table lacks or holds narrower stops the writer naming both, unless {@link #addNewColumns}. Without it (and
     * without {@code addNewColumns}) a table that exists is written with its own schema, the records' columns
     * taken by name. On for {@link #forRecords(Map, Schema)}.
     */
    public Builder<IN> checkTemplate(boolean check) {
      this.checkTemplate = check;
      return this;
    }

    /**
     * The key columns of each table written by key (an empty list: the table is appended to): a record replaces
     * the table's row of its key and a record marked {@link dev.lakecommit.core.Deletion} deletes it, each cut one
     * row delta per such table (data files with equality and position deletes, format v2), as the one-table sink's
     * {@link CommitMode#UPSERT}. Records must reach their writer by key: route them with {@link #keyRouter()}. A
     * table created by the sink gets the key as its identifier fields; key columns are required top-level
     * primitive columns.
     */
    public Builder<IN> upsertKey(Function<TableIdentifier, List<String>> keyOfTable) {
      this.upsertKeys = Objects.requireNonNull(keyOfTable, "keyOfTable");
      return this;
    }

    /** The same key columns for every table ({@link #upsertKey(Function)}). */
    public Builder<IN> upsertKey(List<String> columns) {
      List<String> key = List.copyOf(columns);
      return upsertKey(table -> key);
    }

    /** Refuse a catalog that cannot commit several tables at once (no cut records). */
    public Builder<IN> requireAtomicCut(boolean required) {
      this.requireAtomicCut = required;
      return this;
    }

    /**
     * Loads the catalog and checks the configuration.
     *
     * @throws IllegalArgumentException naming the option that is missing or wrong, or the catalog if an atomic cut
     *     is required and it cannot commit several tables at once
     */
    public MultiTableSink<IN> build() {
      if (router == null) {
        throw new IllegalArgumentException("A multi-table sink needs a router: the table of each record");
      }
      return new MultiTableSink<>(this);
    }
  }
}
