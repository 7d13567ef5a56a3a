package dev.lakecommit.ingest.source;

/**
 * Input that does not fit: a malformed line, a value that does not fit the schema, a file that cannot be parsed as
 * its format. The message names the file, the 1-based line or record number, and the field where there is one.
 * Thrown by a {@link FileSource} reader when no {@link BadRecordSink} is set. A file that cannot be read at all
 * (permission denied, gone, a storage error) is not bad input: see {@link InputReadException}.
 */
public final class BadRecordException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String file;
  private final long lineOrRecord;
  private final boolean lineBased;
  private final String field;
  private final String reason;
  private final transient String rawText;
  private final transient boolean endsFile;

  BadRecordException(String file, long lineOrRecord, boolean lineBased, String field, String reason, String rawText,
      boolean endsFile, Throwable cause) {
    super(message(file, lineOrRecord, lineBased, field, reason), cause);
    this.file = file;
    this.lineOrRecord = lineOrRecord;
    this.lineBased = lineBased;
    this.field = field;
    this.reason = reason;
    this.rawText = rawText == null ? "" : rawText;
    this.endsFile = endsFile;
  }

  /** A problem with one record; reading goes on with the next one. */
  static BadRecordException record(String file, long lineOrRecord, boolean lineBased, String field, String reason,
      String rawText) {
    return new BadRecordException(file, lineOrRecord, lineBased, field, reason, rawText, false, null);
  }

  /** A problem that ends the file: nothing more can be read from it (from {@code lineOrRecord} on; 0 = all). */
  static BadRecordException file(String file, long lineOrRecord, boolean lineBased, String reason, Throwable cause) {
    return new BadRecordException(file, lineOrRecord, lineBased, null, reason, "", true, cause);
  }

  private static String message(String file, long lineOrRecord, boolean lineBased, String field, String reason) {
    StringBuilder message = new StringBuilder("Bad input in ").append(file);
    if (lineOrRecord > 0) {
      message.append(lineBased ? " line " : " record ").append(lineOrRecord);
    }
    if (field != null) {
      message.append(", field '").append(field).append('\'');
    }
    return message.append(": ").append(reason).toString();
  }

  /** The input file's location. */
  public String file() {
    return file;
  }

  /** The 1-based line (JSON, CSV) or record number (Parquet, Avro); 0 when it concerns the whole file. */
  public long lineOrRecord() {
    return lineOrRecord;
  }

  /** The field (a dotted path for nested fields), or null when the problem is not a field's. */
  public String field() {
    return field;
  }

  /** Why, without the file and line. */
  public String reason() {
    return reason;
  }

  /** The offending input as text; empty for binary formats and whole files. */
  public String rawText() {
    return rawText == null ? "" : rawText;
  }

  /** The reason as handed to a {@link BadRecordSink}: the field, if any, and why. */
  String sinkReason() {
    return field == null ? reason : "field '" + field + "': " + reason;
  }

  boolean lineBased() {
    return lineBased;
  }

  boolean endsFile() {
    return endsFile;
  }
}
