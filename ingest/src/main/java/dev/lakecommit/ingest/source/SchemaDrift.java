package dev.lakecommit.ingest.source;

import dev.lakecommit.iceberg.TypeWidening;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;

/**
 * What a scan of every input record ({@link FileSource#scan()}) found about the input's top-level columns: where
 * each first appears, the columns the source schema lacks (with the type their values suggest), the columns whose
 * files hold a wider type than the schema's, and type changes that no reader can follow.
 */
public final class SchemaDrift {
  private static final String OPTION = "--add-new-columns";

  /** A top-level input column, its type, and the first place it appears (line 0: in the file's own schema). */
  public record Column(String name, Type type, String file, long line, boolean lineBased) {
    /** {@code /in/b.jsonl line 15001}, or {@code the schema of /in/c.parquet}. */
    public String where() {
      return line == 0 ? "the schema of " + file : file + (lineBased ? " line " : " record ") + line;
    }
  }

  private final Schema source;
  private final Map<String, Column> seen;
  private final List<Column> added;
  private final List<Column> nestedAdded;
  private final Map<String, Column> widened;
  private final List<String> conflicts;
  private final Map<String, Column> nestedSeen;

  SchemaDrift(Schema source, Map<String, Column> seen, List<Column> added, List<Column> nestedAdded,
      Map<String, Column> widened, List<String> conflicts, Map<String, Column> nestedSeen) {
    this.nestedSeen = Collections.unmodifiableMap(new LinkedHashMap<>(nestedSeen));
    this.source = source;
    this.seen = Collections.unmodifiableMap(new LinkedHashMap<>(seen));
    this.added = List.copyOf(added);
    this.nestedAdded = List.copyOf(nestedAdded);
    this.widened = Collections.unmodifiableMap(new LinkedHashMap<>(widened));
    this.conflicts = List.copyOf(conflicts);
  }

  /** Where a column first appears in the input, if it does. */
  public Optional<Column> column(String name) {
    return Optional.ofNullable(seen.get(name));
  }

  /** Columns of the input that the source schema lacks, in order of first appearance. */
  public List<Column> added() {
    return added;
  }

  /**
   * Fields inside struct columns of the source schema that the source schema lacks, by dotted path
   * ({@code address.zip}), in order of first appearance, with the type their values suggest.
   */
  public List<Column> nestedAdded() {
    return nestedAdded;
  }

  /** Columns whose type some file widens (int to long, float to double), by name, with the wider type. */
  public Map<String, Column> widened() {
    return widened;
  }

  /** Type changes between files that no reader can follow; each names the column and the files. */
  public List<String> conflicts() {
    return conflicts;
  }

  /** The source schema with the widened types and the added columns (optional, after the others). */
  public Schema inputSchema() {
    List<Types.NestedField> fields = new ArrayList<>();
    for (Types.NestedField field : source.columns()) {
      Column wider = widened.get(field.name());
      fields.add(wider == null ? field
          : Types.NestedField.of(field.fieldId(), field.isOptional(), field.name(), wider.type(), field.doc()));
    }
    int[] id = {1 + source.highestFieldId()};
    TypeUtil.NextID next = () -> id[0]++;
    for (Column column : nestedAdded) {
      String[] path = column.name().split("\\.");
      for (int i = 0; i < fields.size(); i++) {
        Types.NestedField field = fields.get(i);
        if (field.name().equals(path[0]) && field.type().isStructType()) {
          fields.set(i, Types.NestedField.of(field.fieldId(), field.isOptional(), field.name(),
              withField(field.type().asStructType(), path, 1, column.type(), next), field.doc()));
        }
      }
    }
    for (Column column : added) {
      Type type = TypeUtil.assignFreshIds(column.type(), next);
      fields.add(Types.NestedField.optional(next.get(), column.name(), type));
    }
    return TypeUtil.assignIncreasingFreshIds(new Schema(fields));
  }

  /**
   * {@code struct} with an optional field {@code path[at..]} of {@code type} added, its ids (and its type's) from
   * {@code next}.
   */
  private static Types.StructType withField(Types.StructType struct, String[] path, int at, Type type,
      TypeUtil.NextID next) {
    List<Types.NestedField> fields = new ArrayList<>(struct.fields());
    if (at == path.length - 1) {
      if (struct.field(path[at]) == null) {
        Type fresh = TypeUtil.assignFreshIds(type, next);
        fields.add(Types.NestedField.optional(next.get(), path[at], fresh));
      }
      return Types.StructType.of(fields);
    }
    for (int i = 0; i < fields.size(); i++) {
      Types.NestedField field = fields.get(i);
      if (field.name().equals(path[at]) && field.type().isStructType()) {
        fields.set(i, Types.NestedField.of(field.fieldId(), field.isOptional(), field.name(),
            withField(field.type().asStructType(), path, at + 1, type, next), field.doc()));
      }
    }
    return Types.StructType.of(fields);
  }

