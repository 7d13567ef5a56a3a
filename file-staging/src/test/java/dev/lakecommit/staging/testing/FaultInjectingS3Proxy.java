package dev.lakecommit.staging.testing;

import dev.lakecommit.staging.testing.FaultRule.Fault;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A loopback HTTP proxy in front of an {@link S3TestServer} that breaks requests on purpose: per request (by
 * method, path, count or probability — see {@link FaultRule}) it answers {@code 503 SlowDown} or {@code 500
 * InternalError} with S3's XML error body, resets the connection, or delays the request. Every other request is
 * forwarded byte for byte — head, body and the {@code Host} header the client signed — so SigV4 signatures still
 * verify at the server (S3Proxy recomputes the signature from the headers it receives and does not compare the
 * {@code Host} header with its own address).
 *
 * <p>It counts what it injected and, from the AWS SDK v2's {@code amz-sdk-request: attempt=N} header, how many
 * requests were retries: the retries of the storage client, seen on the wire.
 *
 * <pre>{@code
 * try (S3TestServer s3 = S3TestServer.start("lake");
 *     FaultInjectingS3Proxy proxy = FaultInjectingS3Proxy.start(s3, 42,
 *         FaultRule.everyRequest(0.1, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR, Fault.RESET))) {
 *   io.initialize(proxy.s3FileIOProperties());     // the server's properties, endpoint = the proxy
 *   ...
 *   proxy.injected();                              // faults injected so far
 *   proxy.rules();                                 // no faults from now on
 * }
 * }</pre>
 */
