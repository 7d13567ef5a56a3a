package dev.lakecommit.hive;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaHookLoader;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.MetaStoreFilterHook;
import org.apache.hadoop.hive.metastore.RetryingMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.GetTableRequest;
import org.apache.hadoop.hive.metastore.api.GetTablesRequest;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.NoSuchObjectException;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.thrift.TApplicationException;
import org.apache.thrift.TException;

/**
 * Hive 2.3's metastore client, with table lookups that every server version answers. Hive Metastore 4.0.1 removed
 * {@code get_table} and {@code get_table_objects_by_name} from its Thrift API (HIVE-26537), which the 2.3 client
 * (and Iceberg's {@code HiveCatalog} on it) calls; their request forms, {@code get_table_req} and
 * {@code get_table_objects_by_name_req}, exist on every server since 2.3. Every other call the sink and Iceberg make
 * is on all of 2.3, 3.1 and 4.x.
 *
 * <p>Hive's client keeps its Thrift stub in a package-private field that a reconnect replaces, so the lookups read
 * it (and the configured filter hook) through reflection on each call; the fields are checked when the class loads,
 * so a Hive client without them fails at once, not at the first lookup.
 */
// Hive's RetryingMetaStoreClient proxies the interfaces the class itself names: hence IMetaStoreClient again.
public class CompatibleMetaStoreClient extends HiveMetaStoreClient implements IMetaStoreClient {
  private static final Field THRIFT = field("client");
  private static final Field FILTER_HOOK = field("filterHook");

  /** The constructor {@link RetryingMetaStoreClient} calls. */
  public CompatibleMetaStoreClient(HiveConf conf, HiveMetaHookLoader hookLoader, Boolean allowEmbedded)
      throws MetaException {
    super(conf, hookLoader, allowEmbedded);
  }

