package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

class HiveTypesTest {

  @Test
  void hiveTypesOfIcebergTypes() {
    assertThat(HiveTypes.hiveType(Types.LongType.get())).isEqualTo("bigint");
    assertThat(HiveTypes.hiveType(Types.DecimalType.of(12, 3))).isEqualTo("decimal(12,3)");
    assertThat(HiveTypes.hiveType(Types.ListType.ofOptional(5, Types.StringType.get()))).isEqualTo("array<string>");
    assertThat(HiveTypes.hiveType(Types.MapType.ofOptional(6, 7, Types.StringType.get(), Types.DateType.get())))
        .isEqualTo("map<string,date>");
    assertThat(HiveTypes.hiveType(Types.StructType.of(
        Types.NestedField.optional(8, "A", Types.IntegerType.get()),
        Types.NestedField.optional(9, "b", Types.BinaryType.get()))))
        .isEqualTo("struct<a:int,b:binary>");
    assertThatThrownBy(() -> HiveTypes.hiveType(Types.TimeType.get()))
        .hasMessage("type time has no Hive column type");
  }

  @Test
  void matchesAsHiveComparesTypes() {
    assertThat(HiveTypes.matches(Types.IntegerType.get(), "INTEGER")).isTrue();
    assertThat(HiveTypes.matches(Types.StringType.get(), "varchar(20)")).isTrue();
    assertThat(HiveTypes.matches(Types.DecimalType.of(10, 0), "decimal")).isTrue();
    assertThat(HiveTypes.matches(Types.ListType.ofOptional(5, Types.IntegerType.get()), "array< integer >")).isTrue();
    assertThat(HiveTypes.matches(Types.LongType.get(), "int")).isFalse();
    assertThat(HiveTypes.matches(Types.TimeType.get(), "string")).isFalse();
  }

  @Test
  void icebergTypesOfPrimitiveHiveTypes() {
    assertThat(HiveTypes.icebergType("BIGINT")).contains(Types.LongType.get());
    assertThat(HiveTypes.icebergType("decimal(5, 2)")).contains(Types.DecimalType.of(5, 2));
    assertThat(HiveTypes.icebergType("char(3)")).contains(Types.StringType.get());
    assertThat(HiveTypes.icebergType("array<int>")).isEmpty();
    assertThat(HiveTypes.icebergType("smallint")).isEmpty();
  }
}