public final class FaultInjectingS3Proxy implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(FaultInjectingS3Proxy.class);
  private static final Pattern SDK_ATTEMPT = Pattern.compile("attempt=(\\d+)");

  private final S3TestServer server;
  private final ServerSocket listener;
  private final Random random;
  private final ExecutorService connections;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private final Map<Fault, AtomicLong> injected = new EnumMap<>(Fault.class);
  private final AtomicLong requests = new AtomicLong();
  private final AtomicLong retriedRequests = new AtomicLong();
  private final AtomicLong copyRequests = new AtomicLong();
  private volatile List<FaultRule> rules;
  private volatile boolean closed;

  private FaultInjectingS3Proxy(S3TestServer server, long seed, List<FaultRule> rules) throws IOException {
    this.server = server;
    this.random = new Random(seed);
    this.rules = List.copyOf(rules);
    for (Fault fault : Fault.values()) {
      injected.put(fault, new AtomicLong());
    }
    this.listener = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
    this.connections = Executors.newCachedThreadPool(r -> {
      Thread thread = new Thread(r, "s3-fault-proxy-" + listener.getLocalPort());
      thread.setDaemon(true);
      return thread;
    });
    connections.execute(this::accept);
  }

  /** Starts a proxy on a free loopback port in front of {@code server}, with a seeded random and rules. */
  public static FaultInjectingS3Proxy start(S3TestServer server, long seed, FaultRule... rules) throws IOException {
    return new FaultInjectingS3Proxy(server, seed, List.of(rules));
  }

  /** Replaces the rules; requests in flight finish under the old ones. No rules: a plain proxy. */
  public void rules(FaultRule... newRules) {
    this.rules = List.of(newRules);
  }

  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + listener.getLocalPort());
  }

  /** The server's {@link S3TestServer#s3FileIOProperties()}, reaching it through this proxy. */
  public Map<String, String> s3FileIOProperties() {
    Map<String, String> props = new HashMap<>(server.s3FileIOProperties());
    props.put("s3.endpoint", endpoint().toString());
    return props;
  }

  /** The server's {@link S3TestServer#s3aConfiguration()}, reaching it through this proxy. */
  public Configuration s3aConfiguration() {
    Configuration conf = server.s3aConfiguration();
    conf.set("fs.s3a.endpoint", endpoint().toString());
    return conf;
  }

  /** Requests received (faulted or not). */
  public long requests() {
    return requests.get();
  }

  /** Server-side copies asked for ({@code PUT} with {@code x-amz-copy-source}: CopyObject, UploadPartCopy). */
  public long copyRequests() {
    return copyRequests.get();
  }

  /** Faults injected, of every kind but {@link Fault#DELAY}. */
  public long injected() {
    return injected.entrySet().stream().filter(e -> e.getKey() != Fault.DELAY)
        .mapToLong(e -> e.getValue().get()).sum();
  }

  public long injected(Fault fault) {
    return injected.get(fault).get();
  }

  /** Requests that the AWS SDK marked as a retry ({@code amz-sdk-request: attempt=N}, N > 1). */
  public long retriedRequests() {
    return retriedRequests.get();
  }

  @Override
  public void close() throws IOException {
    closed = true;
    listener.close();
    for (Socket socket : open) {
      closeQuietly(socket);
    }
    connections.shutdownNow();
  }

  @Override
  public String toString() {
    return "FaultInjectingS3Proxy{" + endpoint() + " -> " + server.endpoint() + ", requests " + requests
        + ", injected " + injected + ", SDK retries " + retriedRequests + "}";
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = listener.accept();
        open.add(client);
        connections.execute(() -> serve(client));
      } catch (IOException e) {
        if (!closed) {
          LOG.warn("Fault proxy {} stopped accepting: {}", endpoint(), e.toString());
        }
        return;
      }
    }
  }

  /** Serves one client connection, request by request (clients do not pipeline). */
  private void serve(Socket client) {
    Socket upstream = null;
    try {
      InputStream clientIn = new BufferedInputStream(client.getInputStream());
      OutputStream clientOut = new BufferedOutputStream(client.getOutputStream());
      InputStream upstreamIn = null;
      OutputStream upstreamOut = null;
      while (!closed) {
        HttpExchange.Head request = HttpExchange.readHead(clientIn);
        if (request == null) {
          return;
        }
        requests.incrementAndGet();
        countRetry(request);
        if (request.header("x-amz-copy-source") != null) {
          copyRequests.incrementAndGet();
        }
        FaultRule rule = null;
        Fault fault = null;
        for (FaultRule candidate : rules) {
          if (candidate.matches(request.method(), request.path())) {
            rule = candidate;
            fault = candidate.decide(random);
            break;
          }
        }
        if (fault != null) {
          injected.get(fault).incrementAndGet();
          LOG.debug("Injecting {} into {} {}", fault, request.method(), request.path());
        }
        if (fault == Fault.RESET) {
          reset(client);
          return;
        }
        if (fault != null && fault.answersWithError()) {
          if (!request.expectsContinue()) {
            HttpExchange.copyRequestBody(request, clientIn, null);
          }
          answerError(clientOut, request, fault);
          return;
        }
        if (fault == Fault.DELAY) {
          Thread.sleep(rule.delay().toMillis());
        }
        if (upstream == null) {
          upstream = new Socket();
          upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.endpoint().getPort()));
          open.add(upstream);
          upstreamIn = new BufferedInputStream(upstream.getInputStream());
          upstreamOut = new BufferedOutputStream(upstream.getOutputStream());
        }
        boolean reusable = forward(request, clientIn, clientOut, upstreamIn, upstreamOut,
            fault == Fault.RESET_AFTER_FORWARD);
        if (fault == Fault.RESET_AFTER_FORWARD) {
          reset(client);
          return;
        }
        if (!reusable) {
          return;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException | RuntimeException e) {
      LOG.debug("Fault proxy connection ended: {}", e.toString());
    } finally {
      closeQuietly(client);
      if (upstream != null) {
        closeQuietly(upstream);
      }
    }
  }

  /**
   * Relays one request and its response (with a {@code 100 Continue} in between when the client asked for it).
   *
   * @return whether both connections can carry another request
   */
  private static boolean forward(HttpExchange.Head request, InputStream clientIn, OutputStream clientOut,
      InputStream upstreamIn, OutputStream upstreamOut, boolean dropResponse) throws IOException {
    upstreamOut.write(request.raw());
    upstreamOut.flush();
    HttpExchange.Head response;
    if (request.expectsContinue()) {
      response = HttpExchange.readHead(upstreamIn);
      if (response == null) {
        throw new IOException("S3 server closed the connection before answering " + request.startLine());
      }
      if (response.status() == 100) {
        if (!dropResponse) {
          clientOut.write(response.raw());
          clientOut.flush();
        }
        HttpExchange.copyRequestBody(request, clientIn, upstreamOut);
        upstreamOut.flush();
        response = HttpExchange.readHead(upstreamIn);
      } else {
        // The server answered before the body: the client will not send it on this connection.
        relay(request, response, upstreamIn, clientOut, dropResponse);
        return false;
      }
    } else {
      HttpExchange.copyRequestBody(request, clientIn, upstreamOut);
      upstreamOut.flush();
      response = HttpExchange.readHead(upstreamIn);
    }
    if (response == null) {
      throw new IOException("S3 server closed the connection before answering " + request.startLine());
    }
    return relay(request, response, upstreamIn, clientOut, dropResponse) && !response.closes()
        && !request.closes();
  }

  private static boolean relay(HttpExchange.Head request, HttpExchange.Head response, InputStream upstreamIn,
      OutputStream clientOut, boolean drop) throws IOException {
    OutputStream out = drop ? OutputStream.nullOutputStream() : clientOut;
    out.write(response.raw());
    boolean complete = HttpExchange.copyResponseBody(request.method(), response, upstreamIn, out);
    out.flush();
    return complete;
  }

  private void answerError(OutputStream out, HttpExchange.Head request, Fault fault) throws IOException {
    String requestId = "lakecommit-fault-" + requests.get();
    String body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + fault.code + "</Code><Message>"
        + fault.message + "</Message><Resource>" + request.path() + "</Resource><RequestId>" + requestId
        + "</RequestId><HostId>" + requestId + "</HostId></Error>";
    byte[] bytes = "HEAD".equals(request.method()) ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
    String reason = switch (fault.status) {
      case 503 -> "Slow Down";
      case 500 -> "Internal Server Error";
      case 403 -> "Forbidden";
      default -> "Error";
    };
    String head = "HTTP/1.1 " + fault.status + " " + reason + "\r\n"
        + "Content-Type: application/xml\r\n"
        + "Content-Length: " + bytes.length + "\r\n"
        + "x-amz-request-id: " + requestId + "\r\n"
        + "Connection: close\r\n\r\n";
    out.write(head.getBytes(StandardCharsets.ISO_8859_1));
    out.write(bytes);
    out.flush();
  }

  private void countRetry(HttpExchange.Head request) {
    String sdkRequest = request.header("amz-sdk-request");
    if (sdkRequest != null) {
      Matcher attempt = SDK_ATTEMPT.matcher(sdkRequest);
      if (attempt.find() && Integer.parseInt(attempt.group(1)) > 1) {
        retriedRequests.incrementAndGet();
      }
    }
  }

  /** Closes with SO_LINGER 0: the peer sees a TCP reset, not an orderly end. */
  private void reset(Socket socket) {
    try {
      socket.setSoLinger(true, 0);
    } catch (IOException e) {
      LOG.debug("Cannot set SO_LINGER: {}", e.toString());
    }
    closeQuietly(socket);
  }

  private void closeQuietly(Socket socket) {
    open.remove(socket);
    try {
      socket.close();
    } catch (IOException e) {
      LOG.debug("Closing a proxy socket: {}", e.toString());
    }
  }
}
