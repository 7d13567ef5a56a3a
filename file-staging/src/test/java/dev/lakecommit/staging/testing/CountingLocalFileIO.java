package dev.lakecommit.staging.testing;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.OutputFile;

/**
 * A {@link HadoopFileIO} on local disk ({@link FastLocalFileSystem}) that counts open output files
 * ({@link OpenFileCounter}), for tests that stage many thousands of files. Its files stay Hadoop output files, so
 * Iceberg's Parquet writer copies the Hadoop configuration instead of parsing a new one per file.
 */
public final class CountingLocalFileIO extends HadoopFileIO {
  private final OpenFileCounter counter;
  private final Configuration conf;

  private CountingLocalFileIO(Configuration conf, OpenFileCounter counter) {
    super(conf);
    this.conf = conf;
    this.counter = counter;
  }

  public static CountingLocalFileIO create() {
    OpenFileCounter counter = new OpenFileCounter();
    Configuration conf = FastLocalFileSystem.configuration();
    FastLocalFileSystem.register(conf, counter);
    return new CountingLocalFileIO(conf, counter);
  }

  public OpenFileCounter counter() {
    return counter;
  }

  @Override
  public OutputFile newOutputFile(String path) {
    counter.fileOpened();
    return super.newOutputFile(path);
  }

  @Override
  public void close() {
    super.close();
    FastLocalFileSystem.unregister(conf);
  }
}
