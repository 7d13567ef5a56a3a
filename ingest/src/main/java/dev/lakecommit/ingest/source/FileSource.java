package dev.lakecommit.ingest.source;

import dev.lakecommit.core.runtime.CheckpointedSource;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
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
 * listing up to it), what the file was when it was opened (size, modification time, object version), a place in
 * the file that is cheap to seek to — the byte offset of the next line for JSON and CSV, with a checksum of the
 * bytes before it; the number of records read for Parquet and Avro — and how many bad records the job diverted so
 * far. Reopening at a position yields exactly the records after it. A listing that changed before the position's
 * file, or a position's file that changed — JSON or CSV bytes already read that are not the same any more (the
 * file was replaced, truncated or rewritten; appending is fine), a Parquet or Avro file of another size,
 * modification time or version — fails the reopen with a {@link ChangedInputException} naming the file and what
 * changed; files added after it are read.
 *
 * <p>Columns are matched by name: JSON fields exactly (fields the schema lacks are not read), CSV header columns
 * and Parquet and Avro columns exactly or else ignoring case. A schema column a file lacks is null; if it is
 * required, that is bad input. Values must fit their column's type exactly: no rounding, truncation or overflow.
 *
 * <p>Input that does not fit — a malformed line, a value that does not fit the schema, a file that cannot be parsed
 * as its format — fails the reader with a {@link BadRecordException}, or, with a {@link #badRecords(BadRecordSink)
 * sink}, is handed to the sink and skipped (up to a {@linkplain #maxBadRecords(long) limit}). A file that cannot be
 * read — permission denied, gone after listing, a storage error, a truncated compressed stream — is never bad
 * input: it fails the reader with an {@link IOException} ({@link InputReadException} for the storage's failures),
 * so nothing after it is checkpointed. An empty file has no records.
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
  private volatile long maxBadRecords = Long.MAX_VALUE;
  private volatile double maxBadRecordRate = 1;

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
        throw new IllegalArgumentException("Cannot tell the format of " + file + " from its name; give --format "
            + "(json, csv, parquet, avro)");
      }
      if (format != null && format != byName.get()) {
        throw new IllegalArgumentException("Input " + input + " mixes formats: " + first + " is " + format + ", "
            + file + " is " + byName.get() + "; give one format with --format, or a narrower input");
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
        InputFile in = Inputs.guarded(file, storage.open(file));
        if (in.getLength() > 0) {
          return TypeUtil.assignIncreasingFreshIds(format == InputFormat.PARQUET
              ? ParquetFileRecords.fileSchema(ParquetFileRecords.footer(file, in).getFileMetaData().getSchema())
              : avroSchema(file, in));
        }
      }
      throw new IllegalArgumentException("Cannot infer a schema: every file of " + input + " is empty; give "
          + "--schema");
    }
    Inference inference = new Inference();
    int sampled = 0;
    for (String file : files) {
      if (sampled++ == SAMPLE_FILES || inference.samples() >= SAMPLE_RECORDS) {
        break;
      }
      sample(Inputs.guarded(file, storage.open(file)), file, format, inference);
    }
    if (inference.isEmpty()) {
      throw new IllegalArgumentException("Cannot infer a schema: the first " + Math.min(files.size(), SAMPLE_FILES)
          + " file(s) of " + input + " hold no " + (format == InputFormat.CSV ? "CSV header" : "JSON objects")
          + "; give --schema");
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
      InputReadException read = InputReadException.in(e);
      if (read != null) {
        throw read;
      }
      // a file that cannot be parsed at all (bad header) is reported when read
    } catch (IOException | RuntimeException e) {
      InputReadException read = InputReadException.in(e);
      if (read != null) {
        throw read; // unreadable: the real read could not go past it either
      }
      if (e instanceof IOException && !(e instanceof ChangedInputException)) {
        throw Inputs.failure(file, e); // a corrupt compressed stream: named with its file
      }
      throw e;
    }
  }

  private static Schema avroSchema(String file, InputFile in) throws IOException {
    org.apache.avro.Schema avro;
    try (DataFileStream<Object> stream = new DataFileStream<>(in.newStream(), new GenericDatumReader<>())) {
      avro = stream.getSchema();
    } catch (IOException | RuntimeException e) {
      InputReadException read = InputReadException.in(e);
      if (read != null) {
        throw read;
      }
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
   * Parquet and Avro files for their schema only. JSON and CSV files are scanned on as many threads as there are
   * processors, one file per thread.
   *
   * @throws IOException if a file cannot be read (files that are not of the format are left for the read to
   *     report)
   */
  public SchemaDrift scan() throws IOException {
    return scan(Math.min(files.size(), Runtime.getRuntime().availableProcessors()));
  }

  /**
   * {@link #scan()} with JSON and CSV files scanned on up to {@code threads} threads at once, each file by a part
   * of its own, and the parts merged in file order (the same result as one thread: {@link SchemaScan#merge}).
   * At most two files per thread are scanned ahead of the merge.
   */
  SchemaDrift scan(int threads) throws IOException {
    SchemaScan scan = new SchemaScan(schema, format);
    if (threads < 2 || !format.lineBased()) {
      for (String file : files) {
        scan.file(file, storage.open(file));
      }
      return scan.result();
    }
    ExecutorService pool = Executors.newFixedThreadPool(threads, runnable -> {
      Thread thread = new Thread(runnable, "lakecommit-schema-scan");
      thread.setDaemon(true);
      return thread;
    });
    try {
      Deque<Future<SchemaScan>> pending = new ArrayDeque<>();
      int next = 0;
      while (next < files.size() || !pending.isEmpty()) {
        while (next < files.size() && pending.size() < 2 * threads) {
          String file = files.get(next++);
          pending.add(pool.submit(() -> {
            SchemaScan part = scan.part();
            part.file(file, storage.open(file));
            return part;
          }));
        }
        scan.merge(scanned(pending.remove()));
      }
    } finally {
      pool.shutdownNow();
    }
    return scan.result();
  }

  /** A part's result, or the failure of its file's scan as the one-thread scan would have thrown it. */
  private static SchemaScan scanned(Future<SchemaScan> part) throws IOException {
    try {
      return part.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted while the input was scanned");
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof IOException io) {
        throw io;
      } else if (cause instanceof RuntimeException runtime) {
        throw runtime;
      } else if (cause instanceof Error error) {
        throw error;
      }
      throw new IOException(cause);
    }
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
   * With a {@linkplain #badRecords(BadRecordSink) sink}: how many bad records the job may divert in all (counted
   * over its runs, through the positions); the next one fails the reader with a {@link BadRecordLimitException}.
   * Unlimited by default. Affects readers opened later.
   *
   * @return this source
   */
  public FileSource maxBadRecords(long max) {
    if (max < 0) {
      throw new IllegalArgumentException("Invalid bad record limit: " + max + " (must be >= 0)");
    }
    this.maxBadRecords = max;
    return this;
  }

  /**
   * With a {@linkplain #badRecords(BadRecordSink) sink}: the share of the records the job read (good and bad,
   * counted over its runs) that may be bad, from 0 to 1; more fails the reader with a {@link
   * BadRecordLimitException}: at a bad record once the job read {@value #RATE_SAMPLE} records, and at the end of
   * the input. 1 (no limit) by default. Affects readers opened later.
   *
   * @return this source
   */
  public FileSource maxBadRecordRate(double rate) {
    if (!(rate >= 0 && rate <= 1)) {
      throw new IllegalArgumentException("Invalid bad record rate: " + rate + " (must be from 0 to 1)");
    }
    this.maxBadRecordRate = rate;
    return this;
  }

  /** Records a job reads before a bad record rate is checked at each bad record (always at the end). */
  static final int RATE_SAMPLE = 1000;

  /** Records a position says the job diverted to the bad-record sink up to it; 0 for null. */
  public static long divertedAt(byte[] position) {
    return position == null ? 0 : Position.parse(position).diverted();
  }

  /**
   * Checks, without reading records, that a reader could resume at a position: the listing up to its file is the
   * same and its file did not change (reads the JSON or CSV bytes before the position once).
   *
   * @throws ChangedInputException naming the file and what changed
   * @throws IOException if a file cannot be read
   */
  public void checkResumable(byte[] position) throws IOException {
    if (position == null) {
      return;
    }
    Position start = check(Position.parse(position));
    if (!start.finished() && start.fileIndex() < files.size() && (start.offset() > 0 || start.count() > 0)) {
      String file = files.get(start.fileIndex());
      unchanged(start, fingerprint(file), Inputs.guarded(file, storage.open(file)));
    }
  }

  private Fingerprint fingerprint(String file) throws IOException {
    try {
      return storage.fingerprint(file);
    } catch (IOException | RuntimeException e) {
      throw Inputs.failure(file, e);
    }
  }

  /**
   * Checks that the file a reader resumes in is the one the position was taken in, and returns the checksum of
   * the bytes before the position (lines), read anew; 0 for records.
   */
  private long unchanged(Position start, Fingerprint now, InputFile in) throws IOException {
    String file = start.file();
    Fingerprint then = start.fingerprint();
    String was = then.known() ? " (when the position was taken: " + then.describe() + "; now: " + now.describe()
        + ")" : " (now " + now.describe() + ")";
    String advice = ". Resuming would skip or repeat records, so the job stops here. If it is new input under the "
        + "same name, ingest it as a new job (lakecommit ingest --on-changed-input new-job).";
    if (!start.lineBased()) {
      if (then.known() && (then.size() != now.size() || then.modified() != now.modified()
          || !then.version().equals(now.version()))) {
        throw new ChangedInputException(file, "Input file " + file + " changed since " + start.count()
            + " of its records were read: it is not the same file" + was + advice);
      }
      return 0;
    }
    // offsets count the text as read: for a compressed file the decompressed bytes, which the file's size bounds not
    if (Compression.fromName(file) == null && now.size() < start.offset()) {
      throw new ChangedInputException(file, "Input file " + file + " changed: it has " + now.size()
          + " bytes, fewer than the " + start.offset() + " bytes (" + start.count() + " lines) already read; it was "
          + "truncated or replaced" + was + advice);
    }
    long checksum;
    try {
      checksum = TextRecords.prefixChecksum(file, in, start.offset());
    } catch (java.io.EOFException | ChangedInputException e) {
      throw new ChangedInputException(file, "Input file " + file + " changed: it ends before the "
          + start.offset() + " bytes already read" + was + advice);
    }
    if (then.known() && checksum != start.checksum()) {
      throw new ChangedInputException(file, "Input file " + file + " changed: its first " + start.offset()
          + " bytes (lines 1-" + start.count() + ", already read) are not the same any more; it was replaced or "
          + "rewritten" + was + advice);
    }
    return checksum;
  }

  /**
   * Opens a reader at a position.
   *
   * @param position a position from a reader of a source over the same input, or null for the beginning
   * @throws IllegalArgumentException if the position is not one of a file source ({@code Unknown version N ...},
   *     corrupt bytes) or is of a source of another format
   * @throws ChangedInputException if the listing changed before the position's file (the message names it); a
   *     change of the position's file itself fails the reader's first {@code next()}
   */
  @Override
  public SourceReader<Record> open(byte[] position) throws IOException {
    Position start = position == null ? Position.start(files, format.lineBased()) : check(Position.parse(position));
    return new Reader(start, sink, maxBadRecords, maxBadRecordRate);
  }

  private Position check(Position position) throws IOException {
    if (position.lineBased() != format.lineBased()) {
      throw new IllegalArgumentException("The position counts " + (position.lineBased() ? "lines" : "records")
          + " but this source reads " + format + " files: it is a position of another source");
    }
    int index = position.fileIndex();
    if (index < files.size() && files.get(index).equals(position.file())
        && Position.listingHash(files, index) == position.listingHash()) {
      finishedFilesUnchanged(position);
      return position;
    }
    int now = files.indexOf(position.file());
    if (now < 0) {
      throw new ChangedInputException(position.file(), "The input listing changed: " + position.file() + " (file " + (index + 1) + "/"
          + position.fileCount() + " at the position to resume from) is no longer in " + input
          + "; cannot resume exactly");
    }
    throw new ChangedInputException(position.file(), "The input listing changed: files before " + position.file() + " were added, removed or "
        + "renamed (it was file " + (index + 1) + "/" + position.fileCount() + ", now " + (now + 1) + "/"
        + files.size() + "); resuming would skip or repeat records, so it stops here");
  }

  /**
   * Checks that every file the position's reader finished (those before its file, and its file if it was rejected
   * whole) is what it was when it was read: same size, modification time and object version. One metadata request
   * a file; their content is not read again. Positions of versions before 3 hold no such fingerprints.
   */
  private void finishedFilesUnchanged(Position position) throws IOException {
    ConsumedFiles done = position.done();
    for (int i = 0; i < done.size() && i < files.size(); i++) {
      unchanged(files.get(i), done.get(i));
    }
    if (position.finished() && position.fingerprint().known()) {
      unchanged(position.file(), ConsumedFiles.Entry.of(position.fingerprint()));
    }
  }

  private void unchanged(String file, ConsumedFiles.Entry then) throws IOException {
    if (!then.known()) {
      return;
    }
    String changes = then.changes(fingerprint(file));
    if (changes != null) {
      throw new ChangedInputException(file, "Input file " + file + " changed after the job read it to its end: "
          + changes + ". It was replaced or rewritten under the same name; the job would never read its new "
          + "content, so it stops here. If it is new input under the same name, ingest it as a new job (lakecommit "
          + "ingest --on-changed-input new-job: the whole input once more, under a new job id).");
    }
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

  private FileRecords openFile(String file, InputFile in, long offset, long count, long checksum)
      throws IOException {
    switch (format) {
      case JSON:
        return new JsonFileRecords(file, in, schema, offset, count, checksum, MAX_RECORD_BYTES)
            .strictColumns(strictColumns);
      case CSV:
        return new CsvFileRecords(file, in, schema, offset, count, checksum, MAX_RECORD_BYTES)
            .strictColumns(strictColumns);
      case PARQUET:
        return new ParquetFileRecords(file, in, schema, offset);
      default:
        return new AvroFileRecords(file, in, schema, offset);
    }
  }

  /** Reads the files in order from a position; one thread. */
  private final class Reader implements SourceReader<Record> {
    private final BadRecordSink sink;
    private final long maxBadRecords;
    private final double maxBadRecordRate;
    private final Position start;
    private int fileIndex;
    private int listingHashIndex = -1;
    private long listingHash;
    private FileRecords current;
    private Fingerprint currentFingerprint;
    private long diverted;
    /** Records the job read, good and bad, over its runs. */
    private long records;
    private Position position;
    /** What the files before {@link #fileIndex} were when they were read. */
    private ConsumedFiles done;

    Reader(Position start, BadRecordSink sink, long maxBadRecords, double maxBadRecordRate) {
      this.start = start;
      this.sink = sink;
      this.maxBadRecords = maxBadRecords;
      this.maxBadRecordRate = maxBadRecordRate;
      this.records = start.records();
      this.fileIndex = start.finished() ? start.fileIndex() + 1 : start.fileIndex();
      this.diverted = start.diverted();
      this.position = start;
      ConsumedFiles before = start.done();
      while (before.size() < start.fileIndex()) {
        before = before.plus(ConsumedFiles.Entry.of(Fingerprint.UNKNOWN)); // a position of an older version
      }
      this.done = start.finished() ? before.plus(ConsumedFiles.Entry.of(start.fingerprint())) : before;
    }

    @Override
    public Record next() throws IOException {
      while (fileIndex < files.size()) {
        String file = files.get(fileIndex);
        try {
          if (current == null) {
            current = open(file);
          }
          Record record = current.next();
          if (record != null) {
            records++;
            moveTo(file);
            return record;
          }
          nextFile();
        } catch (BadRecordException e) {
          InputReadException read = InputReadException.in(e);
          if (read != null) {
            throw read;
          }
          reject(e);
          if (e.endsFile()) {
            position = new Position(fileIndex, files.size(), file, listingHash(),
                format.lineBased(), 0, 0, currentFingerprint == null ? Fingerprint.UNKNOWN : currentFingerprint, 0,
                diverted, true, done, records);
            nextFile();
          } else if (current != null) {
            moveTo(file);
          }
        } catch (IOException | RuntimeException e) {
          InputReadException read = InputReadException.in(e);
          if (read != null) {
            throw read;
          }
          if (Storage.isNotFound(e) || (e instanceof IOException && !(e instanceof ChangedInputException)
              && !(e instanceof BadRecordLimitException))) {
            // a read error (a truncated compressed stream too) fails the job, named with its file
            throw Inputs.failure(file, e);
          }
          throw e;
        }
      }
      if (sink != null && diverted > maxBadRecordRate * records) {
        throw new BadRecordLimitException(maxBadRecordRate, diverted, records);
      }
      return null;
    }

    private FileRecords open(String file) throws IOException {
      currentFingerprint = fingerprint(file);
      InputFile in = Inputs.guarded(file, storage.open(file));
      boolean resume = fileIndex == start.fileIndex() && !start.finished();
      if (!resume || (start.offset() == 0 && start.count() == 0)) {
        return openFile(file, in, 0, 0, TextRecords.EMPTY_CHECKSUM);
      }
      long checksum = unchanged(start, currentFingerprint, in);
      return openFile(file, in, start.offset(), start.count(), checksum);
    }

    /** {@link Position#listingHash} up to the current file, computed once per file, not once per record. */
    private long listingHash() {
      if (listingHashIndex != fileIndex) {
        listingHash = Position.listingHash(files, fileIndex);
        listingHashIndex = fileIndex;
      }
      return listingHash;
    }

    /** The position is just after what the current file consumed. */
    private void moveTo(String file) {
      position = new Position(fileIndex, files.size(), file, listingHash(),
          format.lineBased(), current.offset(), current.count(), currentFingerprint, current.checksum(), diverted,
          false, done, records);
    }

    private void reject(BadRecordException e) throws IOException {
      if (sink == null) {
        throw e;
      }
      if (diverted >= maxBadRecords) {
        throw new BadRecordLimitException(maxBadRecords, e);
      }
      if (records + 1 >= RATE_SAMPLE && diverted + 1 > maxBadRecordRate * (records + 1)) {
        throw new BadRecordLimitException(maxBadRecordRate, diverted + 1, records + 1, e);
      }
      sink.reject(e.file(), e.lineOrRecord(), e.sinkReason(), e.rawText());
      diverted++;
      records++;
    }

    private void nextFile() throws IOException {
      FileRecords finished = current;
      current = null;
      done = done.plus(ConsumedFiles.Entry.of(currentFingerprint == null ? Fingerprint.UNKNOWN : currentFingerprint));
      currentFingerprint = null;
      fileIndex++;
      if (finished != null) {
        finished.close();
      }
    }

    @Override
    public byte[] position() {
      if (files.isEmpty()) {
        return Position.start(files, format.lineBased()).toBytes();
      }
      return position.toBytes();
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
