package dev.lakecommit.ingest.source;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * An input file could not be read — permission denied, gone after listing, a storage error — as opposed to input
 * that was read and does not fit. Never bad input: it fails the reader even with a {@link BadRecordSink}, so that
 * nothing after it is checkpointed and a rerun (after fixing the cause) reads the file.
 */
public final class InputReadException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String file;

  InputReadException(String file, String what, Throwable cause) {
    super("Cannot read input file " + file + ": " + what, cause);
    this.file = file;
  }

  /** The input file. */
  public String file() {
    return file;
  }

  /** The first {@code InputReadException} in a cause chain, or null. */
  static InputReadException in(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof InputReadException read) {
        return read;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return null;
  }

  /** For methods that cannot throw {@link IOException}; {@link #in} finds it in the chain. */
  UncheckedIOException unchecked() {
    return new UncheckedIOException(getMessage(), this);
  }
}
