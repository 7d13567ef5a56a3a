package dev.lakecommit.staging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.lakecommit.staging.testing.FaultInjectingS3Proxy;
import dev.lakecommit.staging.testing.FaultRule;
import dev.lakecommit.staging.testing.FaultRule.Fault;
import dev.lakecommit.staging.testing.S3TestServer;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/** The fault proxy with the real AWS SDK v2 client: signed requests pass unchanged, faults look like S3's. */
class FaultInjectingS3ProxyIT {
  private static S3TestServer s3;

  @BeforeAll
  static void start() throws Exception {
    s3 = S3TestServer.start("bucket");
  }

  @AfterAll
  static void stop() throws Exception {
    s3.close();
  }

  private static S3Client client(URI endpoint, boolean retries) {
    var builder = S3Client.builder()
        .endpointOverride(endpoint)
        .region(Region.of(S3TestServer.REGION))
        .credentialsProvider(StaticCredentialsProvider.create(
            AwsBasicCredentials.create(S3TestServer.ACCESS_KEY, S3TestServer.SECRET_KEY)))
        .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
        .httpClient(UrlConnectionHttpClient.create());
    builder.overrideConfiguration(c -> c.retryStrategy(retries
        ? AwsRetryStrategy.standardRetryStrategy().toBuilder().maxAttempts(8).build()
        : AwsRetryStrategy.doNotRetry()));
    return builder.build();
  }

  private static byte[] bytes(int size, long seed) {
    byte[] data = new byte[size];
    new Random(seed).nextBytes(data);
    return data;
  }

  @Test
  void forwardsSignedRequestsUnchanged() throws Exception {
    try (FaultInjectingS3Proxy proxy = FaultInjectingS3Proxy.start(s3, 1);
        S3Client client = client(proxy.endpoint(), false)) {
      byte[] big = bytes(3 * 1024 * 1024 + 17, 7);
      client.putObject(b -> b.bucket("bucket").key("plain/big.bin"), RequestBody.fromBytes(big));
      client.putObject(b -> b.bucket("bucket").key("plain/empty.bin"), RequestBody.empty());
      assertThat(client.getObjectAsBytes(b -> b.bucket("bucket").key("plain/big.bin")).asByteArray()).isEqualTo(big);
      assertThat(client.headObject(b -> b.bucket("bucket").key("plain/empty.bin")).contentLength()).isZero();
      assertThat(client.listObjectsV2(b -> b.bucket("bucket").prefix("plain/")).contents())
          .extracting(S3Object::key).containsExactly("plain/big.bin", "plain/empty.bin");
      client.deleteObject(b -> b.bucket("bucket").key("plain/empty.bin"));
      assertThatThrownBy(() -> client.headObject(b -> b.bucket("bucket").key("plain/empty.bin")))
          .isInstanceOf(S3Exception.class).extracting(e -> ((S3Exception) e).statusCode()).isEqualTo(404);
      assertThat(proxy.requests()).isGreaterThanOrEqualTo(7);
      assertThat(proxy.injected()).isZero();
    }
  }

  @Test
  void answersWithS3ErrorsAndResets() throws Exception {
    try (FaultInjectingS3Proxy proxy = FaultInjectingS3Proxy.start(s3, 2);
        S3Client client = client(proxy.endpoint(), false)) {
      proxy.rules(FaultRule.everyRequest(1.0, Fault.SLOW_DOWN));
      assertThatThrownBy(() -> client.putObject(b -> b.bucket("bucket").key("e/a"), RequestBody.fromString("x")))
          .isInstanceOfSatisfying(S3Exception.class, e -> {
            assertThat(e.statusCode()).isEqualTo(503);
            assertThat(e.awsErrorDetails().errorCode()).isEqualTo("SlowDown");
          });
      proxy.rules(FaultRule.everyRequest(1.0, Fault.INTERNAL_ERROR));
      assertThatThrownBy(() -> client.getObjectAsBytes(b -> b.bucket("bucket").key("e/a")))
          .isInstanceOfSatisfying(S3Exception.class, e -> {
            assertThat(e.statusCode()).isEqualTo(500);
            assertThat(e.awsErrorDetails().errorCode()).isEqualTo("InternalError");
          });
      proxy.rules(FaultRule.everyRequest(1.0, Fault.ACCESS_DENIED));
      assertThatThrownBy(() -> client.putObject(b -> b.bucket("bucket").key("e/b"), RequestBody.fromString("y")))
          .isInstanceOfSatisfying(S3Exception.class, e -> assertThat(e.awsErrorDetails().errorCode())
              .isEqualTo("AccessDenied"));
      proxy.rules(FaultRule.everyRequest(1.0, Fault.RESET));
      assertThatThrownBy(() -> client.putObject(b -> b.bucket("bucket").key("e/c"), RequestBody.fromString("z")))
          .isInstanceOf(SdkClientException.class);
      assertThat(proxy.injected(Fault.SLOW_DOWN)).isEqualTo(1);
      assertThat(proxy.injected(Fault.INTERNAL_ERROR)).isEqualTo(1);
      assertThat(proxy.injected(Fault.ACCESS_DENIED)).isEqualTo(1);
      assertThat(proxy.injected(Fault.RESET)).isEqualTo(1);

      // Nothing of the refused requests reached the server.
      proxy.rules();
      assertThat(client.listObjectsV2(b -> b.bucket("bucket").prefix("e/")).contents()).isEmpty();
    }
  }