  /**
   * A client for {@code conf}'s metastore that reconnects after a broken connection as Hive's own does
   * ({@code hive.metastore.failure.retries}), and whose errors for a call the server does not know name the call
   * and the server's version.
   */
  public static IMetaStoreClient open(HiveConf conf) throws MetaException {
    IMetaStoreClient client;
    try {
      client = RetryingMetaStoreClient.getProxy(conf, table -> null, CompatibleMetaStoreClient.class.getName());
    } catch (RuntimeException e) {
      for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
        if (cause instanceof MetaException notAnswering) {
          throw notAnswering;   // Hive wraps its own "Could not connect to meta store" in a RuntimeException
        }
      }
      throw e;
    }
    return (IMetaStoreClient) Proxy.newProxyInstance(CompatibleMetaStoreClient.class.getClassLoader(),
        new Class<?>[] {IMetaStoreClient.class}, namingUnknownCalls(client, conf));
  }

  private static InvocationHandler namingUnknownCalls(IMetaStoreClient client, HiveConf conf) {
    LockHolders holders = new LockHolders(client);
    return (proxy, method, args) -> {
      try {
        return holders.after(method.getName(), args, method.invoke(client, holders.before(method.getName(), args)));
      } catch (InvocationTargetException e) {
        Throwable cause = e.getCause();
        if (cause instanceof TApplicationException unknown && isUnknownCall(unknown)) {
          MetaException named = new MetaException(String.format("The Hive Metastore at %s (server version %s) has"
              + " no Thrift call for %s: %s. Lakecommit works with Hive Metastore 2.3.10 to 4.x; see docs/hive.md,"
              + " Metastore versions", conf.getVar(HiveConf.ConfVars.METASTOREURIS), serverVersion(conf),
              method.getName(), unknown.getMessage()));
          named.initCause(unknown);
          throw named;
        }
        throw cause;
      }
    };
  }

  private static boolean isUnknownCall(TApplicationException e) {
    return e.getType() == TApplicationException.UNKNOWN_METHOD
        || e.getType() == TApplicationException.WRONG_METHOD_NAME;
  }

  /** The version the server reports (Hive 2.3 says "3.0"), asked on a connection of its own, for a message. */
  private static String serverVersion(HiveConf conf) {
    CompatibleMetaStoreClient client = null;
    try {
      client = new CompatibleMetaStoreClient(conf, null, false);
      return client.thrift().getVersion();
    } catch (TException | RuntimeException e) {
      return "unknown: " + e.getMessage();
    } finally {
      if (client != null) {
        client.close();
      }
    }
  }

  @Override
  public Table getTable(String dbName, String tableName) throws TException {
    Table table = thrift().get_table_req(new GetTableRequest(dbName, tableName)).getTable();
    return fastpath ? table : deepCopy(filterHook().filterTable(table));
  }

  @Override
  public List<Table> getTableObjectsByName(String dbName, List<String> tableNames) throws TException {
    GetTablesRequest request = new GetTablesRequest(dbName);
    request.setTblNames(tableNames);
    List<Table> tables = thrift().get_table_objects_by_name_req(request).getTables();
    if (fastpath) {
      return tables;
    }
    List<Table> copies = new ArrayList<>();
    for (Table table : filterHook().filterTables(tables)) {
      copies.add(deepCopy(table));
    }
    return copies;
  }

  @Override
  public boolean tableExists(String dbName, String tableName) throws TException {
    try {
      return getTable(dbName, tableName) != null;
    } catch (NoSuchObjectException e) {
      return false;
    }
  }

  private ThriftHiveMetastore.Iface thrift() {
    return (ThriftHiveMetastore.Iface) read(THRIFT);
  }

  private MetaStoreFilterHook filterHook() {
    return (MetaStoreFilterHook) read(FILTER_HOOK);
  }

  private Object read(Field field) {
    try {
      return field.get(this);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("Cannot read Hive's metastore client field " + field.getName(), e);
    }
  }

  private static Field field(String name) {
    try {
      Field field = HiveMetaStoreClient.class.getDeclaredField(name);
      field.setAccessible(true);
      return field;
    } catch (NoSuchFieldException e) {
      throw new ExceptionInInitializerError("This Hive metastore client (" + HiveMetaStoreClient.class
          .getProtectionDomain().getCodeSource() + ") has no field '" + name + "': Lakecommit needs Hive 2.3's");
    }
  }

  /**
   * Table locks asked through this client name their holder ({@link LockHolder}), also those of Iceberg's Hive
   * catalog ({@code MetastoreLock}, whose agent info gets the holder appended; it is hidden again in the
   * {@code show_locks} answers, where Iceberg looks for its own lock by agent info). While such a lock waits, the
   * locks of Lakecommit processes of this host that are gone are released, so that a run restarted after a SIGKILL
   * in a commit does not wait out the metastore's {@code hive.txn.timeout} (300 s by default).
   */
  private static final class LockHolders {
    private static final java.util.regex.Pattern APPENDED =
        java.util.regex.Pattern.compile("\\s+lakecommit pid=\\d+ pidns=\\S* start=-?\\d+$");
    private static final long LOOK_NANOS = java.time.Duration.ofSeconds(1).toNanos();

    private final IMetaStoreClient client;
    /** The locks asked through this client and not released: their table's database and name. */
    private final java.util.Map<Long, String[]> tables = new java.util.concurrent.ConcurrentHashMap<>();
    private final java.util.Map<Long, Long> nextLook = new java.util.concurrent.ConcurrentHashMap<>();

    LockHolders(IMetaStoreClient client) {
      this.client = client;
    }

    Object[] before(String method, Object[] args) {
      if (method.equals("lock") && args != null && args.length == 1
          && args[0] instanceof org.apache.hadoop.hive.metastore.api.LockRequest request
          && LockHolder.parse(request.getAgentInfo()).isEmpty()) {
        String agent = request.getAgentInfo();
        request.setAgentInfo((agent == null || agent.isBlank() ? "" : agent + " ") + LockHolder.self().agentInfo());
      }
      return args;
    }

    Object after(String method, Object[] args, Object result) throws TException {
      switch (method) {
        case "lock" -> {
          var request = (org.apache.hadoop.hive.metastore.api.LockRequest) args[0];
          var response = (org.apache.hadoop.hive.metastore.api.LockResponse) result;
          var components = request.getComponent();
          if (components != null && components.size() == 1 && components.get(0).getTablename() != null) {
            tables.put(response.getLockid(),
                new String[] {components.get(0).getDbname(), components.get(0).getTablename()});
          }
          return response;
        }
        case "checkLock" -> {
          var response = (org.apache.hadoop.hive.metastore.api.LockResponse) result;
          long lock = (Long) args[0];
          String[] table = tables.get(lock);
          if (response.getState() != org.apache.hadoop.hive.metastore.api.LockState.WAITING || table == null) {
            return response;
          }
          long now = System.nanoTime();
          Long next = nextLook.get(lock);
          if (next != null && now - next < 0) {
            return response;
          }
          nextLook.put(lock, now + LOOK_NANOS);
          int released;
          try {
            released = LockHolder.releaseGone(client, table[0], table[1], TableFencing.hostName(), lock);
          } catch (TException | RuntimeException e) {
            return response;   // a metastore that does not list locks: waited for as before
          }
          return released > 0 ? client.checkLock(lock) : response;
        }
        case "unlock" -> {
          tables.remove((Long) args[0]);
          nextLook.remove((Long) args[0]);
          return result;
        }
        case "showLocks" -> {
          var response = (org.apache.hadoop.hive.metastore.api.ShowLocksResponse) result;
          if (response != null && response.getLocks() != null) {
            for (var lock : response.getLocks()) {
              if (lock.getAgentInfo() != null) {
                lock.setAgentInfo(APPENDED.matcher(lock.getAgentInfo()).replaceFirst(""));
              }
            }
          }
          return response;
        }
        default -> {
          return result;
        }
      }
    }
  }
}
