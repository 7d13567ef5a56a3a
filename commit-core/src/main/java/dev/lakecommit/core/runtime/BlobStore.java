package dev.lakecommit.core.runtime;

import java.io.IOException;
import java.util.List;

/**
 * A flat directory of small immutable objects, where a checkpoint store keeps its files: a local directory, or
 * an object store through a {@code FileIO}. Objects are published whole or not at all, and never overwritten.
 */
public interface BlobStore {

  /**
   * Publishes a new object atomically: readers see all of it or nothing. A local store writes a temporary file,
   * syncs it and renames it; an object store's PUT is atomic by itself.
   *
   * @throws java.nio.file.FileAlreadyExistsException if the name exists (where the store can tell)
   */
  void publish(String name, byte[] bytes) throws IOException;

  /** The whole object. @throws java.io.FileNotFoundException or {@code NoSuchFileException} if absent */
  byte[] read(String name) throws IOException;

  /** Names of the published objects, in no particular order. */
  List<String> list() throws IOException;

  /** Deletes an object if it exists. */
  void delete(String name) throws IOException;

  /** Where the store is, for messages. Must not contain credentials. */
  String location();
}
