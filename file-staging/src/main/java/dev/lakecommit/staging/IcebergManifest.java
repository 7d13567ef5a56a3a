package dev.lakecommit.staging;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.Objects;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;

/**
 * An Iceberg manifest file that a writer wrote for the files it staged in one checkpoint, so that a committer
 * can {@code AppendFiles.appendManifest} it instead of adding every file. Holds the manifest's own description
 * ({@link ManifestFiles#encode}: path, length, spec id, counts, partition summaries), never its entries.
 *
 * <p>The manifest carries no snapshot id (as {@code appendManifest} requires) and only added data files.
 */
public final class IcebergManifest {
  private final String path;
  private final byte[] encoded;

  private IcebergManifest(String path, byte[] encoded) {
    this.path = path;
    this.encoded = encoded;
  }

  /** Describes a manifest, typically {@code ManifestWriter.toManifestFile()}. */
  public static IcebergManifest of(ManifestFile manifest) throws IOException {
    Objects.requireNonNull(manifest, "manifest");
    return new IcebergManifest(manifest.path(), ManifestFiles.encode(manifest));
  }

  /**
   * Restores a description from {@link #encoded} bytes.
   *
   * @throws IOException if the bytes are not an encoded manifest file
   */
  public static IcebergManifest fromEncoded(byte[] encoded) throws IOException {
    Objects.requireNonNull(encoded, "encoded");
    byte[] copy = encoded.clone();
    return new IcebergManifest(ManifestFiles.decode(copy).path(), copy);
  }

  /** The manifest file's location. */
  public String path() {
    return path;
  }

  /** The manifest, ready for {@code appendManifest}. */
  public ManifestFile manifestFile() {
    try {
      return ManifestFiles.decode(encoded);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot decode manifest description of " + path, e);
    }
  }

  /** Iceberg's encoding of the description ({@link ManifestFiles#encode}); a copy. */
  public byte[] encoded() {
    return encoded.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof IcebergManifest other && path.equals(other.path) && Arrays.equals(encoded, other.encoded);
  }

  @Override
  public int hashCode() {
    return 31 * path.hashCode() + Arrays.hashCode(encoded);
  }

  @Override
  public String toString() {
    return "IcebergManifest{path=" + path + ", encodedBytes=" + encoded.length + "}";
  }
}
