package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.Sink;
import dev.lakecommit.core.runtime.JobListener;
import dev.lakecommit.iceberg.IcebergSink;
import picocli.CommandLine.Option;

/** {@code ingest}'s in-job maintenance of an Iceberg table (see {@link PeriodicMaintenance}); off by default. */
final class MaintainOptions {
  @Option(names = "--maintain-every", paramLabel = "N",
      description = "Iceberg: after every N commits, compact the files of all but the newest N checkpoints and "
          + "rewrite small manifests, on a thread of its own (default: 0, off; see also 'lakecommit maintain').")
  int every;

  @Option(names = "--maintain-retain-last", paramLabel = "N",
      description = "With --maintain-every: also expire snapshots beyond the newest N in each round.")
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
    if (every > 0 && table.target() != TableKind.ICEBERG) {
      throw new IllegalArgumentException("--maintain-every works on Iceberg tables only for now");
    }
  }

  /** Maintenance around the job's listener, to close after the job; null when off. */
  PeriodicMaintenance around(Sink<?, ?, ?> sink, JobListener listener) {
    if (every == 0 || !(sink instanceof IcebergSink<?> iceberg)) {
      return null;
    }
    return new PeriodicMaintenance(iceberg.maintenance(), every, retainLast, listener);
  }
}
