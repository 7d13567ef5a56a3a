package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.staging.StagedFile;
import dev.lakecommit.staging.StagingManifest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiFunction;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.TypeUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Files written with field ids that the table gives to other columns by the time they are committed. A writer that
 * adds a column numbers it as the table's schema update would (the next free id); when another job adds a different
 * column first, that id is taken, and Iceberg gives this job's column the next free one at commit. Iceberg reads
 * Parquet columns by field id, so such files must never be committed as they are: they are rewritten, rows
 * unchanged, with the ids the commit's schema update gives their columns.
 *
 * <p>A rewritten file sits next to its original, named after it, the rewriting run's epoch and a digest of the ids
 * it is written with ({@code <original>-r<epoch>-<digest>.parquet}): a retry of the same run with the same table
 * schema writes the same file again, another run or another schema writes another file, and a file of a committed
 * snapshot is never written again (rewrites happen only for commits the table does not hold). The persisted
 * checkpoint keeps referring to the originals, which are deleted only once the commit is known to reference the
 * rewritten files; rewritten files are deleted only when their commit is known not to have landed.
 */
final class FieldIdRewrite {
  private static final Logger LOG = LoggerFactory.getLogger(FieldIdRewrite.class);
  private static final String PARQUET = ".parquet";

  private FieldIdRewrite() {}

  /**
   * What to commit instead of a committable, the files written for it and the files it replaces.
   *
   * @param committable the committable to commit: the given one when nothing needed a rewrite
   * @param written the rewritten files (to delete only if the commit is known not to have landed)
   * @param replaced the originals and the writers' manifests of them (to delete once the commit landed)
   */
  record Result(IcebergCommittable committable, List<String> written, List<String> replaced) {
    static Result none(IcebergCommittable committable) {
      return new Result(committable, List.of(), List.of());
    }

    boolean rewrote() {
      return !written.isEmpty();
    }
  }

  /**
   * Rewrites the committable's files whose columns the table, evolved by the commit as it is now, numbers
   * otherwise. Call only for a committable the table does not hold yet.
   *
   * @param specs the partition spec a staged file of a manifest was written for
   * @throws IllegalArgumentException naming the column, a file and both types for a type change the table cannot
   *     follow; naming the column and a file if one of its columns had its id in the table before (renamed or
   *     dropped meanwhile), or if files to rewrite come with delete files: nothing can be committed
   * @throws UncheckedIOException if a file cannot be read or written (what was written is deleted)
   */
  static Result plan(Table table, IcebergCommittable committable, long epoch,
      BiFunction<StagedFile, StagingManifest, PartitionSpec> specs) {
    SchemaChange change = SchemaChange.ofManifests(committable.manifests());
    if (change.isEmpty()) {
      return Result.none(committable);
    }
    CommitId id = committable.commitId();
    Schema evolved = change.evolve(table, id);
    Map<String, Schema> targets = new LinkedHashMap<>();
    for (String json : change.schemas()) {
      Schema written = SchemaParser.fromJson(json);
      Schema target = TypeUtil.reassignIds(written, evolved);
      if (!target.sameSchema(written)) {
        targets.put(json, target);
      }
    }
    if (targets.isEmpty()) {
      return Result.none(committable);
    }
    List<StagingManifest> manifests = new ArrayList<>();
    List<String> written = new ArrayList<>();
    List<String> replaced = new ArrayList<>();
    try {
      for (StagingManifest manifest : committable.manifests()) {
        Schema target = manifest.evolvedSchema().map(targets::get).orElse(null);
        if (target == null) {
          manifests.add(manifest);
          continue;
        }
        Schema writtenSchema = SchemaParser.fromJson(manifest.evolvedSchema().get());
        checkRewritable(table, manifest, writtenSchema, target, id);
        List<StagedFile> files = new ArrayList<>();
        for (StagedFile file : manifest.files()) {
          String location = location(file.path(), epoch, target);
          written.add(location);
          files.add(rewrite(table, file, specs.apply(file, manifest), writtenSchema, target, location));
          replaced.add(file.path());
        }
        manifest.icebergManifest().ifPresent(m -> replaced.add(m.path()));
        manifests.add(new StagingManifest(manifest.jobId(), manifest.checkpointId(), manifest.writerIndex(),
            manifest.attempt(), files, Optional.empty(), List.of(), Optional.of(SchemaParser.toJson(target))));
      }
    } catch (RuntimeException e) {
      deleteQuietly(table, written, "rewritten file of a failed rewrite");
      throw e;
    }
    LOG.info("Rewrote {} files of {} with the field ids table {} gives their columns now (another job added columns "
        + "since they were written)", written.size(), id, table.name());
    return new Result(new IcebergCommittable(id, manifests, committable.firstCheckpointId()), written, replaced);
  }

  /**
   * After a replay found the committable committed already: deletes its original files that the snapshot which
   * committed it does not reference because it references their rewrites (a crash came between that commit and
   * the deletion). Best effort; nothing else is touched, and nothing if that snapshot is gone (expired).
   */
  static void deleteReplacedAfterReplay(Table table, IcebergCommittable committable) {
    if (committable.manifests().stream().noneMatch(m -> m.evolvedSchema().isPresent())) {
      return;
    }
    try {
      deleteReplaced(table, committable);
    } catch (RuntimeException e) {
      LOG.warn("Could not look for originals of rewritten files of {} in table {} (orphan removal will find them): {}",
          committable.commitId(), table.name(), e.toString());
    }
  }

