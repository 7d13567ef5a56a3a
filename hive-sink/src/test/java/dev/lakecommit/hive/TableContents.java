package dev.lakecommit.hive;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.hadoop.ParquetReader;
import org.apache.parquet.hadoop.example.GroupReadSupport;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.thrift.TException;

/**
 * A Hive table as a reader that knows nothing of Lakecommit sees it: partitions listed by the metastore, the
 * visible files of each partition's location read with plain parquet-hadoop.
 */
final class TableContents {
  /** One partition (or the unpartitioned table): where it is, its parameters, its files, the ids in them. */
  record Part(String name, List<String> values, String location, Map<String, String> params, List<String> files,
      List<Long> ids, List<String> visibleDirs) {}

  private final List<Part> parts;

  private TableContents(List<Part> parts) {
    this.parts = parts;
  }

  static TableContents read(IMetaStoreClient client, Configuration conf, String db, String table) {
    try {
      Table t = client.getTable(db, table);
      List<Part> parts = new ArrayList<>();
      if (t.getPartitionKeysSize() == 0) {
        parts.add(part("", List.of(), t.getSd().getLocation(), t.getParameters(), conf));
      } else {
        List<String> names = client.listPartitionNames(db, table, (short) -1);
        for (Partition p : client.getPartitionsByNames(db, table, names)) {
          String name = HivePaths.partitionName(
              t.getPartitionKeys().stream().map(k -> k.getName()).toList(), p.getValues(),
              HivePaths.DEFAULT_PARTITION_NAME);
          parts.add(part(name, p.getValues(), p.getSd().getLocation(), p.getParameters(), conf));
        }
      }
      return new TableContents(parts);
    } catch (TException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Part part(String name, List<String> values, String location, Map<String, String> params,
      Configuration conf) {
    try {
      Path dir = new Path(location);
      FileSystem fs = dir.getFileSystem(conf);
      List<String> files = new ArrayList<>();
      List<String> dirs = new ArrayList<>();
      List<Long> ids = new ArrayList<>();
      FileStatus[] children;
      try {
        children = fs.listStatus(dir);
      } catch (FileNotFoundException e) {
        children = new FileStatus[0];
      }
      for (FileStatus child : children) {
        String childName = child.getPath().getName();
        if (HivePaths.isHidden(childName)) {
          continue;
        }
        if (child.isDirectory()) {
          dirs.add(childName);
          continue;
        }
        files.add(childName);
        ids.addAll(readIds(child.getPath(), conf));
      }
      return new Part(name, values, location, params, files, ids, dirs);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The {@code id} column of a Parquet file, read by parquet-hadoop's example reader. */
  static List<Long> readIds(Path file, Configuration conf) throws IOException {
    List<Long> ids = new ArrayList<>();
    try (ParquetReader<Group> reader =
        ParquetReader.builder(new GroupReadSupport(), file).withConf(conf).build()) {
      Group row;
      while ((row = reader.read()) != null) {
        ids.add(row.getLong("id", 0));
      }
    }
    return ids;
  }

  List<Part> parts() {
    return parts;
  }

  Part part(String name) {
    return parts.stream().filter(p -> p.name().equals(name)).findFirst()
        .orElseThrow(() -> new AssertionError("no partition " + name + " in " + names()));
  }

  List<String> names() {
    return parts.stream().map(Part::name).toList();
  }

  /** Every row's id, from every partition. */
  List<Long> ids() {
    List<Long> ids = new ArrayList<>();
    parts.forEach(p -> ids.addAll(p.ids()));
    return ids;
  }

  /** Every visible file name, from every partition (names are unique by construction). */
  List<String> files() {
    List<String> files = new ArrayList<>();
    parts.forEach(p -> files.addAll(p.files()));
    return files;
  }

  /** Visible sub-directories: a Hive reader that does not recurse fails on them. */
  List<String> visibleDirs() {
    List<String> dirs = new ArrayList<>();
    parts.forEach(p -> p.visibleDirs().forEach(d -> dirs.add(p.location() + "/" + d)));
    return dirs;
  }
}
