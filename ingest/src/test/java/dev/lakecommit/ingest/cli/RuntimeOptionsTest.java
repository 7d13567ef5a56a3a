package dev.lakecommit.ingest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What failures name as endpoints: addresses, never credentials. */
class RuntimeOptionsTest {

  @Test
  void namesCatalogAndStorageEndpointsButNoCredentials() {
    Map<String, String> properties = new LinkedHashMap<>();
    properties.put("type", "jdbc");
    properties.put("uri", "jdbc:postgresql://127.0.0.1:5432/catalog?user=lc&password=hunter2");
    properties.put("jdbc.password", "hunter3");
    properties.put("warehouse", "s3://lake/wh");
    properties.put("s3.endpoint", "http://127.0.0.1:9000");
    properties.put("s3.secret-access-key", "hunter4");
    properties.put("fs.s3a.endpoint", "http://127.0.0.1:9001");
    properties.put("token", "hunter5");

    String endpoints = RuntimeOptions.endpoints(properties);

    assertThat(endpoints).isEqualTo("uri=jdbc:postgresql://127.0.0.1:5432/catalog?user=lc&password=****, "
        + "warehouse=s3://lake/wh, s3.endpoint=http://127.0.0.1:9000, fs.s3a.endpoint=http://127.0.0.1:9001");
    assertThat(endpoints).doesNotContain("hunter");
  }

  @Test
  void aLocalJobHasNoEndpoints() {
    assertThat(RuntimeOptions.endpoints(Map.of("type", "jdbc"))).isEqualTo("local");
  }
}
