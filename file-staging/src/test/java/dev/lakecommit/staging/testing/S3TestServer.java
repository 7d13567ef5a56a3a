package dev.lakecommit.staging.testing;

import java.io.IOException;
import java.net.URI;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.blobstore.BlobStore;
import org.gaul.s3proxy.blobstore.options.CreateContainerOptions;
import org.gaul.s3proxy.nio2blob.TransientNio2BlobStore;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;

/**
 * An S3-compatible server (S3Proxy over an in-memory blob store) on a free loopback port, for tests of anything
 * that reaches S3 through Iceberg's {@code S3FileIO}, Hadoop S3A or the AWS SDK. Static test credentials, path
 * style, plain HTTP. Starts in about a second; close it after the tests.
 *
 * <pre>{@code
 * try (S3TestServer s3 = S3TestServer.start("warehouse")) {
 *   S3FileIO io = new S3FileIO();
 *   io.initialize(s3.s3FileIOProperties());
 *   String root = s3.location("warehouse", "tables/t1");   // s3://warehouse/tables/t1
 * }
 * }</pre>
 */
public final class S3TestServer implements AutoCloseable {
  public static final String ACCESS_KEY = "lakecommit-test-access";
  public static final String SECRET_KEY = "lakecommit-test-secret";
  public static final String REGION = "us-east-1";

  private final S3Proxy proxy;
  private final BlobStore store;
  private final URI endpoint;

  private S3TestServer(S3Proxy proxy, BlobStore store, URI endpoint) {
    this.proxy = proxy;
    this.store = store;
    this.endpoint = endpoint;
  }

  /** Starts a server with the given buckets created, keeping objects in memory. */
  public static S3TestServer start(String... buckets) throws Exception {
    return start(new TransientNio2BlobStore(), buckets);
  }

  /** Starts a server that keeps its objects in files under {@code dir} (for sizes that do not fit in memory). */
  public static S3TestServer startOnDisk(java.nio.file.Path dir, String... buckets) throws Exception {
    return start(new org.gaul.s3proxy.nio2blob.FilesystemNio2BlobStore(dir.toString()), buckets);
  }

  private static S3TestServer start(BlobStore store, String... buckets) throws Exception {
    S3Proxy proxy =
        S3Proxy.builder()
            .blobStore(store)
            .endpoint(URI.create("http://127.0.0.1:0"))
            .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
            .ignoreUnknownHeaders(true)
            .build();
    proxy.start();
    if (!"STARTED".equals(proxy.getState())) {
      proxy.stop();
      throw new IllegalStateException("S3Proxy did not start: state " + proxy.getState());
    }
    S3TestServer server = new S3TestServer(proxy, store, URI.create("http://127.0.0.1:" + proxy.getPort()));
    for (String bucket : buckets) {
      server.createBucket(bucket);
    }
    return server;
  }

  public void createBucket(String bucket) {
    store.createContainer(bucket, CreateContainerOptions.NONE);
  }

  public URI endpoint() {
    return endpoint;
  }

  /** {@code s3://bucket/path}. */
  public String location(String bucket, String path) {
    return "s3://" + bucket + "/" + path;
  }

  /** {@code s3a://bucket/path}. */
  public String s3aLocation(String bucket, String path) {
    return "s3a://" + bucket + "/" + path;
  }

  /** Iceberg {@code S3FileIO} (and catalog) properties that reach this server. */
  public Map<String, String> s3FileIOProperties() {
    Map<String, String> props = new HashMap<>();
    props.put("s3.endpoint", endpoint.toString());
    props.put("s3.path-style-access", "true");
    props.put("s3.access-key-id", ACCESS_KEY);
    props.put("s3.secret-access-key", SECRET_KEY);
    props.put("client.region", REGION);
    props.put("http-client.type", "urlconnection");
    return props;
  }

  /** A Hadoop configuration whose {@code s3a://} file system reaches this server. */
  public Configuration s3aConfiguration() {
    Configuration conf = new Configuration();
    conf.set("fs.s3a.endpoint", endpoint.toString());
    conf.set("fs.s3a.endpoint.region", REGION);
    conf.set("fs.s3a.path.style.access", "true");
    conf.set("fs.s3a.connection.ssl.enabled", "false");
    conf.set("fs.s3a.access.key", ACCESS_KEY);
    conf.set("fs.s3a.secret.key", SECRET_KEY);
    conf.set("fs.s3a.aws.credentials.provider", "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
    // S3Proxy returns no ETag for directory markers.
    conf.set("fs.s3a.change.detection.version.required", "false");
    conf.set("fs.s3a.fast.upload.buffer", "bytebuffer");
    // Each test's server has its own port: never reuse a cached file system across servers.
    conf.set("fs.s3a.impl.disable.cache", "true");
    return conf;
  }

  /** An AWS SDK v2 client of this server; the caller closes it. */
  public S3Client client() {
    return S3Client.builder()
        .endpointOverride(endpoint)
        .region(Region.of(REGION))
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY)))
        .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
        .httpClient(UrlConnectionHttpClient.create())
        .build();
  }

  @Override
  public void close() throws IOException {
    try {
      proxy.stop();
    } catch (Exception e) {
      throw new IOException("Cannot stop the S3 test server at " + endpoint, e);
    } finally {
      store.close();
    }
  }
}
