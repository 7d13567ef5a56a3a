package dev.lakecommit.ingest.faults;

import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.OutputFile;

/**
 * A catalog's {@code FileIO} ({@code -C io-impl=dev.lakecommit.ingest.faults.OutageFileIO}) whose trigger point
 * is a new table metadata file: an Iceberg commit writes it, then asks the catalog (metastore, database) to swap
 * to it — an armed {@link Outage} takes the catalog away in between.
 */
public class OutageFileIO extends HadoopFileIO {
  @Override
  public OutputFile newOutputFile(String path) {
    if (path.endsWith(".metadata.json")) {
      Outage.reached(path);
    }
    return super.newOutputFile(path);
  }
}
