package dev.lakecommit.hive;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;

/**
 * Metastore clients that count every call by method name, and can run an action before or after a call (to fail
 * or "crash" the Nth {@code alter_partitions}, or lose the answer of an {@code alter_table}).
 */
final class CountingClients implements MetastoreClientFactory {
  private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
  private volatile BiConsumer<String, Integer> before = (method, n) -> {};
  private volatile BiConsumer<String, Integer> after = (method, n) -> {};

  int calls(String method) {
    AtomicInteger count = calls.get(method);
    return count == null ? 0 : count.get();
  }

  void reset() {
    calls.clear();
  }

  /** Runs {@code action(method, nth call of it)} before each call. */
  CountingClients before(BiConsumer<String, Integer> action) {
    this.before = action;
    return this;
  }

  /** Runs {@code action(method, nth call of it)} after each call returned (to "lose" its answer, say). */
  CountingClients after(BiConsumer<String, Integer> action) {
    this.after = action;
    return this;
  }

  @Override
  public IMetaStoreClient open(org.apache.hadoop.hive.conf.HiveConf conf)
      throws org.apache.hadoop.hive.metastore.api.MetaException {
    IMetaStoreClient client = MetastoreClientFactory.RETRYING.open(conf);
    InvocationHandler handler = (proxy, method, args) -> {
      int n = calls.computeIfAbsent(method.getName(), m -> new AtomicInteger()).incrementAndGet();
      before.accept(method.getName(), n);
      Object result;
      try {
        result = method.invoke(client, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
      after.accept(method.getName(), n);
      return result;
    };
    return (IMetaStoreClient) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {IMetaStoreClient.class}, handler);
  }
}
