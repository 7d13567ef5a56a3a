package dev.lakecommit.ingest.source;

import dev.lakecommit.staging.FileIOs;
import java.io.Closeable;
import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.SupportsPrefixOperations;

/**
 * Lists and opens input files: local paths through {@code java.nio}, {@code s3://} through Iceberg's S3FileIO
 * ({@link FileIOs}), and {@code s3a://} and other Hadoop schemes through one Hadoop file system instance per
 * source (not the shared cache, so that it is closed with the source).
 */
abstract class Storage implements Closeable {

  static Storage forInput(String input, Map<String, String> properties, Configuration conf) throws IOException {
    String scheme = scheme(input);
    if (scheme.isEmpty() || scheme.equals("file")) {
      return new Local();
    } else if (scheme.equals("s3")) {
      return new Remote(FileIOs.forLocation(input, properties, conf));
    }
    return new Hadoop(input, conf);
  }

  /**
   * The files of an input — a file, a directory (recursively, skipping names that start with {@code _} or
   * {@code .}) or a glob ({@code *}, {@code ?}, {@code [..]}, {@code {a,b}}; {@code **} crosses directories) —
   * sorted by location.
   *
   * @throws FileNotFoundException if nothing matches
   */
  final List<String> list(String input) throws IOException {
    int glob = firstGlobChar(input);
    List<String> files;
    if (glob >= 0) {
      int slash = input.lastIndexOf('/', glob);
      String base = slash < 0 ? "" : input.substring(0, slash);
      List<PathMatcher> matchers = matchers(input.substring(slash + 1));
      files = new ArrayList<>();
      for (String[] entry : listUnder(base)) {
        if (!hidden(entry[1]) && matchers.stream().anyMatch(m -> m.matches(Paths.get(entry[1])))) {
          files.add(entry[0]);
        }
      }
    } else {
      files = listPlain(input);
    }
    if (files.isEmpty()) {
      throw new FileNotFoundException("No input files " + (glob >= 0 ? "match " : "at ") + input);
    }
    files.sort(null);
    return files;
  }

  /**
   * Matchers of a glob relative to its base: {@code **}{@code /} matches zero or more directories, so
   * {@code **}{@code /*.jsonl} also matches files at the top level (Java's glob wants at least one directory there;
   * every variant with some {@code **}{@code /} left out is matched too).
   */
  static List<PathMatcher> matchers(String glob) {
    List<String> variants = new ArrayList<>(List.of(glob));
    for (int i = glob.indexOf("**/"); i >= 0; i = glob.indexOf("**/", i + 3)) {
      final int at = i;
      List<String> more = new ArrayList<>();
      for (String variant : variants) {
        int shift = glob.length() - variant.length();
        int local = at - shift;
        if (local >= 0 && variant.startsWith("**/", local) && (local == 0 || variant.charAt(local - 1) == '/')) {
          more.add(variant.substring(0, local) + variant.substring(local + 3));
        }
      }
      variants.addAll(more);
    }
    List<PathMatcher> matchers = new ArrayList<>();
    for (String variant : variants) {
      matchers.add(FileSystems.getDefault().getPathMatcher("glob:" + variant));
    }
    return matchers;
  }

  /** A file or the visible files under a directory. */
  abstract List<String> listPlain(String input) throws IOException;

  /** Every file under a directory: {location, path relative to the directory with '/' separators}. */
  abstract List<String[]> listUnder(String base) throws IOException;

  abstract InputFile open(String location);

  /**
   * What a file is now: size, modification time and, on an object store, its version.
   *
   * @throws IOException if it cannot be looked up (gone, permission denied, storage error)
   */
  abstract Fingerprint fingerprint(String location) throws IOException;

  @Override
  public void close() {}

  static boolean hidden(String relative) {
    for (String part : relative.split("/")) {
      if (part.startsWith("_") || part.startsWith(".")) {
        return true;
      }
    }
    return false;
  }

