package dev.lakecommit.ingest.source;

import java.io.IOException;

/**
 * The input is not what it was when the position to resume from was taken: a file before or at the position is
 * gone, renamed or was added before it, or the file at the position was replaced, truncated or rewritten.
 * Resuming would skip or repeat records, so the reader refuses; the message names the file and what changed.
 */
public final class ChangedInputException extends IOException {
  private static final long serialVersionUID = 1L;

  private final String file;

  ChangedInputException(String file, String message) {
    super(message);
    this.file = file;
  }

  /** The input file that changed (or is missing from the listing). */
  public String file() {
    return file;
  }
}
