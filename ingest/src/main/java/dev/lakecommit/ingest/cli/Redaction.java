package dev.lakecommit.ingest.cli;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/** Keeps credentials out of everything the tool prints: property values whose key looks secret are masked. */
public final class Redaction {
  private static final Pattern SECRET_KEY = Pattern.compile(
      ".*(secret|password|passwd|token|credential|access-key|access\\.key|session|private|auth).*");
  private static final Pattern SECRET_IN_URI = Pattern.compile("(?i)(password|secret|token)=[^&;\\s]*");

  private Redaction() {}

  public static boolean isSecret(String key) {
    return SECRET_KEY.matcher(key.toLowerCase(Locale.ROOT)).matches();
  }

  /** A copy of the properties, sorted, with secret values replaced by {@code ****}. */
  public static Map<String, String> redact(Map<String, String> properties) {
    Map<String, String> redacted = new TreeMap<>();
    properties.forEach((key, value) -> redacted.put(key, isSecret(key) ? "****" : redactText(value)));
    return redacted;
  }

  /** Masks {@code password=...}-style parts of a URI or message. */
  public static String redactText(String text) {
    return text == null ? null : SECRET_IN_URI.matcher(text).replaceAll("$1=****");
  }
}