  /**
   * Fields inside struct columns that the input has and {@code table} lacks, named by dotted path, or the first
   * such as a refusal naming column, file and line if {@code evolve} is off.
   */
  private void checkNested(Schema table, boolean evolve, String tableName, String hint) {
    for (Column column : nestedAdded) {
      String parent = column.name().substring(0, column.name().indexOf('.'));
      if (table.findField(column.name()) != null || table.findField(parent) == null
          || !table.findField(parent).type().isStructType()) {
        continue;
      }
      if (!evolve) {
        throw new IllegalArgumentException("Input field '" + column.name() + "' (first in " + column.where()
            + ") is not in struct column '" + parent + "' of table " + tableName + hint);
      }
    }
  }

  /**
   * The schema to read the input with, for a table that holds {@code table} (null: a table this run creates, which
   * gets every input column). A column the table lacks, or a type the table must widen (int to long, float to
   * double, a wider decimal), is allowed only with {@code evolve}; an input column narrower than the table's reads
   * as the table's type.
   *
   * @throws IllegalArgumentException naming the column, the file and line where it first appears, and what to do
   */
  public Schema plan(Schema table, boolean evolve, String tableName) {
    if (!conflicts.isEmpty()) {
      throw new IllegalArgumentException(conflicts.get(0) + (conflicts.size() > 1 ? " (and " + (conflicts.size() - 1)
          + " more type change(s))" : ""));
    }
    Schema input = inputSchema();
    if (table == null) {
      return input;
    }
    checkNested(table, evolve, tableName, "; rerun with " + OPTION + " to add it as an optional field (nothing was "
        + "written)");
    List<Types.NestedField> fields = new ArrayList<>();
    for (Types.NestedField field : input.columns()) {
      Types.NestedField existing = table.findField(field.name());
      String where = column(field.name()).map(c -> " (first in " + c.where() + ")").orElse("");
      if (existing == null) {
        if (!evolve) {
          throw new IllegalArgumentException("Input column '" + field.name() + "'" + where + " is not in table "
              + tableName + "; rerun with " + OPTION + " to add it as an optional column (nothing was written)");
        }
        fields.add(field);
      } else if (sameShape(field.type(), existing.type())) {
        fields.add(field);
      } else if (evolve && field.type().isStructType() && existing.type().isStructType()
          && extends_(existing.type().asStructType(), field.type().asStructType())) {
        fields.add(field); // the table's struct and the input's new fields in it: TableSetup adds them
      } else if (TypeWidening.widens(field.type(), existing.type())) {
        fields.add(Types.NestedField.of(field.fieldId(), field.isOptional(), field.name(), existing.type()));
      } else if (TypeWidening.widens(existing.type(), field.type())) {
        if (!evolve) {
          throw new IllegalArgumentException("Column '" + field.name() + "' is " + existing.type() + " in table "
              + tableName + " but " + field.type() + " in the input" + where + "; rerun with " + OPTION
              + " to widen it (nothing was written)");
        }
        fields.add(field);
      } else {
        throw new IllegalArgumentException("Column '" + field.name() + "' is " + existing.type() + " in table "
            + tableName + " but " + field.type() + " in the input" + where + ", and a table can only widen int to "
            + "long, float to double or a decimal's precision; give --schema with the table's type for '"
            + field.name() + "', or write to another table (nothing was written)");
      }
    }
    return TypeUtil.assignIncreasingFreshIds(new Schema(fields));
  }

