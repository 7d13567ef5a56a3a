package dev.lakecommit.hive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.hive_metastoreConstants;
import org.junit.jupiter.api.Test;

/**
 * What the fencing probe concludes from a metastore's answers, with a client that answers as a given server would:
 * the real servers' answers are {@code MetastoreFencingIT}'s.
 */
class TableFencingTest {

  /** A server that accepts every alter (ignores the expected value) and grants no locks. */
  @Test
  void aMetastoreWithoutCompareAndSwapOrLocksIsRefusedNamingWhy() {
    List<String> calls = new ArrayList<>();
    IMetaStoreClient client = client(calls, false, false);
    assertThatThrownBy(() -> TableFencing.probe(client, "db", "t", "thrift://hms:9083"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("Cannot fence runs of table db.t on the Hive Metastore thrift://hms:9083")
        .hasMessageContaining("accepted an alter_table with a stale expected_parameter_value")
        .hasMessageContaining("grants no table lock either (no lock tables)")
        .hasMessageContaining("schematool -initSchema");
  }

  @Test
  void aMetastoreWithoutCompareAndSwapIsFencedByItsLock() throws Exception {
    List<String> calls = new ArrayList<>();
    assertThat(TableFencing.probe(client(calls, false, true), "db", "t", "thrift://hms:9083"))
        .isEqualTo(TableFencing.TABLE_LOCK);
    assertThat(calls).containsSubsequence("lock", "alter_table_with_environmentContext", "unlock");
  }

  @Test
  void aMetastoreThatRefusesTheStaleSwapAndAppliesTheCurrentOneIsTrusted() throws Exception {
    List<String> calls = new ArrayList<>();
    assertThat(TableFencing.probe(client(calls, true, false), "db", "t", "thrift://hms:9083"))
        .isEqualTo(TableFencing.COMPARE_AND_SWAP);
    assertThat(calls.stream().filter("alter_table_with_environmentContext"::equals)).hasSize(2);
  }

  /** A metastore lost in the middle of the probe is an outage to retry, not a verdict on its compare-and-swap. */
  @Test
  void aLostConnectionIsNoAnswer() {
    IMetaStoreClient answering = client(new ArrayList<>(), true, true);
    IMetaStoreClient client = (IMetaStoreClient) Proxy.newProxyInstance(TableFencingTest.class.getClassLoader(),
        new Class<?>[] {IMetaStoreClient.class}, (proxy, method, args) -> {
          if (method.getName().equals("alter_table_with_environmentContext")) {
            throw new MetaException("Could not connect to meta store using any of the URIs provided. Most recent"
                + " failure: org.apache.thrift.transport.TTransportException: java.net.ConnectException");
          }
          return method.invoke(answering, args);
        });
    assertThatThrownBy(() -> TableFencing.probe(client, "db", "t", "thrift://hms:9083"))
        .isInstanceOf(MetaException.class)
        .hasMessageContaining("Could not connect to meta store");
  }

  /**
   * A client of one table whose alters check the expected value only if {@code enforces}, and whose lock calls
   * fail unless {@code locks}.
   */
  private static IMetaStoreClient client(List<String> calls, boolean enforces, boolean locks) {
    Map<String, String> params = new HashMap<>(Map.of(hive_metastoreConstants.DDL_TIME, "1000"));
    return (IMetaStoreClient) Proxy.newProxyInstance(TableFencingTest.class.getClassLoader(),
        new Class<?>[] {IMetaStoreClient.class}, (proxy, method, args) -> {
          calls.add(method.getName());
          switch (method.getName()) {
            case "getTable" -> {
              Table table = new Table();
              table.setDbName("db");
              table.setTableName("t");
              table.setParameters(new HashMap<>(params));
              return table;
            }
            case "alter_table_with_environmentContext" -> {
              Map<String, String> context = ((org.apache.hadoop.hive.metastore.api.EnvironmentContext) args[3])
                  .getProperties();
              String key = context.get(hive_metastoreConstants.EXPECTED_PARAMETER_KEY);
              if (enforces && key != null
                  && !context.get(hive_metastoreConstants.EXPECTED_PARAMETER_VALUE).equals(params.get(key))) {
                throw new MetaException(TableParameters.CONCURRENT_CHANGE + ". The parameter value for key '" + key
                    + "' differs");
              }
              params.clear();
              params.putAll(((Table) args[2]).getParameters());
              return null;
            }
            case "lock" -> {
              if (!locks) {
                throw new MetaException("no lock tables");
              }
              return new org.apache.hadoop.hive.metastore.api.LockResponse(7,
                  org.apache.hadoop.hive.metastore.api.LockState.ACQUIRED);
            }
            case "unlock" -> {
              return null;
            }
            default -> throw new UnsupportedOperationException(method.getName());
          }
        });
  }
}
