package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;

import dev.lakecommit.staging.testing.AllTypes;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;

/** What a writer holds of a record: an equal copy sharing nothing mutable with it. */
class OpenFilesTest {

  @Test
  void aHeldCopyEqualsTheRecordAndSharesNothingMutable() {
    for (Record row : AllTypes.rows(0, 30)) {
      Record copy = (Record) OpenFiles.copyOf(AllTypes.SCHEMA.asStruct(), row);
      assertThat(copy).isEqualTo(row);
      for (String mutable : new String[] {"bin", "fx", "point", "tags", "attrs"}) {
        if (row.getField(mutable) != null) {
          assertThat(copy.getField(mutable)).as(mutable).isNotSameAs(row.getField(mutable));
        }
      }
      assertThat(OpenFiles.estimatedBytes(copy)).isGreaterThan(8L * row.size());
    }
  }
}
