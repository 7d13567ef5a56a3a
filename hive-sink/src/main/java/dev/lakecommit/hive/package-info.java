/**
 * Exactly-once, checkpoint-keyed commits to Hive tables through a Hive Metastore: {@link dev.lakecommit.hive.HiveSink}
 * and its configuration {@link dev.lakecommit.hive.HiveSinkConfig}.
 *
 * <p>What a table looks like on storage:
 *
 * <pre>
 * &lt;table location&gt;/
 *   .lakecommit-staging/&lt;job-id&gt;/ckpt-&lt;id&gt;/...     staged files (hidden: readers skip it), until committed
 *   .lakecommit-staging/&lt;job-id&gt;/intents/intent-&lt;ckpt&gt;-e&lt;epoch&gt;.bin   a commit's intent, from before its first
 *                                                   move until its watermark is recorded (or a later run undid it)
 *   dt=2024-01-01/region=eu/                          a partition, named as Hive names it (escaped values)
 *     &lt;job&gt;-&lt;ckpt&gt;-&lt;writer&gt;-&lt;attempt&gt;-&lt;seq&gt;.parquet     committed files keep their unique staged names
 *     _SUCCESS                                        when success files are configured
 *     .lakecommit-overwrite/&lt;job-id&gt;-&lt;ckpt&gt;/         insert-overwrite: the partition's new location
 *     .lakecommit-merge/&lt;round&gt;/                      a merge of the partition's small files ({@link
 *                                                   dev.lakecommit.hive.HiveMaintenance}): its new location,
 *                                                   with lakecommit-merged-*.parquet and a manifest .lakecommit-merged
 * </pre>
 *
 * <p>The data files are Parquet as Hive writes it ({@code HiveFileFormat}): no partition columns inside (they are in
 * the path), timestamps as INT96 in UTC from the zone of the table parameter {@code lakecommit.parquet.int96.zone}
 * (default UTC, recorded in the footer as {@code writer.time.zone}), or INT64 micros with
 * {@code lakecommit.parquet.timestamp=int64-micros}; snappy unless a codec is configured or the table's
 * {@code parquet.compression} names one.
 *
 * <p>What the metastore holds: partitions with {@code numFiles}, {@code numRows}, {@code totalSize} and the
 * checkpoint of each job that last wrote them ({@code lakecommit.committed.<job-id>}), and after a merge the location
 * it replaced ({@code lakecommit.merged-from}); on the table, the per-job
 * watermark {@code lakecommit.committed.<job-id>} (written last, in every commit) and {@code lakecommit.version},
 * the counter every table change of the sink compares and swaps; the run epoch of each job
 * ({@code lakecommit.epoch.<job-id>} = {@code <epoch> <run>}, claimed by every run through that same swap, and checked
 * by every commit before its first move and before its watermark); and {@code lakecommit.table-id}, which tells the
 * table from one dropped and created again under its name.
 */
package dev.lakecommit.hive;