  private static void deleteReplaced(Table table, IcebergCommittable committable) {
    table.refresh();
    CommitId id = committable.commitId();
    Set<String> added = new HashSet<>();
    for (Snapshot snapshot : table.snapshots()) {
      Map<String, String> summary = snapshot.summary();
      if (id.jobId().value().equals(summary.get(CommitId.JOB_ID_KEY))
          && Long.toString(id.checkpointId()).equals(summary.get(CommitId.CHECKPOINT_ID_KEY))) {
        snapshot.addedDataFiles(table.io()).forEach(file -> added.add(name(file.location())));
      }
    }
    if (added.isEmpty()) {
      return;
    }
    List<String> replaced = new ArrayList<>();
    for (StagingManifest manifest : committable.manifests()) {
      boolean all = !manifest.files().isEmpty();
      for (StagedFile file : manifest.files()) {
        String name = name(file.path());
        String rewritePrefix = stem(name) + "-r";
        boolean rewritten = !added.contains(name) && added.stream().anyMatch(a -> a.startsWith(rewritePrefix));
        if (rewritten) {
          replaced.add(file.path());
        }
        all &= rewritten;
      }
      if (all) {
        manifest.icebergManifest().ifPresent(m -> replaced.add(m.path()));
      }
    }
    deleteQuietly(table, replaced, "original of a rewritten file");
  }

  /** Deletes what a commit replaced or what a commit that did not land wrote; warns about what stays. */
  static void deleteQuietly(Table table, List<String> paths, String what) {
    for (String path : paths) {
      try {
        table.io().deleteFile(path);
      } catch (RuntimeException e) {
        LOG.warn("Could not delete {} {} (orphan removal will): {}", what, path, e.toString());
      }
    }
  }

  /**
   * Only columns this job added move: a column whose written id the table had for the same name before was
   * renamed or dropped since, and its values must not land in a new column of the old name.
   */
  private static void checkRewritable(Table table, StagingManifest manifest, Schema written, Schema target,
      CommitId id) {
    String sample = manifest.files().isEmpty() ? "(no data files)" : manifest.files().get(0).path();
    for (Map.Entry<String, Integer> column : TypeUtil.indexByName(written.asStruct()).entrySet()) {
      Integer targetId = target.findField(column.getKey()) == null ? null
          : target.findField(column.getKey()).fieldId();
      if (targetId != null && targetId.intValue() == column.getValue()) {
        continue;
      }
      for (Schema old : table.schemas().values()) {
        if (column.getKey().equals(old.findColumnName(column.getValue()))) {
          throw new IllegalArgumentException(String.format(
              "Column '%s' had field id %s in table %s, as in the files of %s (such as %s), but has %s now: it was "
                  + "renamed or dropped by another job after they were written, so these files cannot be committed",
              column.getKey(), column.getValue(), table.name(), id, sample, targetId));
        }
      }
    }
    if (!manifest.deleteFiles().isEmpty()) {
      throw new IllegalArgumentException(String.format(
          "The files of %s (such as %s) were written with field ids that table %s now gives to other columns (another "
              + "job added columns meanwhile), and delete files cannot be rewritten: these files cannot be committed",
          id, sample, table.name()));
    }
  }

  private static StagedFile rewrite(Table table, StagedFile file, PartitionSpec spec, Schema written, Schema target,
      String location) {
    DataWriter<Record> writer;
    try {
      writer = Parquet.writeData(table.io().newOutputFile(location))
          .forTable(table)
          .schema(target)
          .withSpec(spec)
          .withPartition(spec.isUnpartitioned() ? null : file.partition(spec))
          .createWriterFunc(GenericParquetWriter::create)
          .overwrite()
          .build();
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot create " + location + " to rewrite staged file " + file.path(), e);
    }
    long rows = 0;
    try (writer;
        CloseableIterable<Record> records = Parquet.read(table.io().newInputFile(file.path()))
            .project(written)
            .createReaderFunc(fileSchema -> GenericParquetReaders.buildReader(written, fileSchema))
            .build()) {
      // The rewritten schema is the written one with other ids: same shape, so rows carry over by position.
      for (Record record : records) {
        writer.write(record);
        rows++;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot rewrite staged file " + file.path() + " to " + location, e);
    }
    if (rows != file.recordCount()) {
      throw new IllegalStateException(String.format("Staged file %s holds %s rows, but its manifest says %s",
          file.path(), rows, file.recordCount()));
    }
    DataFile rewritten = writer.toDataFile();
    return StagedFile.of(rewritten, spec);
  }

  /** {@code <original without .parquet>-r<epoch>-<digest of the ids>.parquet}, next to the original. */
  static String location(String original, long epoch, Schema target) {
    int slash = original.lastIndexOf('/');
    return original.substring(0, slash + 1) + stem(original.substring(slash + 1)) + "-r" + epoch + "-"
        + digest(SchemaParser.toJson(target)) + PARQUET;
  }

  private static String stem(String name) {
    return name.endsWith(PARQUET) ? name.substring(0, name.length() - PARQUET.length()) : name;
  }

  private static String name(String location) {
    return location.substring(location.lastIndexOf('/') + 1);
  }

  private static String digest(String text) {
    try {
      byte[] hash = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(hash, 0, 6);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
