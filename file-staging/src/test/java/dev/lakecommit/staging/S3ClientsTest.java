package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.retries.api.BackoffStrategy;

/** The retry settings every S3FileIO of the sinks and the tool gets by default. */
class S3ClientsTest {
  @Test
  void theDefaultsBackOffAtLeast75AndAtMost150SecondsBeforeARequestFails() {
    assertThat(S3Clients.retryStrategy(Map.of()).maxAttempts()).isEqualTo(11);
    BackoffStrategy backoff = S3Clients.backoff(S3Clients.DEFAULT_MIN_WAIT_MS, S3Clients.DEFAULT_MAX_WAIT_MS);
    long least = 0;
    long most = 0;
    for (int retry = 1; retry <= S3Clients.DEFAULT_RETRIES; retry++) {
      long nominal = Math.min(2_000L << (retry - 1), 20_000L);
      for (int sample = 0; sample < 200; sample++) {
        long delay = backoff.computeDelay(retry + 1).toMillis(); // attempt retry + 1
        assertThat(delay).as("retry %s", retry).isBetween(nominal / 2, nominal);
      }
      least += nominal / 2;
      most += nominal;
    }
    assertThat(Duration.ofMillis(least)).isEqualTo(Duration.ofSeconds(75));
    assertThat(Duration.ofMillis(most)).isEqualTo(Duration.ofSeconds(150));
  }

  @Test
  void settingsComeFromIcebergsKeysAndAreChecked() {
    assertThat(S3Clients.retryStrategy(Map.of("s3.retry.num-retries", "3")).maxAttempts()).isEqualTo(4);
    assertThatThrownBy(() -> S3Clients.retryStrategy(Map.of("s3.retry.min-wait-ms", "5000",
        "s3.retry.max-wait-ms", "1000")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("s3.retry.min-wait-ms=5000");
  }

  @Test
  void aNamedClientFactoryIsKept() {
    assertThat(S3Clients.withDefaults(Map.of())).containsEntry("s3.client-factory-impl", S3Clients.class.getName());
    assertThat(S3Clients.withDefaults(Map.of("s3.client-factory-impl", "x.Y")))
        .containsEntry("s3.client-factory-impl", "x.Y");
  }
}
