package dev.lakecommit.flink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.RawType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.SmallIntType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/** The schema a table is created with for rows of a Flink row type, and that rows of the type can be written to it. */
class RowTypeSchemaTest {

  @Test
  void mapsEveryTypeNestedAndRequiredAsIcebergsFlinkConnectorDoes() {
    RowType address = RowType.of(new LogicalType[] {new VarCharType(false, 40), new SmallIntType()},
        new String[] {"city", "floor"});
    RowType rowType = RowType.of(
        new LogicalType[] {new BigIntType(false), new DecimalType(12, 2), new TimestampType(3),
            new LocalZonedTimestampType(6), address, new ArrayType(new VarCharType(VarCharType.MAX_LENGTH)),
            new MapType(new VarCharType(false, 10), new BigIntType(false))},
        new String[] {"id", "amount", "at", "at_utc", "address", "tags", "counts"});

    Schema schema = RowTypeSchema.of(rowType);

    assertThat(schema.findField("id").isRequired()).isTrue();
    assertThat(schema.findType("id")).isEqualTo(Types.LongType.get());
    assertThat(schema.findType("amount")).isEqualTo(Types.DecimalType.of(12, 2));
    assertThat(schema.findType("at")).isEqualTo(Types.TimestampType.withoutZone());
    assertThat(schema.findType("at_utc")).isEqualTo(Types.TimestampType.withZone());
    assertThat(schema.findField("address.city").isRequired()).isTrue();
    assertThat(schema.findType("address.floor")).isEqualTo(Types.IntegerType.get());
    assertThat(schema.findType("tags")).isInstanceOf(Types.ListType.class);
    assertThat(schema.findType("counts").asMapType().isValueRequired()).isTrue();
    assertThat(schema.idToName()).as("field ids are unique: 7 columns, 2 of the struct, the element, key and value")
        .hasSize(12);
    // rows of the type can be written to a table of the schema
    assertThat(RowDataRecord.of(rowType, schema, false)).isNotNull();
  }

  @Test
  void aTypeWithoutAnIcebergTypeIsRefusedNamingTheColumn() {
    RowType rowType = RowType.of(new LogicalType[] {new BigIntType(false),
        new RawType<>(Void.class, org.apache.flink.api.common.typeutils.base.VoidSerializer.INSTANCE)},
        new String[] {"id", "blob"});
    assertThatThrownBy(() -> RowTypeSchema.of(rowType)).hasMessageContaining("Column 'blob'")
        .hasMessageContaining("schemas");
  }
}
