package dev.lakecommit.ingest;

import java.util.List;

/** {@link MetastoreVersionsIT} against the Hive 4 metastores, in a class of its own (a test JVM of its own). */
class Metastore4VersionsIT extends MetastoreVersionsIT {
  static List<String> setups() {
    return setups(true);
  }
}
