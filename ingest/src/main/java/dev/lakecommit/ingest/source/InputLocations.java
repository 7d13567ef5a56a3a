package dev.lakecommit.ingest.source;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Paths;
import java.util.Locale;

/** The one spelling of an input location that identifies a job's input, however the user typed it. */
public final class InputLocations {
  private InputLocations() {}

  /**
   * The canonical form of an input (a file, a directory or a glob): local paths absolute and normalized
   * ({@code in/a.jsonl}, {@code ./in/a.jsonl}, {@code file:in/a.jsonl} and {@code /abs/in/a.jsonl} are one input;
   * symbolic links are not resolved); {@code s3://}, {@code s3a://} and {@code s3n://} as {@code s3://bucket/key};
   * other URIs with a lower-case scheme and host and a normalized path; without trailing slashes.
   */
  public static String canonical(String input) {
    String scheme = Storage.scheme(input);
    if (scheme.isEmpty() || scheme.equals("file")) {
      String local = input;
      if (scheme.equals("file")) {
        local = input.substring("file:".length());
        while (local.startsWith("//")) {
          local = local.substring(1);
        }
      }
      return Paths.get(local.isEmpty() ? "." : local).toAbsolutePath().normalize().toString();
    }
    String rest = input.substring(input.indexOf(':') + 1);
    if (scheme.equals("s3") || scheme.equals("s3a") || scheme.equals("s3n")) {
      String path = rest.startsWith("//") ? rest.substring(2) : rest;
      int slash = path.indexOf('/');
      String bucket = slash < 0 ? path : path.substring(0, slash);
      String key = slash < 0 ? "" : path.substring(slash + 1);
      return stripSlashes("s3://" + bucket.toLowerCase(Locale.ROOT) + "/" + key); // keys are case-sensitive
    }
    if (Storage.firstGlobChar(input) >= 0) {
      return stripSlashes(scheme + ":" + rest); // a glob need not be a valid URI ('?' is not a query here)
    }
    try {
      URI uri = new URI(input).normalize();
      String host = uri.getAuthority() == null ? "" : uri.getAuthority().toLowerCase(Locale.ROOT);
      return stripSlashes(scheme + "://" + host + (uri.getRawPath() == null ? "" : uri.getRawPath()));
    } catch (URISyntaxException e) {
      return stripSlashes(scheme + ":" + rest);
    }
  }

  private static String stripSlashes(String location) {
    String result = location;
    while (result.endsWith("/") && !result.endsWith("://")) {
      result = result.substring(0, result.length() - 1);
    }
    return result;
  }
}
