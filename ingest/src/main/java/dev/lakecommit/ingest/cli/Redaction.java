package dev.lakecommit.ingest.cli;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/** Keeps credentials out of everything the tool prints: property values whose key looks secret are masked. */
public final class Redaction {
  private static final Pattern SECRET_KEY = Pattern.compile(
      ".*(secret|password|passwd|token|credential|access-key|access\\.key|session|private|auth|jaas).*");
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

  /**
   * Masks, in a message about the command line, every value given to a secret-looking key: {@code KEY=VALUE}
   * arguments and a value passed as the argument after a secret-looking key (as in {@code -C s3.secret-access-key
   * SECRET}, a space typed for {@code =}), plus {@code password=...}-style parts.
   */
  public static String maskArguments(String message, String[] args) {
    if (message == null) {
      return null;
    }
    java.util.List<String> secrets = new java.util.ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      int eq = arg.indexOf('=');
      String key = eq < 0 ? arg : arg.substring(0, eq);
      if (!isSecret(key.replaceFirst("^-+", ""))) {
        continue;
      }
      if (eq >= 0 && eq < arg.length() - 1) {
        secrets.add(arg.substring(eq + 1));
      } else if (eq < 0 && i + 1 < args.length) {
        secrets.add(args[i + 1]);
      }
    }
    String masked = message;
    for (String secret : secrets) {
      if (!secret.isEmpty()) {
        masked = masked.replace(secret, "****");
      }
    }
    return redactText(masked);
  }

  /** Masks {@code password=...}-style parts of a URI or message. */
  public static String redactText(String text) {
    return text == null ? null : SECRET_IN_URI.matcher(text).replaceAll("$1=****");
  }
}
