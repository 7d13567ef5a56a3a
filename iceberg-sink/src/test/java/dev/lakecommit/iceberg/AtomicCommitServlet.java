package dev.lakecommit.iceberg;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.UpdateRequirement;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.rest.Endpoint;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.CommitTransactionRequestParser;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ConfigResponse;
import org.apache.iceberg.rest.responses.ConfigResponseParser;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.ErrorResponseParser;

/**
 * In front of Iceberg's REST servlet: serves the multi-table commit as the server's {@link RestCatalogServer.MultiTable}
 * kind says — Iceberg's own (table by table), atomically through the backing catalog's {@link JdbcMultiTableCommit},
 * or not at all (missing from the configuration's endpoints) — and passes every other request on.
 */
final class AtomicCommitServlet extends HttpServlet {
  private static final List<Endpoint> WITHOUT_MULTI_TABLE = List.of(Endpoint.V1_LIST_NAMESPACES,
      Endpoint.V1_LOAD_NAMESPACE, Endpoint.V1_NAMESPACE_EXISTS, Endpoint.V1_CREATE_NAMESPACE,
      Endpoint.V1_UPDATE_NAMESPACE, Endpoint.V1_DELETE_NAMESPACE, Endpoint.V1_LIST_TABLES, Endpoint.V1_LOAD_TABLE,
      Endpoint.V1_TABLE_EXISTS, Endpoint.V1_CREATE_TABLE, Endpoint.V1_UPDATE_TABLE, Endpoint.V1_DELETE_TABLE,
      Endpoint.V1_RENAME_TABLE, Endpoint.V1_REGISTER_TABLE, Endpoint.V1_REPORT_METRICS);

  private final HttpServlet iceberg;
  private final RestCatalogServer.MultiTable kind;
  final JdbcMultiTableCommit backend;

  AtomicCommitServlet(HttpServlet iceberg, RestCatalogServer.MultiTable kind, JdbcMultiTableCommit backend) {
    this.iceberg = iceberg;
    this.kind = kind;
    this.backend = backend;
  }

  @Override
  public void init() throws jakarta.servlet.ServletException {
    iceberg.init(getServletConfig());
  }

  @Override
  protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException,
      jakarta.servlet.ServletException {
    String path = request.getRequestURI();
    if (kind == RestCatalogServer.MultiTable.ABSENT && "GET".equals(request.getMethod())
        && path.endsWith("/v1/config")) {
      write(response, 200, ConfigResponseParser.toJson(ConfigResponse.builder()
          .withEndpoints(WITHOUT_MULTI_TABLE).build()));
    } else if (kind == RestCatalogServer.MultiTable.ATOMIC && "POST".equals(request.getMethod())
        && path.endsWith("/transactions/commit")) {
      String body = new String(request.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      commitAtomically(CommitTransactionRequestParser.fromJson(body), response);
    } else {
      iceberg.service(request, response);
    }
  }

  /** Every table's requirements checked and updates applied on its fresh metadata; all pointers swapped at once. */
  private void commitAtomically(CommitTransactionRequest request, HttpServletResponse response)
      throws IOException {
    Map<TableIdentifier, MultiTableCommit.TableChange> changes = new LinkedHashMap<>();
    for (UpdateTableRequest table : request.tableChanges()) {
      changes.put(table.identifier(), transaction -> {
        TableOperations ops = ((HasTableOperations) transaction.table()).operations();
        TableMetadata base = ops.current();
        for (UpdateRequirement requirement : table.requirements()) {
          requirement.validate(base);
        }
        TableMetadata.Builder builder = TableMetadata.buildFrom(base);
        for (MetadataUpdate update : table.updates()) {
          update.applyTo(builder);
        }
        ops.commit(base, builder.build());
      });
    }
    try {
      backend.commit(changes);
      response.setStatus(204);
    } catch (CommitFailedException e) {
      error(response, 409, e);
    } catch (NoSuchTableException e) {
      error(response, 404, e);
    } catch (RuntimeException | Error e) {
      // a crash inside the commit (a test's, or the database's): the client cannot know what happened
      error(response, 500, e);
    }
  }

  private static void error(HttpServletResponse response, int code, Throwable e) throws IOException {
    write(response, code, ErrorResponseParser.toJson(ErrorResponse.builder().responseCode(code)
        .withType(e.getClass().getSimpleName()).withMessage(String.valueOf(e.getMessage())).build()));
  }

  private static void write(HttpServletResponse response, int code, String json) throws IOException {
    response.setStatus(code);
    response.setContentType("application/json");
    response.getOutputStream().write(json.getBytes(StandardCharsets.UTF_8));
  }
}
