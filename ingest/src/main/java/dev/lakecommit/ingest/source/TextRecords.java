package dev.lakecommit.ingest.source;

import java.io.BufferedInputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * Splits a byte stream into text records and keeps exact byte offsets, so that a reader can resume at the byte
 * where the next record starts. A record ends at a line feed ({@code \r\n} or {@code \n}); with CSV quoting on, a
 * line feed inside a double-quoted field (RFC 4180) does not end it. Works on bytes: the quote, comma and line
 * feed never occur inside a multi-byte UTF-8 sequence.
 */
final class TextRecords implements Closeable {
  private static final int FIELD_START = 0;
  private static final int UNQUOTED = 1;
  private static final int QUOTED = 2;
  private static final int QUOTE_IN_QUOTED = 3;
  private static final byte[] BOM = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};

  /**
   * Lines a quoted CSV field may span. A quote not closed within them (or within {@link #maxRecordBytes}, or before
   * the end of the file) is taken to be a stray quote: the record is only the line where it opened, and reading
   * goes on at the next line, so one bad quote never swallows the rest of a file.
   */
  static final int MAX_QUOTED_LINES = 1000;
  /** The 64-bit FNV-1a hash of no bytes: the checksum at the start of a file. */
  static final long EMPTY_CHECKSUM = 0xcbf29ce484222325L;
  private static final long FNV_PRIME = 0x100000001b3L;
  private static final int BUFFER_BYTES = 64 * 1024;

  private final InputStream in;
  private final boolean csvQuotes;
  private final int maxRecordBytes;
  private byte[] buffer = new byte[BUFFER_BYTES];
  private int bufferPos;
  private int bufferLimit;
  private boolean eof;

  private byte[] record = new byte[1024];
  private int length;
  private boolean overlong;
  private boolean unterminatedQuote;
  private boolean quoteCut;
  private long recordStart;
  private long nextOffset;
  private long checksum;
  private int lines;
  private final CharsetDecoder strict = StandardCharsets.UTF_8.newDecoder()
      .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);

  /**
   * @param in positioned at {@code offset}
   * @param offset the byte offset of {@code in}'s first byte in the file; at 0 a UTF-8 byte order mark is skipped
   * @param checksum the {@linkplain #checksum() checksum} of the bytes before {@code offset}
   */
  TextRecords(InputStream in, long offset, long checksum, boolean csvQuotes, int maxRecordBytes)
      throws IOException {
    this.in = in;
    this.csvQuotes = csvQuotes;
    this.maxRecordBytes = maxRecordBytes;
    this.nextOffset = offset;
    this.checksum = checksum;
    if (offset == 0) {
      fill();
      if (bufferLimit >= 3 && Arrays.equals(buffer, 0, 3, BOM, 0, 3)) {
        bufferPos = 3;
        nextOffset = 3;
        for (byte b : BOM) {
          this.checksum = hash(this.checksum, b);
        }
      }
    }
  }

  TextRecords(InputStream in, long offset, boolean csvQuotes, int maxRecordBytes) throws IOException {
    this(in, offset, EMPTY_CHECKSUM, csvQuotes, maxRecordBytes);
  }

  private static long hash(long hash, byte b) {
    return (hash ^ (b & 0xff)) * FNV_PRIME;
  }

  /**
   * The checksum (64-bit FNV-1a) of the file's first {@code length} bytes, read anew: what a reader that consumed
   * them would report as its {@link #checksum()}.
   *
   * @throws java.io.EOFException if the file is shorter
   */
  static long prefixChecksum(String file, InputFile input, long length) throws IOException {
    long hash = EMPTY_CHECKSUM;
    if (length == 0) {
      return hash;
    }
    byte[] bytes = new byte[BUFFER_BYTES];
    long left = length;
    // the text as the readers read it: decompressed, so that offsets and checksum count the same bytes
    try (InputStream stream = openAt(file, input, 0)) {
      while (left > 0) {
        int read = stream.read(bytes, 0, (int) Math.min(bytes.length, left));
        if (read < 0) {
          throw new java.io.EOFException("The file ends after " + (length - left) + " of " + length + " bytes");
        }
        for (int i = 0; i < read; i++) {
          hash = hash(hash, bytes[i]);
        }
        left -= read;
      }
    }
    return hash;
  }

  /**
   * A stream of the file's text positioned at {@code offset}; an empty stream at or past the end (object stores
   * refuse a read that starts at the end). A compressed file ({@link Compression}, by name or by its first bytes)
   * is decompressed, and {@code offset} counts decompressed bytes: the stream is read from the start and skipped.
   *
   * @throws ChangedInputException if the file is shorter than {@code offset}: it changed since the position was
   *     taken
   */
  static InputStream openAt(String file, InputFile input, long offset) throws IOException {
    long length = input.getLength();
    Compression named = Compression.fromName(file);
    if (length == 0) {
      if (!input.exists()) { // a local file that is gone has length 0
        throw new NotFoundException("File does not exist: %s", file);
      }
      if (offset > 0) {
        throw new ChangedInputException(file, "Input file " + file + " changed: it is empty, shorter than the "
            + "position to resume from (byte " + offset + "); it was truncated or replaced");
      }
      return new EmptyStream(offset);
    }
    if (named == null && offset >= length && !startsCompressed(input)) {
      if (offset > length) {
        throw new ChangedInputException(file, "Input file " + file + " changed: it has " + length + " bytes, "
            + "fewer than the position to resume from (byte " + offset + "); it was truncated or replaced");
      }
      return new EmptyStream(offset);
    }
    SeekableInputStream stream = input.newStream();
    try {
      Compression compression = named;
      BufferedInputStream head = null;
      if (compression == null) {
        head = new BufferedInputStream(stream, 8);
        compression = Compression.sniff(head);
      }
      if (compression == Compression.NONE) {
        if (offset == 0 && head != null) {
          return head; // holds the few bytes sniffed: no second request to an object store
        }
        stream.seek(offset); // past the few bytes sniffed: read on from the stream itself
        return stream;
      }
      InputStream text = compression.decompress(head != null ? head : stream);
      long skipped = skip(text, offset);
      if (skipped < offset) {
        text.close();
        throw new ChangedInputException(file, "Input file " + file + " changed: it decompresses to " + skipped
            + " bytes, fewer than the position to resume from (byte " + offset + " of its " + compression.name()
                .toLowerCase(java.util.Locale.ROOT) + " stream); it was truncated or replaced");
      }
      return text;
    } catch (IOException | RuntimeException e) {
      stream.close();
      throw e;
    }
  }

  private static boolean startsCompressed(InputFile input) throws IOException {
    try (InputStream in = new BufferedInputStream(input.newStream(), 8)) {
      return Compression.sniff(in) != Compression.NONE;
    }
  }

  /** Skips up to {@code n} bytes; fewer only at the end of the stream. */
  private static long skip(InputStream in, long n) throws IOException {
    long skipped = 0;
    byte[] scratch = null;
    while (skipped < n) {
      long step = in.skip(n - skipped);
      if (step <= 0) {
        if (scratch == null) {
          scratch = new byte[8192];
        }
        int read = in.read(scratch, 0, (int) Math.min(scratch.length, n - skipped));
        if (read < 0) {
          break;
        }
        step = read;
      }
      skipped += step;
    }
    return skipped;
  }

  /** Nothing to read, at the end of a file. */
  private static final class EmptyStream extends SeekableInputStream {
    private final long position;

    EmptyStream(long position) {
      this.position = position;
    }

    @Override
    public long getPos() {
      return position;
    }

    @Override
    public void seek(long newPos) {}

    @Override
    public int read() {
      return -1;
    }
  }

  /**
   * Reads the next record.
   *
   * @return false at the end of the stream with nothing read
   */
  boolean next() throws IOException {
    length = 0;
    lines = 0;
    overlong = false;
    unterminatedQuote = false;
    quoteCut = false;
    recordStart = nextOffset;
    if (!csvQuotes) {
      return nextLine();
    }
    int state = FIELD_START;
    boolean any = false;
    int firstLineEnd = -1; // where the first line feed inside quotes is in the record
    long firstLineOffset = 0;
    long firstLineChecksum = 0;
    while (true) {
      if (bufferPos >= bufferLimit && !fill()) {
        if (!any) {
          return false;
        }
        if (state == QUOTED && firstLineEnd >= 0) {
          cut(firstLineEnd, firstLineOffset, firstLineChecksum, -1);
          return true;
        }
        lines++;
        unterminatedQuote = state == QUOTED;
        stripCarriageReturn();
        return true;
      }
      byte b = buffer[bufferPos++];
      nextOffset++;
      checksum = hash(checksum, b);
      any = true;
      if (b == '\n') {
        lines++;
        if (!csvQuotes || state != QUOTED) {
          stripCarriageReturn();
          return true;
        }
        if (firstLineEnd < 0) {
          if (overlong || length >= maxRecordBytes) { // the line alone fills a record: it is the record
            unterminatedQuote = !overlong;
            quoteCut = !overlong;
            stripCarriageReturn();
            return true;
          }
          firstLineEnd = length;
          firstLineOffset = nextOffset;
          firstLineChecksum = checksum;
        } else if (lines > MAX_QUOTED_LINES) {
          cut(firstLineEnd, firstLineOffset, firstLineChecksum, b);
          return true;
        }
      }
      if (csvQuotes) {
        state = step(state, b);
      }
      if (firstLineEnd >= 0 && length >= maxRecordBytes) {
        cut(firstLineEnd, firstLineOffset, firstLineChecksum, b);
        return true;
      }
      append(b);
    }
  }

  /**
   * {@link #next} without quotes: a record is a line. The same bytes, offsets, checksum and bound as the byte-wise
   * loop, a buffer's run of bytes up to the line feed at a time.
   */
  private boolean nextLine() throws IOException {
    boolean any = false;
    while (true) {
      if (bufferPos >= bufferLimit && !fill()) {
        if (!any) {
          return false;
        }
        lines++;
        stripCarriageReturn();
        return true;
      }
      any = true;
      byte[] bytes = buffer;
      int from = bufferPos;
      int end = from;
      int limit = bufferLimit;
      long hash = checksum;
      boolean lineFeed = false;
      while (end < limit) {
        byte b = bytes[end++];
        hash = (hash ^ (b & 0xff)) * FNV_PRIME;
        if (b == '\n') {
          lineFeed = true;
          break;
        }
      }
      checksum = hash;
      nextOffset += end - from;
      bufferPos = end;
      append(bytes, from, (lineFeed ? end - 1 : end) - from);
      if (lineFeed) {
        lines++;
        stripCarriageReturn();
        return true;
      }
    }
  }

  /**
   * Ends the record at its first line, a quote on which is not closed in time, and puts the bytes read after that
   * line back, to be read again as the next records.
   *
   * @param pending a byte read but not appended to the record, or -1
   */
  private void cut(int firstLineEnd, long firstLineOffset, long firstLineChecksum, int pending) {
    int head = length - (firstLineEnd + 1) + (pending >= 0 ? 1 : 0);
    int tail = bufferLimit - bufferPos;
    byte[] rest = new byte[Math.max(BUFFER_BYTES, head + tail)];
    System.arraycopy(record, firstLineEnd + 1, rest, 0, length - (firstLineEnd + 1));
    if (pending >= 0) {
      rest[head - 1] = (byte) pending;
    }
    System.arraycopy(buffer, bufferPos, rest, head, tail);
    buffer = rest;
    bufferPos = 0;
    bufferLimit = head + tail;
    length = firstLineEnd;
    lines = 1;
    nextOffset = firstLineOffset;
    checksum = firstLineChecksum;
    unterminatedQuote = true;
    quoteCut = true;
    stripCarriageReturn();
  }

  private static int step(int state, byte b) {
    switch (state) {
      case FIELD_START:
        return b == '"' ? QUOTED : b == ',' ? FIELD_START : UNQUOTED;
      case UNQUOTED:
        return b == ',' ? FIELD_START : UNQUOTED;
      case QUOTED:
        return b == '"' ? QUOTE_IN_QUOTED : QUOTED;
      default: // a quote inside a quoted field: escaped quote, end of field, or malformed (left to the parser)
        return b == '"' ? QUOTED : b == ',' ? FIELD_START : UNQUOTED;
    }
  }

  private void append(byte b) {
    if (length >= maxRecordBytes) {
      overlong = true;
      return;
    }
    if (length == record.length) {
      record = Arrays.copyOf(record, Math.min(Math.max(16, record.length * 2), maxRecordBytes));
    }
    record[length++] = b;
  }

  /** {@link #append(byte)} of {@code count} bytes at once. */
  private void append(byte[] bytes, int from, int count) {
    int fits = Math.min(count, maxRecordBytes - length);
    if (fits < count) {
      overlong = true;
    }
    if (fits <= 0) {
      return;
    }
    if (length + fits > record.length) {
      record = Arrays.copyOf(record, Math.min(Math.max(Math.max(16, record.length * 2), length + fits),
          maxRecordBytes));
    }
    System.arraycopy(bytes, from, record, length, fits);
    length += fits;
  }

  private void stripCarriageReturn() {
    if (!overlong && length > 0 && record[length - 1] == '\r') {
      length--;
    }
  }

  private boolean fill() throws IOException {
    if (eof) {
      return false;
    }
    if (buffer.length > BUFFER_BYTES) {
      buffer = new byte[BUFFER_BYTES]; // after a cut put bytes back
    }
    int read = in.read(buffer, 0, buffer.length);
    while (read == 0) {
      read = in.read(buffer, 0, buffer.length);
    }
    if (read < 0) {
      eof = true;
      bufferPos = 0;
      bufferLimit = 0;
      return false;
    }
    bufferPos = 0;
    bufferLimit = read;
    return true;
  }

  /** Whether the record has no bytes at all (an empty line). */
  boolean empty() {
    return length == 0 && !overlong;
  }

  /** Whether the record is only spaces and tabs. */
  boolean blank() {
    for (int i = 0; i < length; i++) {
      if (record[i] != ' ' && record[i] != '\t') {
        return false;
      }
    }
    return !overlong;
  }

  /** Whether every byte of the record is ASCII: its bytes are then its text, one byte per character. */
  boolean ascii() {
    return ascii(record, length);
  }

  /** Whether the first {@code length} bytes are all ASCII (so UTF-8 that needs no decoding to be checked). */
  static boolean ascii(byte[] bytes, int length) {
    for (int i = 0; i < length; i++) {
      if (bytes[i] < 0) {
        return false;
      }
    }
    return true;
  }

  /** The record's bytes: the first {@link #length()} of this array, valid until the next {@link #next()}. */
  byte[] bytes() {
    return record;
  }

  /** The record's length in bytes. */
  int length() {
    return length;
  }

  /**
   * The record as text.
   *
   * @throws CharacterCodingException if it is not valid UTF-8; {@link #lenientText()} then shows it
   */
  String text() throws CharacterCodingException {
    return strict.decode(ByteBuffer.wrap(record, 0, length)).toString();
  }

  /** The byte (0-based, within the record) where UTF-8 decoding fails, or -1. */
  int firstInvalidByte() {
    CharBuffer out = CharBuffer.allocate(length + 1);
    ByteBuffer bytes = ByteBuffer.wrap(record, 0, length);
    strict.reset();
    if (strict.decode(bytes, out, true).isError()) {
      return bytes.position();
    }
    return -1;
  }

  /** The record as text with invalid bytes replaced, for messages and dead letters. */
  String lenientText() {
    return new String(record, 0, length, StandardCharsets.UTF_8);
  }

  /** Whether the record was longer than the limit (its text then holds only the first bytes). */
  boolean overlong() {
    return overlong;
  }

  /** Whether a quoted CSV field of the record is not closed (by the end of the stream, or in time). */
  boolean unterminatedQuote() {
    return unterminatedQuote;
  }

  /**
   * Whether the record was cut at its first line because a quote on it was not closed within
   * {@value #MAX_QUOTED_LINES} lines, the record size limit, or before the end of the file.
   */
  boolean quoteCut() {
    return quoteCut;
  }

  /** The checksum of the bytes from the start of the file to {@link #nextOffset()}: what was consumed. */
  long checksum() {
    return checksum;
  }

  long recordStart() {
    return recordStart;
  }

  /** The byte offset just after the record and its line feed: where the next record starts. */
  long nextOffset() {
    return nextOffset;
  }

  /** How many lines the record spanned (counting its line feed; a last line without one counts too). */
  int lines() {
    return lines;
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}
