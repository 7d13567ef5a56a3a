package dev.lakecommit.hive;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.RetryingMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.MetaException;

/** Opens metastore clients; tests wrap them (counting or failing calls). */
@FunctionalInterface
interface MetastoreClientFactory {

  IMetaStoreClient open(HiveConf conf) throws MetaException;

  /**
   * Hive's own retrying client: it reconnects when a connection breaks (transport failures are its to retry,
   * {@code hive.metastore.failure.retries}); commit-level outcomes are the committer's. A metastore that does not
   * answer is a {@link MetaException}, as the interface declares: Hive 2.3 wraps the client's own ("Could not connect
   * to meta store ...") in a {@code RuntimeException}, which callers took for a bug, not an outage (a Flink
   * committer failed its task instead of leaving its commits pending).
   */
  MetastoreClientFactory RETRYING = conf -> {
    try {
      return RetryingMetaStoreClient.getProxy(conf, null, HiveMetaStoreClient.class.getName());
    } catch (RuntimeException e) {
      for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
        if (cause instanceof MetaException notAnswering) {
          throw notAnswering;   // the wrapper adds nothing: its cause chain ends in this
        }
      }
      throw e;
    }
  };
}
