package dev.lakecommit.spark;

import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;

/**
 * A Spark driver for {@link DriverKillIT}, run as a child JVM: streams the input files into an Iceberg table through
 * {@code foreachBatch}, one file per micro-batch, until the input is consumed, then prints {@code DONE}.
 *
 * <p>Arguments: input directory, checkpoint location, Hadoop catalog warehouse, table.
 */
public final class StreamingDriverMain {
  private StreamingDriverMain() {}

  public static void main(String[] args) throws Exception {
    Path input = Path.of(args[0]);
    Path checkpoint = Path.of(args[1]);
    Path warehouse = Path.of(args[2]);
    String table = args[3];
    SparkSession spark = SparkTestSupport.session("StreamingDriverMain", warehouse, Map.of());
    StreamingQuery query = StreamingTestSupport.stream(spark, input).writeStream()
        .foreachBatch(LakecommitSpark.foreachBatch()
            .iceberg(StreamingTestSupport.config(StreamingTestSupport.catalog(warehouse), table)))
        .option("checkpointLocation", checkpoint.toString())
        .start();
    System.out.println("STARTED " + query.id());
    query.processAllAvailable();
    query.stop();
    spark.stop();
    System.out.println("DONE");
    System.exit(0);
  }
}
