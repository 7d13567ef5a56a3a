package dev.lakecommit.staging.testing;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Just enough HTTP/1.1 for {@link FaultInjectingS3Proxy}: the head of a message as raw bytes (relayed unchanged),
 * the few headers the proxy needs to find where a body ends, and verbatim copying of bodies by
 * {@code Content-Length} or chunked transfer coding.
 */
final class HttpExchange {
  private static final int MAX_HEAD_BYTES = 64 * 1024;

  private HttpExchange() {}

  /** The head of a request or response: the bytes as received, and the parsed start line and headers. */
  record Head(byte[] raw, String startLine, String text) {

    /** The first value of a header (case-insensitive name), or null. */
    String header(String name) {
      String prefix = name.toLowerCase(Locale.ROOT) + ":";
      for (String line : text.split("\r\n")) {
        if (line.toLowerCase(Locale.ROOT).startsWith(prefix)) {
          return line.substring(prefix.length()).trim();
        }
      }
      return null;
    }

    String method() {
      return startLine.split(" ", 3)[0];
    }

    /** The request target without its query. */
    String path() {
      String target = startLine.split(" ", 3)[1];
      int query = target.indexOf('?');
      return query < 0 ? target : target.substring(0, query);
    }

    int status() {
      return Integer.parseInt(startLine.split(" ", 3)[1]);
    }

    long contentLength() {
      String value = header("Content-Length");
      return value == null ? -1 : Long.parseLong(value);
    }

    boolean chunked() {
      String value = header("Transfer-Encoding");
      return value != null && value.toLowerCase(Locale.ROOT).contains("chunked");
    }

    boolean expectsContinue() {
      String value = header("Expect");
      return value != null && value.equalsIgnoreCase("100-continue");
    }

    boolean closes() {
      String value = header("Connection");
      return value != null && value.equalsIgnoreCase("close");
    }
  }

  /** Reads a head up to and including the empty line; null on a clean end of stream before any byte. */
  static Head readHead(InputStream in) throws IOException {
    ByteArrayOutputStream raw = new ByteArrayOutputStream(512);
    int matched = 0;
    while (matched < 4) {
      int b = in.read();
      if (b < 0) {
        if (raw.size() == 0) {
          return null;
        }
        throw new EOFException("Stream ended inside an HTTP head after " + raw.size() + " bytes");
      }
      raw.write(b);
      matched = (b == '\r' && (matched == 0 || matched == 2)) || (b == '\n' && (matched == 1 || matched == 3))
          ? matched + 1
          : (b == '\r' ? 1 : 0);
      if (raw.size() > MAX_HEAD_BYTES) {
        throw new IOException("HTTP head longer than " + MAX_HEAD_BYTES + " bytes");
      }
    }
    byte[] bytes = raw.toByteArray();
    String text = new String(bytes, StandardCharsets.ISO_8859_1);
    int firstLineEnd = text.indexOf("\r\n");
    return new Head(bytes, text.substring(0, firstLineEnd), text.substring(firstLineEnd + 2));
  }

  /** Copies the body of a request (no body unless it has a length or is chunked), or drops it if out is null. */
  static void copyRequestBody(Head head, InputStream in, OutputStream out) throws IOException {
    if (head.chunked()) {
      copyChunked(in, out);
    } else if (head.contentLength() > 0) {
      copyExactly(in, out, head.contentLength());
    }
  }

  /**
   * Copies the body of a response to a request with the given method.
   *
   * @return false if the body ran to the end of the stream (the connection cannot be reused)
   */
  static boolean copyResponseBody(String requestMethod, Head head, InputStream in, OutputStream out)
      throws IOException {
    int status = head.status();
    if ("HEAD".equals(requestMethod) || status / 100 == 1 || status == 204 || status == 304) {
      return true;
    }
    if (head.chunked()) {
      copyChunked(in, out);
      return true;
    }
    long length = head.contentLength();
    if (length >= 0) {
      copyExactly(in, out, length);
      return true;
    }
    in.transferTo(out);
    return false;
  }

  private static void copyExactly(InputStream in, OutputStream out, long length) throws IOException {
    byte[] buffer = new byte[64 * 1024];
    long left = length;
    while (left > 0) {
      int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
      if (n < 0) {
        throw new EOFException("Body ended " + left + " bytes early (of " + length + ")");
      }
      if (out != null) {
        out.write(buffer, 0, n);
      }
      left -= n;
    }
  }

  private static void copyChunked(InputStream in, OutputStream out) throws IOException {
    while (true) {
      String sizeLine = copyLine(in, out);
      int semicolon = sizeLine.indexOf(';');
      long size = Long.parseLong((semicolon < 0 ? sizeLine : sizeLine.substring(0, semicolon)).trim(), 16);
      if (size == 0) {
        // trailers, up to the empty line
        while (!copyLine(in, out).isEmpty()) {
          // copied
        }
        return;
      }
      copyExactly(in, out, size);
      copyLine(in, out);
    }
  }

  /** Copies one CRLF-terminated line and returns it without the line end. */
  private static String copyLine(InputStream in, OutputStream out) throws IOException {
    StringBuilder line = new StringBuilder();
    int previous = -1;
    while (true) {
      int b = in.read();
      if (b < 0) {
        throw new EOFException("Stream ended inside a chunked body");
      }
      if (out != null) {
        out.write(b);
      }
      if (previous == '\r' && b == '\n') {
        line.setLength(line.length() - 1);
        return line.toString();
      }
      line.append((char) b);
      previous = b;
    }
  }
}
