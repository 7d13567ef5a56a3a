package dev.lakecommit.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.startupcheck.OneShotStartupCheckStrategy;
import org.testcontainers.images.builder.ImageFromDockerfile;
import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * The Docker image of docker/Dockerfile runs the tool. Needs a Docker engine: without one this test is skipped
 * (and reported as skipped); everything the image runs is also tested in-process.
 */
@Testcontainers(disabledWithoutDocker = true)
class DockerImageIT {
  @Test
  void theImageIngestsTheSample() throws Exception {
    Path root = Path.of("..").toAbsolutePath().normalize();
    assertThat(Files.exists(root.resolve("ingest/target/lakecommit.jar")))
        .as("the tool's jar is built in the package phase, before integration tests").isTrue();
    ImageFromDockerfile image = new ImageFromDockerfile("lakecommit-test", false)
        .withFileFromPath(".", root)
        .withDockerfile(root.resolve("docker/Dockerfile"));
    try (GenericContainer<?> tool = new GenericContainer<>(image)
        .withCommand("ingest", "--input", "/opt/lakecommit/examples/orders.jsonl", "--table", "demo.orders")
        .withStartupCheckStrategy(new OneShotStartupCheckStrategy())) {
      tool.start();
      assertThat(tool.getLogs()).contains("Committed 2,000 rows");
    }
  }
}
