package dev.lakecommit.core.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Stored bytes of every persisted format, under {@code src/test/resources/compat/}. They are regenerated only on
 * purpose, with {@code -Dlakecommit.regenerate-compat=true}, when a new version is added: old files stay.
 */
public final class GoldenFiles {
  private GoldenFiles() {}

  /** The stored bytes of {@code name}; (re)writes them first when regeneration is asked for. */
  public static byte[] load(Class<?> owner, String name, byte[] current) throws IOException {
    if (Boolean.getBoolean("lakecommit.regenerate-compat")) {
      Path file = Path.of("src/test/resources/compat").resolve(name);
      Files.createDirectories(file.getParent());
      Files.write(file, current);
    }
    try (InputStream in = owner.getResourceAsStream("/compat/" + name)) {
      assertThat(in).as("stored bytes /compat/%s (regenerate with -Dlakecommit.regenerate-compat=true)", name)
          .isNotNull();
      return in.readAllBytes();
    }
  }
}
