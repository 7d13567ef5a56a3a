package dev.lakecommit.staging;

import dev.lakecommit.core.runtime.BlobStore;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.io.SupportsPrefixOperations;

/**
 * A {@link BlobStore} in a directory of an Iceberg {@code FileIO}, so that checkpoints can live on S3 next to
 * the table. Publishing is a single PUT on object stores, which S3 makes atomic; the name is checked first
 * (S3 has no create-if-absent here, so two publishers racing on one name is not detected — checkpoint names
 * are unique per job and a job runs once at a time).
 *
 * <p>On a Hadoop file system a crash mid-publish can leave a partial object; the checkpoint store's checksums
 * reject it. For local disk prefer {@code LocalBlobStore}, which renames into place.
 */
public final class FileIOBlobStore implements BlobStore {
  private final FileIO io;
  private final String directory;

  /**
   * @param directory a location in {@code io}, e.g. {@code s3://bucket/checkpoints/job-7}
   * @throws IllegalArgumentException if {@code io} cannot list by prefix
   */
  public FileIOBlobStore(FileIO io, String directory) {
    this.io = Objects.requireNonNull(io, "io");
    Objects.requireNonNull(directory, "directory");
    if (!(io instanceof SupportsPrefixOperations)) {
      throw new IllegalArgumentException(
          String.format("FileIO %s cannot list by prefix; use HadoopFileIO or S3FileIO",
              io.getClass().getName()));
    }
    this.directory = directory.endsWith("/") ? directory.substring(0, directory.length() - 1) : directory;
  }

  @Override
  public void publish(String name, byte[] bytes) throws IOException {
    String location = locationOf(name);
    try {
      if (io.newInputFile(location).exists()) {
        throw new FileAlreadyExistsException(location);
      }
      try (PositionOutputStream out = io.newOutputFile(location).create()) {
        out.write(bytes);
      }
    } catch (AlreadyExistsException e) {
      throw new FileAlreadyExistsException(location, null, e.getMessage());
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  @Override
  public byte[] read(String name) throws IOException {
    String location = locationOf(name);
    InputFile file = io.newInputFile(location);
    try {
      // Storages report a missing object each their own way; exists() is uniform (and caches S3's HEAD). An empty
      // object cannot be read by range on S3 (416), so its length is asked first.
      if (!file.exists()) {
        throw new FileNotFoundException(location);
      }
      if (file.getLength() == 0) {
        return new byte[0];
      }
      try (InputStream in = file.newStream()) {
        return in.readAllBytes();
      }
    } catch (NotFoundException e) {
      throw new FileNotFoundException(location);
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  @Override
  public List<String> list() throws IOException {
    List<String> names = new ArrayList<>();
    try {
      for (FileInfo file : ((SupportsPrefixOperations) io).listPrefix(directory + "/")) {
        String location = file.location();
        String name = location.substring(location.lastIndexOf('/') + 1);
        // Only direct children: the store is flat.
        if (location.endsWith(directory + "/" + name) || location.endsWith(stripScheme(directory) + "/" + name)) {
          names.add(name);
        }
      }
    } catch (UncheckedIOException e) {
      if (e.getCause() instanceof FileNotFoundException) {
        return names;
      }
      throw e.getCause();
    } catch (NotFoundException e) {
      return names;
    }
    return names;
  }

  @Override
  public void delete(String name) throws IOException {
    try {
      io.deleteFile(locationOf(name));
    } catch (NotFoundException e) {
      // already gone
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }

  @Override
  public String location() {
    return directory;
  }

  private String locationOf(String name) {
    if (name.isEmpty() || name.contains("/")) {
      throw new IllegalArgumentException(
          String.format("Invalid blob name: '%s' (must be non-empty, without '/')", name));
    }
    return directory + "/" + name;
  }

  private static String stripScheme(String location) {
    int colon = location.indexOf(':');
    return colon < 0 ? location : location.substring(colon + 1).replaceFirst("^/+", "/");
  }
}
