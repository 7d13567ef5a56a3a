package dev.lakecommit.staging;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import javax.xml.stream.XMLStreamException;
import org.apache.iceberg.aws.AwsClientProperties;
import org.apache.iceberg.aws.HttpClientProperties;
import org.apache.iceberg.aws.s3.S3FileIOAwsClientFactory;
import org.apache.iceberg.aws.s3.S3FileIOProperties;
import org.apache.iceberg.util.PropertyUtil;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.retries.StandardRetryStrategy;
import software.amazon.awssdk.retries.api.BackoffStrategy;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;

/**
 * The S3 clients of Iceberg's {@code S3FileIO}, built as Iceberg builds them but with a retry strategy that rides
 * through an outage of the store: connection errors, resets and 5xx back off exponentially as throttling does.
 *
 * <p>Iceberg 1.11 applies {@code s3.retry.min-wait-ms} / {@code s3.retry.max-wait-ms} to throttling only; every
 * other retryable failure backs off from 100 ms, so an unreachable store fails a request after about 1–3 s. Here
 * every retryable failure uses the same exponential backoff with half jitter, and the SDK's retry token bucket is
 * off (a long outage would drain it, and then nothing is retried at all). The SDK client stays the one owner of
 * storage retries (DESIGN rule 8): nothing above it retries a storage call.
 *
 * <p>Used through {@code s3.client-factory-impl}; {@link #withDefaults} puts it into FileIO properties that name
 * no client factory. Settings (Iceberg's keys; defaults here):
 *
 * <ul>
 *   <li>{@code s3.retry.num-retries}: {@value #DEFAULT_RETRIES} retries after the first attempt;
 *   <li>{@code s3.retry.min-wait-ms}: {@value #DEFAULT_MIN_WAIT_MS} — the first backoff, doubling per retry;
 *   <li>{@code s3.retry.max-wait-ms}: {@value #DEFAULT_MAX_WAIT_MS} — the longest one.
 * </ul>
 *
 * With the defaults, retry {@code n} waits between half and all of {@code min(2 s x 2^(n-1), 20 s)}: a request
 * keeps trying for at least 75 s and at most 150 s of backoff (plus its attempts' own time) before it fails.
 */
public final class S3Clients implements S3FileIOAwsClientFactory {
  /** Iceberg's property that names an {@code S3FileIOAwsClientFactory}. */
  public static final String CLIENT_FACTORY_KEY = S3FileIOProperties.CLIENT_FACTORY;
  public static final int DEFAULT_RETRIES = 10;
  public static final long DEFAULT_MIN_WAIT_MS = 2_000;
  public static final long DEFAULT_MAX_WAIT_MS = 20_000;

  private Map<String, String> properties = Map.of();
  private S3FileIOProperties s3Properties = new S3FileIOProperties();
  private HttpClientProperties httpProperties = new HttpClientProperties();
  private AwsClientProperties clientProperties = new AwsClientProperties();

  /** Properties with this factory as {@code s3.client-factory-impl}, unless they name a factory already. */
  public static Map<String, String> withDefaults(Map<String, String> fileIOProperties) {
    if (fileIOProperties.containsKey(CLIENT_FACTORY_KEY)) {
      return fileIOProperties;
    }
    Map<String, String> props = new HashMap<>(fileIOProperties);
    props.put(CLIENT_FACTORY_KEY, S3Clients.class.getName());
    return props;
  }

  @Override
  public void initialize(Map<String, String> props) {
    this.properties = Map.copyOf(props);
    this.s3Properties = new S3FileIOProperties(props);
    this.httpProperties = new HttpClientProperties(props);
    this.clientProperties = new AwsClientProperties(props);
  }

  /** The retry strategy of the {@code s3.retry.*} properties (defaults above). */
  public static StandardRetryStrategy retryStrategy(Map<String, String> props) {
    int retries = PropertyUtil.propertyAsInt(props, S3FileIOProperties.S3_RETRY_NUM_RETRIES, DEFAULT_RETRIES);
    long minWait = PropertyUtil.propertyAsLong(props, S3FileIOProperties.S3_RETRY_MIN_WAIT_MS, DEFAULT_MIN_WAIT_MS);
    long maxWait = PropertyUtil.propertyAsLong(props, S3FileIOProperties.S3_RETRY_MAX_WAIT_MS, DEFAULT_MAX_WAIT_MS);
    if (retries < 0 || minWait <= 0 || maxWait < minWait) {
      throw new IllegalArgumentException(String.format(
          "Invalid S3 retry settings: %s=%s, %s=%s, %s=%s (need retries >= 0 and 0 < min-wait <= max-wait)",
          S3FileIOProperties.S3_RETRY_NUM_RETRIES, retries, S3FileIOProperties.S3_RETRY_MIN_WAIT_MS, minWait,
          S3FileIOProperties.S3_RETRY_MAX_WAIT_MS, maxWait));
    }
    BackoffStrategy backoff = backoff(minWait, maxWait);
    return AwsRetryStrategy.standardRetryStrategy().toBuilder()
        .maxAttempts(retries + 1)
        .backoffStrategy(backoff)
        .throttlingBackoffStrategy(backoff)
        .circuitBreakerEnabled(false)
        // A reset while reading an error body surfaces as an XML parse error (aws-sdk-java-v2#5442).
        .retryOnRootCauseInstanceOf(XMLStreamException.class)
        .build();
  }

  /** Retry {@code n} waits between half and all of {@code min(minWait x 2^(n-1), maxWait)}. */
  static BackoffStrategy backoff(long minWaitMs, long maxWaitMs) {
    return BackoffStrategy.exponentialDelayHalfJitter(Duration.ofMillis(minWaitMs), Duration.ofMillis(maxWaitMs));
  }

  @Override
  public S3Client s3() {
    return S3Client.builder()
        .applyMutation(clientProperties::applyClientRegionConfiguration)
        .applyMutation(httpProperties::applyHttpClientConfigurations)
        .applyMutation(s3Properties::applyEndpointConfigurations)
        .applyMutation(s3Properties::applyServiceConfigurations)
        .applyMutation(builder -> s3Properties.applyCredentialConfigurations(clientProperties, builder))
        .applyMutation(s3Properties::applySignerConfiguration)
        .applyMutation(s3Properties::applyS3AccessGrantsConfigurations)
        .applyMutation(s3Properties::applyUserAgentConfigurations)
        .applyMutation(this::applyRetries)
        .build();
  }

  private void applyRetries(S3ClientBuilder builder) {
    ClientOverrideConfiguration.Builder config = builder.overrideConfiguration() == null
        ? ClientOverrideConfiguration.builder() : builder.overrideConfiguration().toBuilder();
    builder.overrideConfiguration(config.retryStrategy(retryStrategy(properties)).build());
  }

  @Override
  public S3AsyncClient s3Async() {
    // S3FileIO uses the async client for its analytics stream only; Iceberg's own construction.
    return S3AsyncClient.builder()
        .applyMutation(clientProperties::applyClientRegionConfiguration)
        .applyMutation(clientProperties::applyClientCredentialConfigurations)
        .applyMutation(s3Properties::applyEndpointConfigurations)
        .applyMutation(builder -> builder.overrideConfiguration(
            ClientOverrideConfiguration.builder().retryStrategy(retryStrategy(properties)).build()))
        .build();
  }
}
