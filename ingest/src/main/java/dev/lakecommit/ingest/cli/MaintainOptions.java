package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.Sink;
import dev.lakecommit.core.runtime.JobListener;
import dev.lakecommit.hive.HiveMaintenance;
import dev.lakecommit.hive.HiveSink;
import dev.lakecommit.iceberg.IcebergMaintenance;
import dev.lakecommit.iceberg.IcebergSink;
import java.time.Instant;
import picocli.CommandLine.Option;

/**
 * {@code ingest}'s in-job maintenance (see {@link PeriodicMaintenance}); off by default. Iceberg: compaction of
 * the files of all but the newest N checkpoints, manifest rewrite, and with {@code --maintain-retain-last} snapshot
 * expiry. Hive: merging each partition's small files of all but the newest N checkpoints, and deleting what the
 * previous round's merges replaced.
 */
final class MaintainOptions {
  @Option(names = "--maintain-every", paramLabel = "N",
      description = "After every N commits, on a thread of its own: Iceberg: compact the files of all but the newest N "
          + "checkpoints and rewrite small manifests; Hive: merge each partition's small files of all but the newest "
          + "N checkpoints (default: 0, off; see also 'lakecommit maintain').")
  int every;

  @Option(names = "--maintain-retain-last", paramLabel = "N",
      description = "With --maintain-every (Iceberg): also expire snapshots beyond the newest N in each round.")
  Integer retainLast;

  /** Refuses settings that do not fit, before anything is read or created. */
  void check(TableOptions table) {
    if (every < 0) {
      throw new IllegalArgumentException("Invalid option --maintain-every: " + every + " (must be >= 0)");
    }
    if (retainLast != null && (every == 0 || retainLast < 1)) {
      throw new IllegalArgumentException(every == 0 ? "--maintain-retain-last needs --maintain-every"
          : "Invalid option --maintain-retain-last: " + retainLast + " (must be >= 1)");
    }
    if (retainLast != null && table.target() != TableKind.ICEBERG) {
      throw new IllegalArgumentException("--maintain-retain-last expires Iceberg snapshots; a Hive table has none");
    }
  }

  /** Maintenance around the job's listener, to close after the job; null when off. */
  PeriodicMaintenance around(Sink<?, ?, ?> sink, JobListener listener) {
    if (every == 0) {
      return null;
    }
    if (sink instanceof IcebergSink<?> iceberg) {
      IcebergMaintenance maintenance = iceberg.maintenance();
      return new PeriodicMaintenance(maintenance.toString(), () -> {
        // one locked round: manifest rewrite, compaction of all but the newest N checkpoints, optional expiry
        dev.lakecommit.iceberg.MaintenanceOptions.Builder options =
            dev.lakecommit.iceberg.MaintenanceOptions.builder().keepCheckpoints(every);
        if (retainLast != null) {
          options.expire(retainLast, java.time.Duration.ZERO);
        }
        return maintenance.round(options.build(), "lakecommit ingest, " + dev.lakecommit.core.RunEpoch.thisProcess())
            .ran();
      }, every, listener);
    }
    if (sink instanceof HiveSink<?> hive) {
      HiveMaintenance maintenance = hive.maintenance();
      HiveMaintenance.Options options = HiveMaintenance.Options.defaults().keepCheckpoints(every);
      return new PeriodicMaintenance(maintenance.toString(), () -> {
        maintenance.merge(options);
        return true;
      }, every, listener);
    }
    return null;
  }
}
