package dev.lakecommit.hive.testing;

import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * The main class of a Hive 3.1 metastore server process ({@link MetastoreProcess}): Hive's own handler and Thrift
 * processor, served on a socket bound to the loopback address (Hive 3.1's own main binds every interface and has
 * no setting against it; 4.x has {@code metastore.thrift.bind.host}). Uses only the JDK at compile time: it runs on
 * the class path of the Hive version under test, reached through reflection.
 *
 * <p>Arguments: the port. Configuration: the version's {@code metastore-site.xml} on the class path.
 */
public final class MetastoreMain {
  private MetastoreMain() {}

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    Object conf = Class.forName("org.apache.hadoop.hive.metastore.conf.MetastoreConf")
        .getMethod("newMetastoreConf").invoke(null);
    Class<?> configuration = Class.forName("org.apache.hadoop.conf.Configuration");
    Object handler = handler(conf, configuration);
    Class<?> iface = Class.forName("org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore$Iface");
    Object processor = Class.forName("org.apache.hadoop.hive.metastore.TSetIpAddressProcessor")
        .getConstructor(iface).newInstance(handler);
    Class<?> serverSocket = Class.forName("org.apache.thrift.transport.TServerSocket");
    Object socket = serverSocket.getConstructor(InetSocketAddress.class)
        .newInstance(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    Class<?> serverClass = Class.forName("org.apache.thrift.server.TThreadPoolServer");
    Class<?> argsClass = Class.forName("org.apache.thrift.server.TThreadPoolServer$Args");
    Object serverArgs = argsClass.getConstructor(Class.forName("org.apache.thrift.transport.TServerTransport"))
        .newInstance(socket);
    method(argsClass, "processor", Class.forName("org.apache.thrift.TProcessor")).invoke(serverArgs, processor);
    argsClass.getField("minWorkerThreads").setInt(serverArgs, 4);
    Object server = serverClass.getConstructor(argsClass).newInstance(serverArgs);
    System.out.println("Metastore serving on 127.0.0.1:" + port);
    System.out.flush();
    serverClass.getMethod("serve").invoke(server);
  }

  /** Hive 3.1's {@code HiveMetaStore.newRetryingHMSHandler(name, conf, local)}, package-private there. */
  private static Object handler(Object conf, Class<?> configuration) throws Exception {
    Method retrying = Class.forName("org.apache.hadoop.hive.metastore.HiveMetaStore")
        .getDeclaredMethod("newRetryingHMSHandler", String.class, configuration, boolean.class);
    retrying.setAccessible(true);
    return retrying.invoke(null, "lakecommit test metastore", conf, false);
  }

  private static Method method(Class<?> type, String name, Class<?> parameter) throws NoSuchMethodException {
    for (Class<?> c = type; c != null; c = c.getSuperclass()) {
      for (Method m : c.getDeclaredMethods()) {
        if (m.getName().equals(name) && m.getParameterCount() == 1 && m.getParameterTypes()[0] == parameter) {
          m.setAccessible(true);
          return m;
        }
      }
    }
    throw new NoSuchMethodException(type + "." + name);
  }
}