  @Test
  void aResetAfterForwardingLosesOnlyTheAnswer() throws Exception {
    try (FaultInjectingS3Proxy proxy = FaultInjectingS3Proxy.start(s3, 3,
            FaultRule.builder().methods("PUT").faults(Fault.RESET_AFTER_FORWARD).build());
        S3Client client = client(proxy.endpoint(), false);
        S3Client direct = s3.client()) {
      assertThatThrownBy(() -> client.putObject(b -> b.bucket("bucket").key("lost-ack/a"),
          RequestBody.fromString("applied"))).isInstanceOf(SdkClientException.class);
      assertThat(direct.getObjectAsBytes(b -> b.bucket("bucket").key("lost-ack/a")).asUtf8String())
          .isEqualTo("applied");
    }
  }

  @Test
  void selectsRequestsByMethodPathAndCount() throws Exception {
    FaultRule rule = FaultRule.builder().methods("PUT").pathMatching("/bucket/sel/x-.*").skipFirst(2).maxFaults(1)
        .faults(Fault.SLOW_DOWN).build();
    try (FaultInjectingS3Proxy proxy = FaultInjectingS3Proxy.start(s3, 4, rule);
        S3Client client = client(proxy.endpoint(), false)) {
      List<Integer> failed = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        int n = i;
        String key = "sel/x-" + i;
        client.putObject(b -> b.bucket("bucket").key("sel/y-" + n), RequestBody.fromString("other"));
        try {
          client.putObject(b -> b.bucket("bucket").key(key), RequestBody.fromString("v"));
        } catch (S3Exception e) {
          failed.add(i);
        }
        client.getObjectAsBytes(b -> b.bucket("bucket").key("sel/y-" + n));
      }
      assertThat(failed).containsExactly(2);
      assertThat(rule.matched()).isEqualTo(5);
      assertThat(rule.injected()).isEqualTo(1);
    }
  }

  @Test
  void delaysRequests() throws Exception {
    try (FaultInjectingS3Proxy proxy = FaultInjectingS3Proxy.start(s3, 5,
            FaultRule.builder().methods("GET").faults(Fault.DELAY).delay(Duration.ofMillis(400)).build());
        S3Client client = client(proxy.endpoint(), false)) {
      client.putObject(b -> b.bucket("bucket").key("slow/a"), RequestBody.fromString("a"));
      long start = System.nanoTime();
      assertThat(client.getObjectAsBytes(b -> b.bucket("bucket").key("slow/a")).asUtf8String()).isEqualTo("a");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(400));
      assertThat(proxy.injected(Fault.DELAY)).isEqualTo(1);
    }
  }

  @Test
  void theSdkRetriesInjectedFaultsAndTheProxySeesTheRetries() throws Exception {
    FaultRule mixed = FaultRule.everyRequest(0.3, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR, Fault.RESET);
    try (FaultInjectingS3Proxy proxy = FaultInjectingS3Proxy.start(s3, 6, mixed);
        S3Client client = client(proxy.endpoint(), true)) {
      for (int i = 0; i < 40; i++) {
        int n = i;
        client.putObject(b -> b.bucket("bucket").key("retry/" + n), RequestBody.fromBytes(bytes(1000 + n, n)));
      }
      proxy.rules();
      for (int i = 0; i < 40; i++) {
        int n = i;
        assertThat(client.getObjectAsBytes(b -> b.bucket("bucket").key("retry/" + n)).asByteArray())
            .isEqualTo(bytes(1000 + n, n));
      }
      assertThat(proxy.injected()).isPositive();
      assertThat(proxy.injected(Fault.SLOW_DOWN) + proxy.injected(Fault.INTERNAL_ERROR)
          + proxy.injected(Fault.RESET)).isEqualTo(proxy.injected());
      // Every injected fault was followed by a retry of the SDK (none gave up: all 40 objects are there).
      assertThat(proxy.retriedRequests()).isEqualTo(proxy.injected());
    }
  }

  @Test
  void theSameSeedBreaksTheSameRequests() throws Exception {
    assertThat(faultPattern(99)).isEqualTo(faultPattern(99)).contains(true).contains(false);
  }

  private static List<Boolean> faultPattern(long seed) throws Exception {
    List<Boolean> pattern = new ArrayList<>();
    try (FaultInjectingS3Proxy proxy = FaultInjectingS3Proxy.start(s3, seed,
            FaultRule.everyRequest(0.5, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR));
        S3Client client = client(proxy.endpoint(), false)) {
      for (int i = 0; i < 20; i++) {
        try {
          client.headBucket(b -> b.bucket("bucket"));
          pattern.add(false);
        } catch (S3Exception e) {
          pattern.add(true);
        }
      }
    }
    return pattern;
  }
}
