package dev.lakecommit.ingest.source;

import dev.lakecommit.core.runtime.CheckpointedSource;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.avro.file.DataFileStream;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.types.TypeUtil;

/**
 * Files as a resumable source of Iceberg generic records: JSON lines, CSV with a header, Parquet or Avro, on local
 * disk, {@code s3://} (Iceberg S3FileIO) or {@code s3a://} and other Hadoop file systems.
 *
 * <p>The input is listed once, when the source is made, in sorted order; a reader reads the files in that order.
 * Its {@linkplain SourceReader#position() position} names the file (index and location, and a hash of the
 * listing up to it) and a place in the file that is cheap to seek to: the byte offset of the next line for JSON
 * and CSV, the number of records read for Parquet and Avro. Reopening at a position yields exactly the records
 * after it. A listing that changed before the position's file fails the reopen, naming the file; files added after
 * it are read.
 *
 * <p>Columns are matched by name: JSON fields exactly (fields the schema lacks are not read), CSV header columns
 * and Parquet and Avro columns exactly or else ignoring case. A schema column a file lacks is null; if it is
 * required, that is bad input. Values must fit their column's type exactly: no rounding, truncation or overflow.
 *
 * <p>Input that does not fit — a malformed line, a value that does not fit the schema, a file that cannot be read
 * as its format or that disappeared after listing — fails the reader with a {@link BadRecordException}, or, with a
 * {@link #badRecords(BadRecordSink) sink}, is handed to the sink and skipped. An empty file has no records.
 */
public final class FileSource implements CheckpointedSource<Record>, AutoCloseable {
  /** Records sampled (from the first files) to infer a schema. */
  static final int SAMPLE_RECORDS = 1000;
  /** Files sampled at most to infer a schema. */
  static final int SAMPLE_FILES = 10;
  /** A JSON line or CSV record longer than this is bad input. */
  static final int MAX_RECORD_BYTES = 64 * 1024 * 1024;

  private final String input;
  private final Storage storage;
  private final List<String> files;
  private final InputFormat format;
  private volatile Schema schema;
  private volatile boolean strictColumns;
  private volatile BadRecordSink sink;

  private FileSource(String input, Storage storage, List<String> files, InputFormat format, Schema schema) {
    this.input = input;
    this.storage = storage;
    this.files = Collections.unmodifiableList(files);
    this.format = format;
    this.schema = schema;
  }

  /**
   * Lists the input — a file, a directory (all files in it, recursively, skipping names that start with
   * {@code _} or {@code .}), or a glob like {@code /data/*.jsonl} or {@code s3://bucket/in/*.csv} — in a stable
   * sorted order, and settles the format and the schema.
   *
   * @param formatOrNull the format, or null to tell it from the files' extensions (all must agree)
   * @param schemaOrNull the schema (field ids are reassigned 1..n), or null to infer it: from a sample of the
   *     first {@value #SAMPLE_RECORDS} records of the first files for JSON and CSV, from the first file for Parquet
   *     and Avro
   * @param storageProperties Iceberg FileIO properties ({@code s3.endpoint}, {@code s3.access-key-id}, ...) for
   *     {@code s3://}; may be null
   * @param conf Hadoop configuration ({@code fs.s3a.*}) for {@code s3a://} and other Hadoop file systems; may be
   *     null
   * @throws FileNotFoundException if nothing matches the input
   * @throws IOException if the input cannot be listed, or its format or schema cannot be told; the message says
   *     which file and why
   */
  public static FileSource of(String input, InputFormat formatOrNull, Schema schemaOrNull,
      Map<String, String> storageProperties, Configuration conf) throws IOException {
    Objects.requireNonNull(input, "input");
    Storage storage = Storage.forInput(input, storageProperties == null ? Map.of() : storageProperties,
        conf == null ? new Configuration() : conf);
    try {
      List<String> files = storage.list(input);
      InputFormat format = formatOrNull != null ? formatOrNull : formatOf(input, files);
      Schema schema = schemaOrNull != null
          ? TypeUtil.assignIncreasingFreshIds(schemaOrNull)
          : infer(storage, input, files, format);
      return new FileSource(input, storage, new ArrayList<>(files), format, schema);
    } catch (IOException | RuntimeException e) {
      storage.close();
      throw e;
    }
  }

  private static InputFormat formatOf(String input, List<String> files) throws IOException {
    InputFormat format = null;
    String first = null;
    for (String file : files) {
      Optional<InputFormat> byName = InputFormat.fromExtension(file);
      if (byName.isEmpty()) {
        throw new IOException("Cannot tell the format of " + file + " from its name; give --format "
            + "(json, csv, parquet, avro)");
      }
      if (format != null && format != byName.get()) {
        throw new IOException("Input " + input + " mixes formats: " + first + " is " + format + ", " + file + " is "
            + byName.get() + "; give one format with --format, or a narrower input");
      }
      format = byName.get();
      first = first == null ? file : first;
    }
    return format;
  }

