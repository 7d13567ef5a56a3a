package dev.lakecommit.ingest.verify;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.HexFormat;

/**
 * The string form keys are compared by, so that a key read from the source and the same key read back from the
 * table match even where their Java values differ in form: instants in UTC, decimals without trailing zeros,
 * binary as hex.
 */
final class Keys {
  /** The form of a null key (a null key is a finding, and nulls count like any other key). */
  static final String NULL = "\u0000null";

  private Keys() {}

  static String text(Object value) {
    if (value == null) {
      return NULL;
    } else if (value instanceof OffsetDateTime) {
      return ((OffsetDateTime) value).withOffsetSameInstant(ZoneOffset.UTC).toString();
    } else if (value instanceof BigDecimal) {
      BigDecimal decimal = ((BigDecimal) value).stripTrailingZeros();
      return decimal.signum() == 0 ? "0" : decimal.toPlainString();
    } else if (value instanceof ByteBuffer) {
      ByteBuffer bytes = ((ByteBuffer) value).duplicate();
      byte[] copy = new byte[bytes.remaining()];
      bytes.get(copy);
      return HexFormat.of().formatHex(copy);
    } else if (value instanceof byte[]) {
      return HexFormat.of().formatHex((byte[]) value);
    }
    return value.toString();
  }
}
