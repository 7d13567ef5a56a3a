package dev.lakecommit.staging;

/**
 * A record does not fit the table schema. Names the field (a dotted path such as {@code address.zip},
 * {@code tags.element}, {@code attrs.value}); {@link StagingWriter} adds the record's position.
 */
public class InvalidRecordException extends IllegalArgumentException {
  private final String field;

  public InvalidRecordException(String field, String problem) {
    super("field '" + field + "': " + problem);
    this.field = field;
  }

  /** The same problem with more context (which writer, which record) in the message. */
  public InvalidRecordException(String message, String field, Throwable cause) {
    super(message, cause);
    this.field = field;
  }

  /** The dotted path of the offending field. */
  public String field() {
    return field;
  }
}