  static int firstGlobChar(String input) {
    for (int i = 0; i < input.length(); i++) {
      char c = input.charAt(i);
      if (c == '*' || c == '?' || c == '[' || c == '{') {
        return i;
      }
    }
    return -1;
  }

  static String scheme(String location) {
    int colon = location.indexOf(':');
    if (colon <= 1) {
      return "";
    }
    String scheme = location.substring(0, colon);
    return scheme.chars().allMatch(c -> Character.isLetterOrDigit(c) || c == '+' || c == '-' || c == '.')
        ? scheme.toLowerCase(Locale.ROOT) : "";
  }

  /** Whether a failure means the file is not there (any more). */
  static boolean isNotFound(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof NotFoundException || t instanceof FileNotFoundException || t instanceof NoSuchFileException
          || t.getClass().getSimpleName().equals("NoSuchKeyException")) {
        return true;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return false;
  }

  /** Local files, named by absolute normalized paths. */
  private static final class Local extends Storage {
    private static Path path(String input) {
      String local = input;
      if (scheme(input).equals("file")) {
        local = input.substring("file:".length());
        while (local.startsWith("//")) {
          local = local.substring(1);
        }
      }
      return Paths.get(local.isEmpty() ? "." : local).toAbsolutePath().normalize();
    }

    @Override
    List<String> listPlain(String input) throws IOException {
      Path path = path(input);
      if (Files.isRegularFile(path)) {
        return new ArrayList<>(List.of(path.toString()));
      }
      if (!Files.isDirectory(path)) {
        throw new FileNotFoundException("Input not found: " + input);
      }
      List<String> files = new ArrayList<>();
      for (String[] entry : listUnder(input)) {
        if (!hidden(entry[1])) {
          files.add(entry[0]);
        }
      }
      return files;
    }

    @Override
    List<String[]> listUnder(String base) throws IOException {
      Path dir = path(base);
      if (!Files.isDirectory(dir)) {
        throw new FileNotFoundException("Input directory not found: " + (base.isEmpty() ? "." : base));
      }
      List<String[]> entries = new ArrayList<>();
      try (Stream<Path> walk = Files.walk(dir)) {
        walk.filter(Files::isRegularFile).forEach(file -> entries.add(new String[] {
            file.toString(), dir.relativize(file).toString().replace(File.separatorChar, '/')}));
      } catch (UncheckedIOException e) {
        throw e.getCause();
      }
      return entries;
    }

    @Override
    InputFile open(String location) {
      return org.apache.iceberg.Files.localInput(new File(location));
    }

    @Override
    Fingerprint fingerprint(String location) throws IOException {
      java.nio.file.attribute.BasicFileAttributes attributes =
          Files.readAttributes(Paths.get(location), java.nio.file.attribute.BasicFileAttributes.class);
      return new Fingerprint(attributes.size(), attributes.lastModifiedTime().toMillis(), "");
    }
  }

  /** A Hadoop file system ({@code s3a://}, {@code hdfs://}, ...), one instance for the source's lifetime. */
  private static final class Hadoop extends Storage {
    private final FileSystem fs;

    Hadoop(String input, Configuration conf) throws IOException {
      this.fs = FileSystem.newInstance(new org.apache.hadoop.fs.Path(input).toUri(), conf);
    }

    @Override
    List<String> listPlain(String input) throws IOException {
      String location = input.endsWith("/") ? input.substring(0, input.length() - 1) : input;
      List<String> files = new ArrayList<>();
      for (String[] entry : listUnder(location)) {
        if (entry[1].isEmpty()) {
          return new ArrayList<>(List.of(entry[0]));
        }
        if (!hidden(entry[1])) {
          files.add(entry[0]);
        }
      }
      return files;
    }

