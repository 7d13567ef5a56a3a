package dev.lakecommit.staging;

import org.apache.iceberg.Schema;
import org.apache.iceberg.data.Record;

/**
 * Turns an input record into an Iceberg generic {@link Record} of the table schema. Called once per record, on
 * the writer's thread; must not keep the input.
 *
 * @param <IN> the input type
 */
@FunctionalInterface
public interface InputConverter<IN> {

  /**
   * @throws InvalidRecordException if the input cannot be represented in the schema; the message names the field
   */
  Record convert(IN input);

  /** Iceberg records are passed through as they are (the writer still validates them against the schema). */
  static InputConverter<Record> records() {
    return record -> record;
  }

  /** Avro generic records, matched to the schema's fields by name (see {@link AvroInputConverter}). */
  static InputConverter<org.apache.avro.generic.GenericRecord> avro(Schema schema) {
    return new AvroInputConverter(schema);
  }
}
