package dev.lakecommit.ingest.source;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What an input names: a file, a directory (recursive, hidden names skipped) or a glob, in sorted order. */
class ListingTest {
  @TempDir
  Path dir;

  @Test
  void directoriesGlobsAndFiles() throws IOException {
    for (String name : new String[] {"in/b.jsonl", "in/a.jsonl", "in/sub/c.jsonl", "in/_tmp/d.jsonl",
        "in/.hidden.jsonl", "in/sub/_SUCCESS", "in/x.csv"}) {
      Sources.lines(dir.resolve(name), "{\"id\": 1}");
    }
    String in = dir.resolve("in").toString();
    assertThat(FileSource.of(in + "/*.jsonl", null, null, Map.of(), null).files())
        .containsExactly(in + "/a.jsonl", in + "/b.jsonl");
    assertThat(FileSource.of(in + "/**.jsonl", null, null, Map.of(), null).files())
        .containsExactly(in + "/a.jsonl", in + "/b.jsonl", in + "/sub/c.jsonl");
    assertThat(FileSource.of(in + "/sub", null, null, Map.of(), null).files())
        .containsExactly(in + "/sub/c.jsonl");
    assertThat(FileSource.of(in + "/_tmp/d.jsonl", null, null, Map.of(), null).files())
        .containsExactly(in + "/_tmp/d.jsonl");
    assertThat(FileSource.of("file://" + in + "/a.jsonl", null, null, Map.of(), null).files())
        .containsExactly(in + "/a.jsonl");

    assertThatThrownBy(() -> FileSource.of(in, null, null, Map.of(), null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("Input " + in + " mixes formats: " + in + "/a.jsonl is JSON, " + in + "/x.csv is CSV; give one "
            + "format with --format, or a narrower input");
    assertThatThrownBy(() -> FileSource.of(in + "/*.txt", null, null, Map.of(), null))
        .isInstanceOf(FileNotFoundException.class).hasMessage("No input files match " + in + "/*.txt");
    assertThatThrownBy(() -> FileSource.of(in + "/nope", null, null, Map.of(), null))
        .isInstanceOf(FileNotFoundException.class).hasMessage("Input not found: " + in + "/nope");
    Sources.lines(dir.resolve("other/README"), "hello");
    assertThatThrownBy(() -> FileSource.of(dir.resolve("other").toString(), null, null, Map.of(), null))
        .hasMessageStartingWith("Cannot tell the format of " + dir.resolve("other/README") + " from its name");
  }
}
