package dev.lakecommit.flink;

import static org.apache.iceberg.types.Types.NestedField.optional;
import static org.apache.iceberg.types.Types.NestedField.required;

import dev.lakecommit.iceberg.IcebergSinkConfig;
import java.util.List;
import java.util.Map;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.iceberg.Schema;
import org.apache.iceberg.types.Types;

/** The README's minimal Flink job, verbatim; {@code IcebergFlinkSinkIT} runs it and reads the table back. */
final class ReadmeExample {
  private ReadmeExample() {}

  static void run(String warehouse) throws Exception {
    RowType rowType = RowType.of(
        new LogicalType[] {new BigIntType(false), new VarCharType(VarCharType.MAX_LENGTH)},
        new String[] {"id", "name"});
    Schema schema = new Schema(
        required(1, "id", Types.LongType.get()),
        optional(2, "name", Types.StringType.get()));

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.enableCheckpointing(10_000);                       // one table commit per checkpoint (and at the end)
    DataStream<RowData> rows = env.fromSequence(1, 1_000)
        .map(i -> (RowData) GenericRowData.of(i, StringData.fromString("user-" + i)))
        .returns(InternalTypeInfo.of(rowType));

    rows.sinkTo(LakecommitFlinkSink.forRowData(rowType)
            .iceberg(() -> IcebergSinkConfig.builder()
                .catalogProperties(Map.of("type", "hadoop", "warehouse", warehouse))
                .table("demo.users")
                .createTable(schema, List.of())
                .build())
            .jobName("users-ingest")                     // job id "demo.users-users-ingest": keep it stable
            .build())
        .uid("lakecommit-sink");
    env.execute("users-ingest");
  }
}
