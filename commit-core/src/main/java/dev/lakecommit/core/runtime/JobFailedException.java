package dev.lakecommit.core.runtime;

/**
 * A job stopped and cannot go on by itself. Every checkpoint it completed is kept: running the same job again
 * resumes from the last one. The message names the job, the checkpoint and the cause.
 */
public final class JobFailedException extends RuntimeException {
  public JobFailedException(String message, Throwable cause) {
    super(message, cause);
  }

  public JobFailedException(String message) {
    super(message);
  }
}
