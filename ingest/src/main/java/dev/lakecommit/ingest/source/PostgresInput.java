package dev.lakecommit.ingest.source;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * A PostgreSQL database whose changes the tool reads directly (change data capture through Debezium's embedded
 * engine), as {@code --input} names it: {@code postgresql://USER@HOST[:PORT]/DATABASE?tables=SCHEMA.TABLE[,...]},
 * with optional {@code slot=NAME} and {@code publication=NAME} parameters. The password is never part of the input
 * (it would show in process lists and in the job's identity): it comes from {@code PGPASSWORD} or {@code -E
 * database.password=...}.
 *
 * @param user the database user (needs the REPLICATION attribute, and SELECT on the tables for the snapshot)
 * @param host the server's host
 * @param port the server's port (5432 by default)
 * @param database the database
 * @param tables the captured tables, as {@code schema.table}
 * @param slot the replication slot's name, or null for the job's own ({@link #slotFor})
 * @param publication the publication's name, or null for the job's own
 */
public record PostgresInput(String user, String host, int port, String database, List<String> tables, String slot,
    String publication) {
  public static final String SCHEME = "postgresql://";
  private static final Pattern NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
  private static final Pattern TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]*\\.[A-Za-z_][A-Za-z0-9_$]*");

  public static boolean isPostgres(String input) {
    return input != null && (input.regionMatches(true, 0, SCHEME, 0, SCHEME.length())
        || input.regionMatches(true, 0, "postgres://", 0, "postgres://".length()));
  }

  /**
   * @throws IllegalArgumentException naming the input and what is wrong with it
   */
  public static PostgresInput parse(String input) {
    URI uri;
    try {
      uri = new URI(input);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("Invalid PostgreSQL input " + input + ": " + e.getReason(), e);
    }
    String example = " (postgresql://USER@HOST:5432/DATABASE?tables=public.orders,public.order_lines)";
    String userInfo = uri.getRawUserInfo();
    if (userInfo == null || userInfo.isBlank()) {
      throw new IllegalArgumentException("Invalid PostgreSQL input " + input + ": no user" + example);
    }
    if (userInfo.contains(":")) {
      throw new IllegalArgumentException("Invalid PostgreSQL input: it holds a password; give the password in the "
          + "PGPASSWORD environment variable or with -E database.password=... instead");
    }
    if (uri.getHost() == null) {
      throw new IllegalArgumentException("Invalid PostgreSQL input " + input + ": no host" + example);
    }
    String path = uri.getPath() == null ? "" : uri.getPath().replaceFirst("^/", "");
    if (path.isBlank() || path.contains("/")) {
      throw new IllegalArgumentException("Invalid PostgreSQL input " + input + ": name one database" + example);
    }
    List<String> tables = new ArrayList<>();
    String slot = null;
    String publication = null;
    String query = uri.getRawQuery();
    for (String parameter : query == null ? new String[0] : query.split("&")) {
      int equals = parameter.indexOf('=');
      String key = equals < 0 ? parameter : parameter.substring(0, equals);
      String value = equals < 0 ? "" : URLDecoder.decode(parameter.substring(equals + 1), StandardCharsets.UTF_8);
      switch (key) {
        case "tables" -> {
          for (String table : value.split(",")) {
            if (!table.isBlank()) {
              if (!TABLE.matcher(table.strip()).matches()) {
                throw new IllegalArgumentException("Invalid table '" + table + "' in PostgreSQL input " + input
                    + ": give schema.table, e.g. public.orders");
              }
              tables.add(table.strip());
            }
          }
        }
        case "slot" -> slot = name(value, "slot", input);
        case "publication" -> publication = name(value, "publication", input);
        case "" -> { }
        default -> throw new IllegalArgumentException("Unknown parameter '" + key + "' in PostgreSQL input " + input
            + " (tables, slot, publication)");
      }
    }
    if (tables.isEmpty()) {
      throw new IllegalArgumentException("Invalid PostgreSQL input " + input + ": name the tables to capture"
          + example);
    }
    return new PostgresInput(URLDecoder.decode(userInfo, StandardCharsets.UTF_8), uri.getHost(),
        uri.getPort() < 0 ? 5432 : uri.getPort(), path, List.copyOf(new LinkedHashSet<>(tables)), slot, publication);
  }

  private static String name(String value, String what, String input) {
    if (!NAME.matcher(value).matches()) {
      throw new IllegalArgumentException("Invalid " + what + " '" + value + "' in PostgreSQL input " + input
          + ": lower-case letters, digits and _, at most 63");
    }
    return value;
  }

  /** The replication slot of a job: the input's, else one named after the job (a slot name is at most 63 bytes). */
  public String slotFor(String jobId) {
    return slot != null ? slot : ownName("lakecommit_", jobId);
  }

  /** The publication of a job: the input's, else one named after the job. */
  public String publicationFor(String jobId) {
    return publication != null ? publication : ownName("lakecommit_", jobId);
  }

  private static String ownName(String prefix, String jobId) {
    String name = prefix + jobId.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_");
    if (name.length() > 63) {
      String hash = Integer.toHexString(jobId.hashCode());
      name = name.substring(0, 63 - hash.length() - 1) + "_" + hash;
    }
    return name;
  }

  /** The JDBC URL of the database. */
  public String jdbcUrl() {
    return "jdbc:postgresql://" + host + ":" + port + "/" + database;
  }

  @Override
  public String toString() {
    return SCHEME + user + "@" + host + ":" + port + "/" + database + " (tables " + String.join(", ", tables) + ")";
  }
}
