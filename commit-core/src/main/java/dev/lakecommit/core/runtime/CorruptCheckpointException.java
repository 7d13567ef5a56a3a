package dev.lakecommit.core.runtime;

import java.io.IOException;

/** A checkpoint file that is torn, truncated, altered or of an unknown format. Names the file. */
public final class CorruptCheckpointException extends IOException {
  private final String file;

  public CorruptCheckpointException(String file, String reason) {
    super("Corrupt checkpoint file " + file + ": " + reason);
    this.file = file;
  }

  public String file() {
    return file;
  }
}
