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
 * SQLite, served by Jetty on 127.0.0.1 and a free port.
 */
final class RestCatalogServer implements AutoCloseable {
  private final Server server;
  private final String uri;

  private RestCatalogServer(Server server, String uri) {
    this.server = server;
    this.uri = uri;
  }

  static RestCatalogServer start(Path dir) throws Exception {
    Catalog backend = CatalogUtil.buildIcebergCatalog("rest-backend", Map.of(
        "type", "jdbc",
        "uri", "jdbc:sqlite:" + dir.resolve("rest-backend.db"),
        "warehouse", dir.resolve("warehouse").toUri().toString(),
        "jdbc.schema-version", "V1"), new org.apache.hadoop.conf.Configuration());
    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTCatalogAdapter(backend))), "/*");
    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    server.addConnector(connector);
    server.setHandler(context);
    server.start();
    return new RestCatalogServer(server, "http://127.0.0.1:" + connector.getLocalPort());
  }

  String uri() {
    return uri;
  }

  @Override
  public void close() throws Exception {
    server.stop();
  }
}
