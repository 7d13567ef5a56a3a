package dev.lakecommit.ingest.source;

import com.github.luben.zstd.ZstdInputStream;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Locale;
import java.util.zip.GZIPInputStream;

/**
 * Compression of a JSON lines or CSV file: told by the name ({@code .gz}, {@code .gzip}, {@code .zst},
 * {@code .zstd}) or else by the first bytes (gzip {@code 1f 8b}, zstd {@code 28 b5 2f fd}). Offsets into a
 * compressed file count bytes of the decompressed stream; a reader resuming at an offset decompresses from the start
 * and skips to it.
 */
enum Compression {
  NONE, GZIP, ZSTD;

  private static final int GZIP_MAGIC_0 = 0x1f;
  private static final int GZIP_MAGIC_1 = 0x8b;
  private static final int[] ZSTD_MAGIC = {0x28, 0xb5, 0x2f, 0xfd};

  /** The compression a file name's last extension names, or null if it names none. */
  static Compression fromName(String file) {
    String name = file.substring(file.lastIndexOf('/') + 1).toLowerCase(Locale.ROOT);
    if (name.endsWith(".gz") || name.endsWith(".gzip")) {
      return GZIP;
    } else if (name.endsWith(".zst") || name.endsWith(".zstd")) {
      return ZSTD;
    }
    return null;
  }

  /** The file name without a compression extension: {@code a.jsonl.gz} is {@code a.jsonl}. */
  static String stripExtension(String file) {
    if (fromName(file) == null) {
      return file;
    }
    return file.substring(0, file.lastIndexOf('.'));
  }

  /** The compression the first bytes show (the stream must support mark and reset). */
  static Compression sniff(InputStream in) throws IOException {
    in.mark(4);
    int[] head = new int[4];
    int n = 0;
    for (; n < 4; n++) {
      int b = in.read();
      if (b < 0) {
        break;
      }
      head[n] = b;
    }
    in.reset();
    if (n >= 2 && head[0] == GZIP_MAGIC_0 && head[1] == GZIP_MAGIC_1) {
      return GZIP;
    }
    if (n == 4 && head[0] == ZSTD_MAGIC[0] && head[1] == ZSTD_MAGIC[1] && head[2] == ZSTD_MAGIC[2]
        && head[3] == ZSTD_MAGIC[3]) {
      return ZSTD;
    }
    return NONE;
  }

  /** The decompressed stream of a compressed one; concatenated gzip members and zstd frames are read on. */
  InputStream decompress(InputStream in) throws IOException {
    switch (this) {
      case GZIP:
        return new BufferedInputStream(new GZIPInputStream(in, 64 * 1024), 64 * 1024);
      case ZSTD:
        return new BufferedInputStream(new ZstdInputStream(in), 64 * 1024);
      default:
        return in;
    }
  }
}
