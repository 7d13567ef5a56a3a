package dev.lakecommit.ingest.faults;

import java.io.IOException;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The local file system ({@code fs.file.impl}, with {@code fs.file.impl.disable.cache=true}) whose trigger point
 * is a staged file moved into its partition: the Hive committer moves files, then adds partitions and records
 * the watermark in the metastore — an armed {@link Outage} takes the metastore away in between.
 */
public class OutageFileSystem extends LocalFileSystem {
  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    boolean renamed = super.rename(src, dst);
    if (renamed && !dst.toString().contains(".lakecommit-staging")) {
      Outage.reached(dst.toString());
    }
    return renamed;
  }
}
