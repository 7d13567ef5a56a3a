package dev.lakecommit.core.runtime;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * A {@link BlobStore} in a local directory: write a temporary file, fsync it, link it into place (failing if the
 * name exists), fsync the directory.
 */
public final class LocalBlobStore implements BlobStore {
  private static final String TEMP_PREFIX = ".tmp-";

  private final Path dir;

  public LocalBlobStore(Path dir) throws IOException {
    this.dir = Files.createDirectories(dir);
  }

  @Override
  public void publish(String name, byte[] bytes) throws IOException {
    Path target = dir.resolve(name);
    if (Files.exists(target)) {
      throw new FileAlreadyExistsException(target.toString());
    }
    Path temp = dir.resolve(TEMP_PREFIX + name + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    try (FileChannel channel =
        FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ByteBuffer buffer = ByteBuffer.wrap(bytes);
      while (buffer.hasRemaining()) {
        channel.write(buffer);
      }
      channel.force(true);
    }
    try {
      // A hard link publishes atomically and, unlike a rename, never replaces a file a racing writer published.
      Files.createLink(target, temp);
    } catch (UnsupportedOperationException e) {
      Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(temp);
    }
    syncDirectory();
  }

  @Override
  public byte[] read(String name) throws IOException {
    return Files.readAllBytes(dir.resolve(name));
  }

  @Override
  public List<String> list() throws IOException {
    List<String> names = new ArrayList<>();
    try (Stream<Path> files = Files.list(dir)) {
      files.map(p -> p.getFileName().toString())
          .filter(n -> !n.startsWith(TEMP_PREFIX))
          .forEach(names::add);
    }
    return names;
  }

  @Override
  public void delete(String name) throws IOException {
    Files.deleteIfExists(dir.resolve(name));
  }

  @Override
  public String location() {
    return dir.toString();
  }

  private void syncDirectory() {
    // Makes the rename durable on Linux; some platforms cannot open a directory, which only weakens durability.
    try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
      channel.force(true);
    } catch (IOException ignored) {
      // not supported here
    }
  }
}