  /**
   * Refuses input fields inside struct columns that a Hive table's struct columns lack (Hive's struct columns are
   * not evolved), naming the first such field and the file and line where it first appears; also a field that the
   * inference sample already held (then the sink would refuse the column without saying where).
   *
   * @param hiveTypes the table's data columns and their Hive types ({@code struct<city:string>})
   * @throws IllegalArgumentException naming the field, the file and line, and what to do
   */
  public void checkHiveStructs(Map<String, String> hiveTypes, String tableName) {
    for (Types.NestedField field : inputSchema().columns()) {
      String type = hiveTypes.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase(field.name()))
          .map(Map.Entry::getValue).findFirst().orElse(null);
      if (type != null && field.type().isStructType()) {
        checkHiveStruct(field.type().asStructType(), type, field.name(), tableName);
      }
    }
  }

  private void checkHiveStruct(Types.StructType input, String hiveType, String path, String tableName) {
    Map<String, String> table = hiveStructFields(hiveType);
    if (table == null) {
      return; // not a struct in the table: the sink names the type change
    }
    for (Types.NestedField field : input.fields()) {
      String nested = path + "." + field.name();
      String type = table.get(field.name().toLowerCase(java.util.Locale.ROOT));
      if (type == null) {
        Column first = nestedSeen.get(nested);
        if (first == null) {
          first = nestedAdded.stream().filter(c -> c.name().equals(nested)).findFirst().orElse(null);
        }
        throw new IllegalArgumentException("Input field '" + nested + "'" + (first == null ? ""
            : " (first in " + first.where() + ")") + " is not in its struct column of table " + tableName
            + "; a Hive table's struct columns are not evolved (give --schema without the field to leave it out, "
            + "or write to a new table; nothing was written)");
      }
      if (field.type().isStructType()) {
        checkHiveStruct(field.type().asStructType(), type, nested, tableName);
      }
    }
  }

  /** The fields of a Hive struct type by lower-case name with their Hive types; null if it is no struct. */
  static Map<String, String> hiveStructFields(String hiveType) {
    String type = hiveType.trim();
    if (!type.toLowerCase(java.util.Locale.ROOT).startsWith("struct<") || !type.endsWith(">")) {
      return null;
    }
    String inner = type.substring("struct<".length(), type.length() - 1);
    Map<String, String> fields = new LinkedHashMap<>();
    int depth = 0;
    int start = 0;
    for (int i = 0; i <= inner.length(); i++) {
      char c = i < inner.length() ? inner.charAt(i) : ',';
      if (c == '<' || c == '(') {
        depth++;
      } else if (c == '>' || c == ')') {
        depth--;
      } else if (c == ',' && depth == 0) {
        String part = inner.substring(start, i);
        int colon = part.indexOf(':');
        if (colon > 0) {
          fields.put(part.substring(0, colon).trim().toLowerCase(java.util.Locale.ROOT),
              part.substring(colon + 1).trim());
        }
        start = i + 1;
      }
    }
    return fields;
  }

  /**
   * The schema to read the input with, for a table whose columns are known by name only (a Hive table: names in
   * any case; null for a table this run creates): a column the table lacks is allowed only with {@code evolve}.
   * Types are checked by the sink.
   *
   * @throws IllegalArgumentException naming the column, the file and line where it first appears, and what to do
   */
  public Schema planByName(java.util.Collection<String> tableColumns, boolean evolve, String tableName) {
    if (!conflicts.isEmpty()) {
      throw new IllegalArgumentException(conflicts.get(0));
    }
    Schema input = inputSchema();
    if (tableColumns != null && !nestedAdded.isEmpty()) {
      Column first = nestedAdded.get(0);
      throw new IllegalArgumentException("Input field '" + first.name() + "' (first in " + first.where() + ") is "
          + "not in its struct column of table " + tableName + "; a Hive table's struct columns are not evolved "
          + "(give --schema without the field to leave it out, or write to a new table; nothing was written)");
    }
    if (tableColumns == null || evolve) {
      return input;
    }
    for (Types.NestedField field : input.columns()) {
      if (tableColumns.stream().noneMatch(field.name()::equalsIgnoreCase)) {
        String where = column(field.name()).map(c -> " (first in " + c.where() + ")").orElse("");
        throw new IllegalArgumentException("Input column '" + field.name() + "'" + where + " is not in table "
            + tableName + "; rerun with " + OPTION + " to add it (ALTER TABLE ADD COLUMNS; nothing was written)");
      }
    }
    return input;
  }

  /**
   * Whether {@code input} is {@code table} with fields added (at the end of a struct, at any depth): every field
   * of the table's struct in the same order, name and shape.
   */
  private static boolean extends_(Types.StructType table, Types.StructType input) {
    List<Types.NestedField> ft = table.fields();
    List<Types.NestedField> fi = input.fields();
    if (fi.size() < ft.size()) {
      return false;
    }
    for (int i = 0; i < ft.size(); i++) {
      Type a = ft.get(i).type();
      Type b = fi.get(i).type();
      boolean same = ft.get(i).name().equals(fi.get(i).name()) && (sameShape(a, b)
          || (a.isStructType() && b.isStructType() && extends_(a.asStructType(), b.asStructType())));
      if (!same) {
        return false;
      }
    }
    return true;
  }

  /** Types equal but for field ids ({@link TypeWidening#sameShape}). */
  static boolean sameShape(Type a, Type b) {
    return TypeWidening.sameShape(a, b);
  }
}
