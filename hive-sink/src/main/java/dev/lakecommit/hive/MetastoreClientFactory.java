package dev.lakecommit.hive;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.MetaException;

/** Opens metastore clients; tests wrap them (counting or failing calls). */
@FunctionalInterface
interface MetastoreClientFactory {

  IMetaStoreClient open(HiveConf conf) throws MetaException;

  /**
   * Hive's own retrying client ({@link CompatibleMetaStoreClient#open}): it reconnects when a connection breaks
   * (transport failures are its to retry, {@code hive.metastore.failure.retries}); commit-level outcomes are the
   * committer's. It looks tables up in the form every metastore version answers. A metastore that does not answer
   * is a {@link MetaException}, as the interface declares.
   */
  MetastoreClientFactory RETRYING = CompatibleMetaStoreClient::open;
}
