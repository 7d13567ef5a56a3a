package dev.lakecommit.staging.testing;

import java.io.IOException;
import java.util.Map;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.io.SupportsPrefixOperations;

/**
 * A {@code FileIO} that counts open output files ({@link OpenFileCounter}). Delegates everything to another
 * {@code FileIO} (which must support prefix operations). Its output files are not Hadoop output files, so Iceberg's
 * Parquet writer treats them as any object store's (for counting on local disk cheaply, see
 * {@link CountingLocalFileIO}).
 */
public final class CountingFileIO implements SupportsPrefixOperations {
  private final SupportsPrefixOperations delegate;
  private final OpenFileCounter counter = new OpenFileCounter();

  public CountingFileIO(FileIO delegate) {
    this.delegate = (SupportsPrefixOperations) delegate;
  }

  public OpenFileCounter counter() {
    return counter;
  }

  @Override
  public InputFile newInputFile(String path) {
    return delegate.newInputFile(path);
  }

  @Override
  public OutputFile newOutputFile(String path) {
    OutputFile file = delegate.newOutputFile(path);
    counter.fileOpened();
    return new OutputFile() {
      @Override
      public PositionOutputStream create() {
        return counted(file.create());
      }

      @Override
      public PositionOutputStream createOrOverwrite() {
        return counted(file.createOrOverwrite());
      }

      @Override
      public String location() {
        return file.location();
      }

      @Override
      public InputFile toInputFile() {
        return file.toInputFile();
      }
    };
  }

  @Override
  public void deleteFile(String path) {
    delegate.deleteFile(path);
  }

  @Override
  public Iterable<FileInfo> listPrefix(String prefix) {
    return delegate.listPrefix(prefix);
  }

  @Override
  public void deletePrefix(String prefix) {
    delegate.deletePrefix(prefix);
  }

  @Override
  public Map<String, String> properties() {
    return delegate.properties();
  }

  @Override
  public void close() {
    delegate.close();
  }

  private PositionOutputStream counted(PositionOutputStream stream) {
    return new PositionOutputStream() {
      private boolean closed;

      @Override
      public long getPos() throws IOException {
        return stream.getPos();
      }

      @Override
      public void write(int b) throws IOException {
        stream.write(b);
      }

      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        stream.write(b, off, len);
      }

      @Override
      public void flush() throws IOException {
        stream.flush();
      }

      @Override
      public void close() throws IOException {
        if (!closed) {
          closed = true;
          counter.fileClosed();
        }
        stream.close();
      }
    };
  }
}
