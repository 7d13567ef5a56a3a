package dev.lakecommit.staging;

import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.io.FileIO;

/**
 * The {@code FileIO} for a location: {@code s3://} through Iceberg's {@link S3FileIO} (AWS SDK v2, configured by
 * Iceberg's {@code s3.*}, {@code client.*}, {@code http-client.*} properties, with {@link S3Clients}' retries unless
 * another {@code s3.client-factory-impl} is named); every other scheme — local paths,
 * {@code file:}, {@code hdfs:}, {@code s3a:} — through {@link HadoopFileIO} with the given Hadoop configuration
 * ({@code fs.s3a.*} for S3A).
 */
public final class FileIOs {
  private FileIOs() {}

  /**
   * A new, initialized {@code FileIO} for {@code location}; the caller closes it.
   *
   * @param properties Iceberg catalog/FileIO properties
   * @param hadoopConf Hadoop configuration for Hadoop file systems
   */
  public static FileIO forLocation(String location, Map<String, String> properties, Configuration hadoopConf) {
    Objects.requireNonNull(location, "location");
    Objects.requireNonNull(properties, "properties");
    Objects.requireNonNull(hadoopConf, "hadoopConf");
    if (scheme(location).equals("s3")) {
      FileIO io = new S3FileIO();
      io.initialize(S3Clients.withDefaults(properties));
      return io;
    }
    FileIO io = new HadoopFileIO(hadoopConf);
    io.initialize(properties);
    return io;
  }

  static String scheme(String location) {
    int colon = location.indexOf("://");
    return colon < 0 ? "" : location.substring(0, colon).toLowerCase(Locale.ROOT);
  }
}
