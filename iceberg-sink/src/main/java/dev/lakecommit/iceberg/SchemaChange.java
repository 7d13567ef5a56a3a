package dev.lakecommit.iceberg;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.staging.StagingManifest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.UpdateSchema;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The schema evolution a commit carries: the schemas its files were written with when they added columns to the
 * table's or widened its types ({@code StagingManifest.evolvedSchema}), one per distinct schema of its writers.
 * Applied inside the commit's transaction, before the files are added, to the table as that attempt finds it, so
 * that no table state has the new columns without the data or the data without the columns; a retry after a
 * conflict applies it again to the refreshed table. Immutable.
 */
final class SchemaChange {
  private static final Logger LOG = LoggerFactory.getLogger(SchemaChange.class);

  static final SchemaChange NONE = new SchemaChange(List.of(), List.of());

  private final List<String> schemas;
  /** For each written schema, one file written with it (for messages). */
  private final List<String> sampleFiles;

  private SchemaChange(List<String> schemas, List<String> sampleFiles) {
    this.schemas = List.copyOf(schemas);
    this.sampleFiles = List.copyOf(sampleFiles);
  }

  /** The distinct schemas the manifests' files were written with, each with one of its files. */
  static SchemaChange ofManifests(List<StagingManifest> manifests) {
    Map<String, String> distinct = new LinkedHashMap<>();
    for (StagingManifest manifest : manifests) {
      manifest.evolvedSchema().ifPresent(json -> distinct.putIfAbsent(json,
          (manifest.files().isEmpty() ? manifest.deleteFiles() : manifest.files()).get(0).path()));
    }
    return distinct.isEmpty() ? NONE
        : new SchemaChange(new ArrayList<>(distinct.keySet()), new ArrayList<>(distinct.values()));
  }

  boolean isEmpty() {
    return schemas.isEmpty();
  }

  /**
   * Adds to the transaction's table what the written schemas have and it lacks (optional columns and struct
   * fields, at any depth) and widens the types they widen, in one schema update committed to the transaction.
   * A column that is there already with the written type (added by another writer or job), or with a type that
   * reads the written one, is left as it is. Then every written column must have, in the evolved table, the field
   * id the files were written with: files whose ids now name other columns are never committed.
   *
   * @throws IllegalArgumentException naming the column if the table's type of it neither equals, widens nor is
   *     widened to the written type: the files of this commit cannot be committed
   * @throws StaleFieldIdsException naming the column if its field id in the evolved table differs from the files'
   *     (the table's schema changed after the commit planned its files, see {@link FieldIdRewrite}): nothing is
   *     committed, a new attempt plans again
   */
  void applyTo(Transaction txn, CommitId id, String table) {
    if (schemas.isEmpty()) {
      return;
    }
    Schema current = txn.table().schema();
    List<Change> changes = changes(current, id, table);
    // A transaction takes its next operation only after the last one committed: no update unless one is needed.
    UpdateSchema update = changes.isEmpty() ? null : txn.updateSchema();
    changes.forEach(change -> change.apply().accept(update));
    Schema evolved = update == null ? current : update.apply();
    for (String json : schemas) {
      Map<String, Integer> ids = TypeUtil.indexByName(evolved.asStruct());
      TypeUtil.indexByName(SchemaParser.fromJson(json).asStruct()).forEach((name, fieldId) -> {
        Integer tableId = ids.get(name);
        if (tableId == null || tableId.intValue() != fieldId) {
          throw new StaleFieldIdsException(String.format(
              "Column '%s' has field id %s in table %s, but the files of %s were written with field id %s for it: "
                  + "the table's schema changed after the commit planned them", name, tableId, table, id, fieldId));
        }
      });
    }
    if (update != null) {
      update.commit();
      LOG.info("Evolving table {} in the commit of {}", table, id);
    }
  }

  /**
   * The table's schema as this change would evolve it now, with the field ids Iceberg would give the added columns;
   * nothing is committed.
   *
   * @throws IllegalArgumentException naming the column, a file and both types for a type change the table cannot
   *     follow
   */
  Schema evolve(Table table, CommitId id) {
    if (schemas.isEmpty()) {
      return table.schema();
    }
    List<Change> changes = changes(table.schema(), id, table.name());
    if (changes.isEmpty()) {
      return table.schema();
    }
    UpdateSchema update = table.updateSchema();
    changes.forEach(change -> change.apply().accept(update));
    return update.apply();
  }

  /** The written schemas, Iceberg JSON. */
  List<String> schemas() {
    return schemas;
  }

  /** The changes the written schemas need of {@code current}, in the order to apply them. */
  private List<Change> changes(Schema current, CommitId id, String table) {
    Map<String, Change> changes = new LinkedHashMap<>();
    for (int i = 0; i < schemas.size(); i++) {
      Schema schema = SchemaParser.fromJson(schemas.get(i));
      evolve(current.asStruct(), schema.asStruct(), null, changes, id, table, sampleFiles.get(i));
    }
    // Added fields get their ids in the order they are added: the order the sink's schema update added them
    // (TableSetup.writeSchema: top-level columns, then nested fields), which is the order of the written ids.
    return changes.values().stream().sorted(java.util.Comparator.comparingInt(Change::writtenId)).toList();
  }

  /** Collects the changes by column path: each path once, however many written schemas need it. */
  private static void evolve(Types.StructType table, Types.StructType written, String parent,
      Map<String, Change> changes, CommitId id, String tableName, String sampleFile) {
    for (Types.NestedField field : written.fields()) {
      String path = parent == null ? field.name() : parent + "." + field.name();
      Types.NestedField existing = table.field(field.name());
      if (existing == null) {
        changes.putIfAbsent(path, new Change(field.fieldId(),
            update -> update.addColumn(parent, field.name(), field.type(), field.doc())));
      } else if (TypeWidening.sameShape(field.type(), existing.type())
          || TypeWidening.widens(field.type(), existing.type())) {
        continue;
      } else if (TypeWidening.widens(existing.type(), field.type())) {
        changes.putIfAbsent(path, new Change(field.fieldId(),
            update -> update.updateColumn(path, field.type().asPrimitiveType())));
      } else if (field.type().isStructType() && existing.type().isStructType()) {
        evolve(existing.type().asStructType(), field.type().asStructType(), path, changes, id, tableName,
            sampleFile);
      } else {
        throw new IllegalArgumentException(String.format(
            "Column '%s' is %s in table %s, but the files of %s (such as %s) were written with %s for it: a type "
                + "change the table cannot follow (only int to long, float to double and a wider decimal are "
                + "applied); nothing of %s is committed", path, existing.type(), tableName, id, sampleFile,
            field.type(), id));
      }
    }
  }

  /** One column's change, with the field id the files were written with for it. */
  private record Change(int writtenId, Consumer<UpdateSchema> apply) {}

  @Override
  public String toString() {
    return "SchemaChange(" + schemas.size() + " written schemas)";
  }
}