  private static Schema infer(Storage storage, String input, List<String> files, InputFormat format)
      throws IOException {
    if (format == InputFormat.PARQUET || format == InputFormat.AVRO) {
      for (String file : files) {
        InputFile in = storage.open(file);
        if (in.getLength() > 0) {
          return TypeUtil.assignIncreasingFreshIds(format == InputFormat.PARQUET
              ? ParquetFileRecords.fileSchema(ParquetFileRecords.footer(file, in).getFileMetaData().getSchema())
              : avroSchema(file, in));
        }
      }
      throw new IOException("Cannot infer a schema: every file of " + input + " is empty; give a schema");
    }
    Inference inference = new Inference();
    int sampled = 0;
    for (String file : files) {
      if (sampled++ == SAMPLE_FILES || inference.samples() >= SAMPLE_RECORDS) {
        break;
      }
      sample(storage.open(file), file, format, inference);
    }
    if (inference.isEmpty()) {
      throw new IOException("Cannot infer a schema: the first " + Math.min(files.size(), SAMPLE_FILES)
          + " file(s) of " + input + " hold no " + (format == InputFormat.CSV ? "CSV header" : "JSON objects")
          + "; give a schema");
    }
    return inference.schema();
  }

  /** Adds a file's readable records to the sample; bad ones are left for the real read to report. */
  private static void sample(InputFile in, String file, InputFormat format, Inference inference)
      throws IOException {
    try {
      if (format == InputFormat.JSON) {
        try (JsonFileRecords records = new JsonFileRecords(file, in, null, 0, 0, MAX_RECORD_BYTES)) {
          while (inference.samples() < SAMPLE_RECORDS) {
            try {
              Map<String, Object> object = records.nextObject();
              if (object == null) {
                break;
              }
              inference.addJson(object);
            } catch (BadRecordException e) {
              // reported when read
            }
          }
        }
      } else {
        try (CsvFileRecords records = new CsvFileRecords(file, in, null, 0, 0, MAX_RECORD_BYTES)) {
          List<String> header = records.header();
          if (header == null) {
            return;
          }
          header.forEach(inference::declare);
          while (inference.samples() < SAMPLE_RECORDS) {
            try {
              List<String> row = records.nextRow();
              if (row == null) {
                break;
              }
              inference.addText(header, row);
            } catch (BadRecordException e) {
              // reported when read
            }
          }
        }
      }
    } catch (BadRecordException e) {
      // a file that cannot be read at all (bad header) is reported when read
    } catch (IOException | RuntimeException e) {
      if (!Storage.isNotFound(e)) {
        throw e;
      }
    }
  }

  private static Schema avroSchema(String file, InputFile in) throws IOException {
    org.apache.avro.Schema avro;
    try (DataFileStream<Object> stream = new DataFileStream<>(in.newStream(), new GenericDatumReader<>())) {
      avro = stream.getSchema();
    } catch (IOException | RuntimeException e) {
      if (Storage.isNotFound(e)) {
        throw e;
      }
      throw new IOException("Cannot read the schema of " + file + ": not a readable Avro file: " + e.getMessage(),
          e);
    }
    try {
      return AvroFileRecords.fileSchema(avro);
    } catch (IllegalArgumentException e) {
      throw new IOException("Cannot read " + file + ": " + e.getMessage(), e);
    }
  }

  /** The records' schema, given or inferred (or set by {@link #evolve}); field ids 1..n. */
  public Schema schema() {
    return schema;
  }

  /**
   * Reads every record of every file for its top-level columns (not their values, but for columns the schema
   * lacks): where each column first appears, which the schema lacks and what type their values suggest, and
   * which types Parquet or Avro files widen or change. Costs one more pass over the input: JSON lines are parsed
   * with the values of known columns skipped, CSV files read for their header (and the cells of new columns),
   * Parquet and Avro files for their schema only.
   *
   * @throws IOException if a file cannot be read (files that are not of the format are left for the read to
   *     report)
   */
  public SchemaDrift scan() throws IOException {
    SchemaScan scan = new SchemaScan(schema, format);
    for (String file : files) {
      scan.file(file, storage.open(file));
    }
    return scan.result();
  }

  /**
   * Reads with {@code evolved} from now on (a schema from {@link SchemaDrift#plan}), and treats a JSON field or
   * CSV column that it lacks as a failure of the job (an {@link IOException} naming the column, file and line, not
   * a bad record): the scan saw every column, so a new one means the input changed while it was read. Affects
   * readers opened later.
   *
   * @return this source
   */
  public FileSource evolve(Schema evolved) {
    this.schema = TypeUtil.assignIncreasingFreshIds(Objects.requireNonNull(evolved, "evolved"));
    this.strictColumns = true;
    return this;
  }

  /** The input files in reading order. */
  public List<String> files() {
    return files;
  }

  /** The format of every file. */
  public InputFormat format() {
    return format;
  }

  /** The input as given. */
  public String input() {
    return input;
  }

  /**
   * Sets where bad input goes: to {@code sink}, which records it, and reading goes on; or, with null, nowhere:
   * the reader fails on the first bad record with a {@link BadRecordException}. Affects readers opened later.
   *
   * @return this source
   */
  public FileSource badRecords(BadRecordSink sink) {
    this.sink = sink;
    return this;
  }

