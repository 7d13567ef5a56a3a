package dev.lakecommit.hive.testing;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TSocket;
import org.apache.thrift.transport.TTransportException;

/**
 * A Thrift server socket that also closes the connections it accepted when the server stops. A stopped
 * TThreadPoolServer otherwise keeps serving connected clients until they hang up, and a "metastore outage" would
 * not be one.
 */
final class ClientClosingServerSocket extends TServerSocket {
  private final Set<TSocket> clients = new HashSet<>();
  private boolean closing;

  ClientClosingServerSocket(InetSocketAddress bindAddress) throws TTransportException {
    super(bindAddress);
  }

  int localPort() {
    return getServerSocket().getLocalPort();
  }

  @Override
  public TSocket accept() throws TTransportException {
    TSocket client = super.accept();
    synchronized (this) {
      if (closing) {
        client.close();
        throw new TTransportException(TTransportException.NOT_OPEN, "Server is stopping");
      }
      clients.removeIf(c -> !c.isOpen());
      clients.add(client);
    }
    return client;
  }

  /** Stops accepting and closes every connection accepted so far; their worker threads then end. */
  void closeAll() {
    List<TSocket> open;
    synchronized (this) {
      closing = true;
      open = new ArrayList<>(clients);
      clients.clear();
    }
    close();
    open.forEach(TSocket::close);
  }
}
