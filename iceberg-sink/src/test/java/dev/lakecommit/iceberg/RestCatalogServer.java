package dev.lakecommit.iceberg;

import java.nio.file.Path;
import java.util.Map;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

/**
 * Iceberg's own REST catalog server (its {@code RESTCatalogAdapter} and servlet) in front of a JDBC catalog on
 * SQLite, served by Jetty on 127.0.0.1 and a free port. Its multi-table commit ({@code POST
 * /v1/transactions/commit}) is one of three kinds ({@link MultiTable}).
 */
final class RestCatalogServer implements AutoCloseable {
  /** What the server does with a multi-table commit. */
  enum MultiTable {
    /** Iceberg's adapter: the tables are committed one after the other (not atomic). */
    TABLE_BY_TABLE,
    /** All tables' pointers swapped in one database transaction of the backing JDBC catalog. */
    ATOMIC,
    /** Not offered: the endpoint is missing from the server's configuration. */
    ABSENT
  }

  private final Server server;
  private final String uri;
  private final Map<String, String> backend;
  private final AtomicCommitServlet servlet;

  private RestCatalogServer(Server server, String uri, Map<String, String> backend, AtomicCommitServlet servlet) {
    this.server = server;
    this.uri = uri;
    this.backend = backend;
    this.servlet = servlet;
  }

  static RestCatalogServer start(Path dir) throws Exception {
    return start(dir, MultiTable.TABLE_BY_TABLE);
  }

  static RestCatalogServer start(Path dir, MultiTable multiTable) throws Exception {
    Map<String, String> properties = Map.of(
        "type", "jdbc",
        "uri", "jdbc:sqlite:" + dir.resolve("rest-backend.db"),
        "warehouse", dir.resolve("warehouse").toUri().toString(),
        "jdbc.schema-version", "V1");
    Catalog backend = CatalogUtil.buildIcebergCatalog("rest-backend", properties,
        new org.apache.hadoop.conf.Configuration());
    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    RESTCatalogServlet iceberg = new RESTCatalogServlet(new RESTCatalogAdapter(backend));
    AtomicCommitServlet servlet = new AtomicCommitServlet(iceberg, multiTable,
        JdbcMultiTableCommit.of("rest-backend", properties, new org.apache.iceberg.hadoop.HadoopFileIO(
            new org.apache.hadoop.conf.Configuration()), 3));
    context.addServlet(new ServletHolder(servlet), "/*");
    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    server.addConnector(connector);
    server.setHandler(context);
    server.start();
    return new RestCatalogServer(server, "http://127.0.0.1:" + connector.getLocalPort(), properties, servlet);
  }

  /** The backing JDBC catalog's properties (catalog name {@code rest-backend}): its pointers, read directly. */
  Map<String, String> backendProperties() {
    return backend;
  }

  /** Test-only: the steps of the server's atomic multi-table commits, to crash there. */
  void backendHook(JdbcMultiTableCommit.SwapHook hook) {
    servlet.backend.hook(hook);
  }

  String uri() {
    return uri;
  }

  @Override
  public void close() throws Exception {
    server.stop();
  }
}