  /**
   * Opens a reader at a position.
   *
   * @param position a position from a reader of a source over the same input, or null for the beginning
   * @throws IllegalArgumentException if the position is not one of a file source ({@code Unknown version N ...},
   *     corrupt bytes) or is of a source of another format
   * @throws IOException if the listing changed before the position's file (the message names it)
   */
  @Override
  public SourceReader<Record> open(byte[] position) throws IOException {
    Position start = position == null ? Position.start(files, format.lineBased()) : check(Position.parse(position));
    return new Reader(start, sink);
  }

  private Position check(Position position) throws IOException {
    if (position.lineBased() != format.lineBased()) {
      throw new IllegalArgumentException("The position counts " + (position.lineBased() ? "lines" : "records")
          + " but this source reads " + format + " files: it is a position of another source");
    }
    int index = position.fileIndex();
    if (index < files.size() && files.get(index).equals(position.file())
        && Position.listingHash(files, index) == position.listingHash()) {
      return position;
    }
    int now = files.indexOf(position.file());
    if (now < 0) {
      throw new IOException("The input listing changed: " + position.file() + " (file " + (index + 1) + "/"
          + position.fileCount() + " at the position to resume from) is no longer in " + input
          + "; cannot resume exactly");
    }
    throw new IOException("The input listing changed: files before " + position.file() + " were added, removed or "
        + "renamed (it was file " + (index + 1) + "/" + position.fileCount() + ", now " + (now + 1) + "/"
        + files.size() + "); resuming would skip or repeat records, so it stops here");
  }

  /**
   * A position for status output: {@code file 3/10 s3://b/in/c.jsonl line 1200} (the last line or record read),
   * or {@code start of input} for null.
   *
   * @throws IllegalArgumentException if the bytes are not a file source position
   */
  public static String describe(byte[] position) {
    return position == null ? "start of input" : Position.parse(position).describe();
  }

  /** Closes the storage client (S3); readers must be closed first. */
  @Override
  public void close() {
    storage.close();
  }

  private FileRecords openFile(String file, long offset, long count) throws IOException {
    InputFile in = storage.open(file);
    switch (format) {
      case JSON:
        return new JsonFileRecords(file, in, schema, offset, count, MAX_RECORD_BYTES).strictColumns(strictColumns);
      case CSV:
        return new CsvFileRecords(file, in, schema, offset, count, MAX_RECORD_BYTES).strictColumns(strictColumns);
      case PARQUET:
        return new ParquetFileRecords(file, in, schema, offset);
      default:
        return new AvroFileRecords(file, in, schema, offset);
    }
  }

  /** Reads the files in order from a position; one thread. */
  private final class Reader implements SourceReader<Record> {
    private final BadRecordSink sink;
    private final Position start;
    private int fileIndex;
    private FileRecords current;
    private int positionFile;
    private long positionOffset;
    private long positionCount;
    private long positionHash;

    Reader(Position start, BadRecordSink sink) {
      this.start = start;
      this.sink = sink;
      this.fileIndex = start.fileIndex();
      this.positionFile = start.fileIndex();
      this.positionOffset = start.offset();
      this.positionCount = start.count();
      this.positionHash = start.listingHash();
    }

    @Override
    public Record next() throws IOException {
      while (fileIndex < files.size()) {
        String file = files.get(fileIndex);
        try {
          if (current == null) {
            boolean resume = fileIndex == start.fileIndex();
            current = openFile(file, resume ? start.offset() : 0, resume ? start.count() : 0);
          }
          Record record = current.next();
          if (record != null) {
            if (positionFile != fileIndex) {
              positionFile = fileIndex;
              positionHash = Position.listingHash(files, fileIndex);
            }
            positionOffset = current.offset();
            positionCount = current.count();
            return record;
          }
          nextFile();
        } catch (BadRecordException e) {
          reject(e);
          if (e.endsFile()) {
            nextFile();
          }
        } catch (IOException | RuntimeException e) {
          if (!Storage.isNotFound(e)) {
            throw e;
          }
          reject(BadRecordException.file(file, 0, format.lineBased(),
              "file not found: it disappeared after the input was listed", e));
          nextFile();
        }
      }
      return null;
    }

    private void reject(BadRecordException e) throws IOException {
      if (sink == null) {
        throw e;
      }
      sink.reject(e.file(), e.lineOrRecord(), e.sinkReason(), e.rawText());
    }

    private void nextFile() throws IOException {
      FileRecords done = current;
      current = null;
      fileIndex++;
      if (done != null) {
        done.close();
      }
    }

    @Override
    public byte[] position() {
      String file = files.isEmpty() ? "" : files.get(positionFile);
      return new Position(positionFile, files.size(), file, positionHash, format.lineBased(), positionOffset,
          positionCount).toBytes();
    }

    @Override
    public void close() throws IOException {
      if (current != null) {
        current.close();
        current = null;
      }
    }
  }
}
