package dev.lakecommit.ingest.source;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * A Kafka input as the tool's {@code --input} names it: {@code kafka://host:9092[,host2:9092]/topic[,topic2]} or
 * {@code kafka://host:9092/?pattern=REGEX} for every topic whose name matches.
 *
 * @param bootstrapServers {@code host:port[,host:port]}
 * @param topics the topics, empty with a pattern
 * @param pattern the topic pattern, or null
 */
public record KafkaInput(String bootstrapServers, List<String> topics, Pattern pattern) {
  public static final String SCHEME = "kafka://";

  public static boolean isKafka(String input) {
    return input != null && input.regionMatches(true, 0, SCHEME, 0, SCHEME.length());
  }

  /**
   * @throws IllegalArgumentException naming the input and what is missing
   */
  public static KafkaInput parse(String input) {
    String rest = input.substring(SCHEME.length());
    int slash = rest.indexOf('/');
    String servers = slash < 0 ? rest : rest.substring(0, slash);
    String path = slash < 0 ? "" : rest.substring(slash + 1);
    if (servers.isBlank()) {
      throw new IllegalArgumentException("Invalid Kafka input " + input + ": no broker (kafka://host:9092/topic)");
    }
    String query = null;
    int question = path.indexOf('?');
    if (question >= 0) {
      query = path.substring(question + 1);
      path = path.substring(0, question);
    }
    Pattern pattern = null;
    if (query != null) {
      for (String parameter : query.split("&")) {
        if (parameter.startsWith("pattern=")) {
          String regex = URLDecoder.decode(parameter.substring("pattern=".length()), StandardCharsets.UTF_8);
          try {
            pattern = Pattern.compile(regex);
          } catch (PatternSyntaxException e) {
            throw new IllegalArgumentException("Invalid topic pattern in " + input + ": " + e.getDescription(), e);
          }
        } else if (!parameter.isEmpty()) {
          throw new IllegalArgumentException("Unknown parameter '" + parameter + "' in Kafka input " + input
              + " (only pattern=REGEX)");
        }
      }
    }
    List<String> topics = path.isBlank() ? List.of()
        : Arrays.stream(path.split(",")).map(String::trim).filter(t -> !t.isEmpty()).toList();
    if (topics.isEmpty() == (pattern == null)) {
      throw new IllegalArgumentException("Invalid Kafka input " + input + ": name topics (kafka://host:9092/t1,t2)"
          + " or a pattern (kafka://host:9092/?pattern=REGEX), not both or neither");
    }
    for (String server : servers.split(",")) {
      URI uri = URI.create("kafka://" + server.trim());
      if (uri.getHost() == null || uri.getPort() < 0) {
        throw new IllegalArgumentException("Invalid broker '" + server + "' in Kafka input " + input
            + " (host:port)");
      }
    }
    return new KafkaInput(servers, topics, pattern);
  }

  /** Whether a topic is one this input reads. */
  boolean reads(String topic) {
    return pattern != null ? pattern.matcher(topic).matches() : topics.contains(topic);
  }

  @Override
  public String toString() {
    return SCHEME + bootstrapServers + "/" + (pattern != null ? "?pattern=" + pattern.pattern()
        : String.join(",", topics));
  }
}