    @Override
    List<String[]> listUnder(String base) throws IOException {
      org.apache.hadoop.fs.Path root = fs.makeQualified(new org.apache.hadoop.fs.Path(base.isEmpty() ? "/" : base));
      String prefix = root.toString();
      List<String[]> entries = new ArrayList<>();
      try {
        RemoteIterator<LocatedFileStatus> files = fs.listFiles(root, true);
        while (files.hasNext()) {
          String location = files.next().getPath().toString();
          if (location.equals(prefix)) {
            entries.add(new String[] {location, ""});
          } else if (location.startsWith(prefix.endsWith("/") ? prefix : prefix + "/")) {
            entries.add(new String[] {location, location.substring(prefix.length()).replaceFirst("^/", "")});
          }
        }
      } catch (FileNotFoundException e) {
        return entries;
      }
      return entries;
    }

    @Override
    InputFile open(String location) {
      return new HadoopFileInput(fs, new org.apache.hadoop.fs.Path(location), -1);
    }

    @Override
    Fingerprint fingerprint(String location) throws IOException {
      org.apache.hadoop.fs.FileStatus status = fs.getFileStatus(new org.apache.hadoop.fs.Path(location));
      String version = "";
      if (status instanceof org.apache.hadoop.fs.EtagSource etag && etag.getEtag() != null) {
        version = etag.getEtag();
      }
      return new Fingerprint(status.getLen(), status.getModificationTime(), version);
    }

    @Override
    public void close() {
      try {
        fs.close();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /** Object stores through an Iceberg FileIO that can list prefixes (S3FileIO). */
  private static final class Remote extends Storage {
    private final FileIO io;

    Remote(FileIO io) {
      this.io = io;
    }

    @Override
    List<String> listPlain(String input) throws IOException {
      String location = input.endsWith("/") ? input.substring(0, input.length() - 1) : input;
      List<String> files = new ArrayList<>();
      for (String[] entry : listUnder(location)) {
        if (entry[1].isEmpty() && !input.endsWith("/")) {
          return new ArrayList<>(List.of(location));
        }
        if (!entry[1].isEmpty() && !hidden(entry[1])) {
          files.add(entry[0]);
        }
      }
      return files;
    }

    @Override
    List<String[]> listUnder(String base) throws IOException {
      if (!(io instanceof SupportsPrefixOperations)) {
        throw new IOException("Cannot list " + base + ": " + io.getClass().getSimpleName() + " cannot list files");
      }
      List<String[]> entries = new ArrayList<>();
      try {
        for (FileInfo info : ((SupportsPrefixOperations) io).listPrefix(base)) {
          String location = info.location();
          if (location.endsWith("/")) {
            continue; // a directory marker
          }
          if (location.equals(base)) {
            entries.add(new String[] {location, ""});
          } else if (location.startsWith(base + "/")) {
            entries.add(new String[] {location, location.substring(base.length() + 1)});
          }
        }
      } catch (RuntimeException e) {
        if (isNotFound(e)) {
          return entries;
        }
        throw new IOException("Cannot list " + base + ": " + e.getMessage(), e);
      }
      return entries;
    }

    @Override
    InputFile open(String location) {
      return io.newInputFile(location);
    }

    /** S3: the object's version id (versioned buckets) or ETag; other stores: the size only. */
    @Override
    Fingerprint fingerprint(String location) throws IOException {
      if (io instanceof org.apache.iceberg.aws.s3.S3FileIO s3) {
        String rest = location.substring(location.indexOf("://") + 3);
        int slash = rest.indexOf('/');
        try {
          software.amazon.awssdk.services.s3.model.HeadObjectResponse head = s3.client(location).headObject(
              b -> b.bucket(rest.substring(0, slash)).key(rest.substring(slash + 1)));
          String version = head.versionId() != null && !head.versionId().isEmpty() && !"null".equals(head.versionId())
              ? head.versionId() : head.eTag();
          return new Fingerprint(head.contentLength(), head.lastModified() == null ? -1
              : head.lastModified().toEpochMilli(), version);
        } catch (RuntimeException e) {
          throw Inputs.failure(location, e);
        }
      }
      try {
        return new Fingerprint(io.newInputFile(location).getLength(), -1, "");
      } catch (RuntimeException e) {
        throw Inputs.failure(location, e);
      }
    }

    @Override
    public void close() {
      io.close();
    }
  }
}
