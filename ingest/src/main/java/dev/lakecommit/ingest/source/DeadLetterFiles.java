package dev.lakecommit.ingest.source;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Objects;

/**
 * Dead-letter files on local disk: one JSON object per rejected input, per line, with the fields {@code file},
 * {@code line} (1-based line or record number; 0 for a whole file), {@code reason} and {@code raw}. One file per
 * job and attempt, {@code <dir>/<job-id>-<attempt>.bad.jsonl}, created at the first rejection; each line is
 * flushed when written, so a killed process keeps what it rejected.
 */
public final class DeadLetterFiles implements BadRecordSink {
  private static final JsonFactory JSON = new JsonFactory();

  private final Path file;
  private OutputStream out;
  private long count;

  /**
   * @param dir the directory, created if missing
   * @param jobId the job, part of the file name
   * @param attempt distinguishes runs of the same job (a restart rejects records after its position again)
   */
  public DeadLetterFiles(Path dir, String jobId, int attempt) {
    Objects.requireNonNull(dir, "dir");
    Objects.requireNonNull(jobId, "jobId");
    this.file = dir.resolve(jobId.replaceAll("[^A-Za-z0-9._-]", "_") + "-" + attempt + ".bad.jsonl");
  }

  /** The file rejections go to (it exists once something was rejected). */
  public Path file() {
    return file;
  }

  @Override
  public synchronized void reject(String inputFile, long lineOrRecord, String reason, String rawText)
      throws IOException {
    if (out == null) {
      Files.createDirectories(file.getParent());
      out = Files.newOutputStream(file, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
    try (JsonGenerator json = JSON.createGenerator(new NonClosing(out), JsonEncoding.UTF8)) {
      json.writeStartObject();
      json.writeStringField("file", inputFile);
      json.writeNumberField("line", lineOrRecord);
      json.writeStringField("reason", reason);
      json.writeStringField("raw", rawText == null ? "" : rawText);
      json.writeEndObject();
    }
    out.write('\n');
    out.flush();
    count++;
  }

  @Override
  public synchronized long count() {
    return count;
  }

  @Override
  public synchronized void close() throws IOException {
    if (out != null) {
      out.close();
      out = null;
    }
  }

  /** Lets a generator flush into the shared stream without closing it. */
  private static final class NonClosing extends java.io.FilterOutputStream {
    NonClosing(OutputStream out) {
      super(out);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
    }

    @Override
    public void close() throws IOException {
      flush();
    }
  }
}
