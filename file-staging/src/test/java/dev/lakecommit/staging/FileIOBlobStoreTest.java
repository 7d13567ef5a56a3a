package dev.lakecommit.staging;

import dev.lakecommit.staging.testing.FastLocalFileSystem;
import java.nio.file.Path;
import java.util.UUID;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.FileIO;
import org.junit.jupiter.api.io.TempDir;

class FileIOBlobStoreTest extends FileIOBlobStoreContract {
  @TempDir Path dir;

  private final FileIO io = new HadoopFileIO(FastLocalFileSystem.configuration());

  @Override
  protected FileIO io() {
    return io;
  }

  @Override
  protected String newDirectory() {
    return "file:" + dir.resolve(UUID.randomUUID().toString());
  }
}
