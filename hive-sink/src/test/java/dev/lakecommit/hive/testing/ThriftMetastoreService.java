package dev.lakecommit.hive.testing;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.FutureTask;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.RawStore;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.server.ServerContext;
import org.apache.thrift.server.TServerEventHandler;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TTransport;

/**
 * One run of a {@link HiveMetastoreServer}: a TThreadPoolServer on 127.0.0.1 around a fresh {@code HMSHandler},
 * from {@link #start} to {@link #stop}.
 */
final class ThriftMetastoreService {
  private static final long STOP_TIMEOUT_MS = 15_000;
  private static final long START_TIMEOUT_MS = 10_000;
  private static final int MAX_CONNECTIONS = 256;

  private final ClientClosingServerSocket socket;
  private final TThreadPoolServer server;
  private final Thread acceptor;

  private ThriftMetastoreService(ClientClosingServerSocket socket, TThreadPoolServer server, Thread acceptor) {
    this.socket = socket;
    this.server = server;
    this.acceptor = acceptor;
  }

  /**
   * Initialises a handler on {@code conf} (creating the metastore schema on first use) and serves it on {@code
   * port} (0: a free one). Returns once the server accepts calls.
   */
  static ThriftMetastoreService start(HiveConf conf, int port) throws Exception {
    IHMSHandler handler = newHandler(conf);
    ClientClosingServerSocket socket =
        new ClientClosingServerSocket(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    int boundPort = socket.localPort();
    TThreadPoolServer server;
    try {
      server =
          new TThreadPoolServer(
              new TThreadPoolServer.Args(socket)
                  .processor(new TSetIpAddressProcessor<>(handler))
                  .protocolFactory(new TBinaryProtocol.Factory())
                  .executorService(workers(boundPort))
                  .stopTimeoutVal((int) STOP_TIMEOUT_MS)
                  .stopTimeoutUnit(TimeUnit.MILLISECONDS));
    } catch (Exception e) {
      socket.close();
      throw e;
    }
    server.setServerEventHandler(new RawStoreCleanup());
    Thread acceptor = new Thread(server::serve, "hms-" + boundPort + "-acceptor");
    acceptor.setDaemon(true);
    ThriftMetastoreService service = new ThriftMetastoreService(socket, server, acceptor);
    acceptor.start();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_TIMEOUT_MS);
    while (!server.isServing()) {
      if (!acceptor.isAlive() || System.nanoTime() > deadline) {
        service.stop();
        throw new IllegalStateException("Thrift server on port " + boundPort + " did not start serving");
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
    }
    return service;
  }

  int port() {
    return socket.localPort();
  }

  /** Closes the listening socket and every client connection; returns once the server's threads have ended. */
  void stop() {
    server.stop();
    socket.closeAll();
    try {
      acceptor.join(STOP_TIMEOUT_MS + 5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while stopping the metastore", e);
    }
    if (acceptor.isAlive()) {
      throw new IllegalStateException("Metastore Thrift server did not stop within " + STOP_TIMEOUT_MS + " ms");
    }
  }

  /**
   * Creates and initialises the handler on a thread of its own. HMSHandler keeps a RawStore and a Configuration
   * per thread and does not reliably forget them; left on the caller's thread, they would make the next server in
   * this JVM talk to this server's database.
   */
  private static IHMSHandler newHandler(HiveConf conf) throws Exception {
    FutureTask<IHMSHandler> init =
        new FutureTask<>(
            () -> {
              HiveMetaStore.HMSHandler base = new HiveMetaStore.HMSHandler("lakecommit test metastore", conf, false);
              // The retrying proxy initialises the handler, and retries calls whose database access fails
              // (hive.hmshandler.retry.*), e.g. while PostgreSQL is away.
              IHMSHandler handler = HiveMetaStore.newRetryingHMSHandler(base, conf, false);
              base.shutdown(); // this thread's RawStore; every worker thread opens its own
              return handler;
            });
    Thread thread = new Thread(init, "hms-init");
    thread.start();
    try {
      return init.get();
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
    }
  }

  private static ExecutorService workers(int port) {
    AtomicInteger count = new AtomicInteger();
    return new ThreadPoolExecutor(
        0,
        MAX_CONNECTIONS,
        60,
        TimeUnit.SECONDS,
        new SynchronousQueue<>(),
        runnable -> {
          Thread thread = new Thread(runnable, "hms-" + port + "-worker-" + count.incrementAndGet());
          thread.setDaemon(true);
          return thread;
        });
  }

  /** Releases a worker thread's metastore database session when its client disconnects. */
  private static final class RawStoreCleanup implements TServerEventHandler {
    @Override
    public void preServe() {}

    @Override
    public ServerContext createContext(TProtocol input, TProtocol output) {
      return null;
    }

    @Override
    public void deleteContext(ServerContext context, TProtocol input, TProtocol output) {
      RawStore store = HiveMetaStore.HMSHandler.getRawStore();
      if (store != null) {
        try {
          store.shutdown();
        } finally {
          HiveMetaStore.HMSHandler.removeRawStore();
        }
      }
    }

    @Override
    public void processContext(ServerContext context, TTransport input, TTransport output) {}
  }
}
