package dev.lakecommit.hive;

import java.io.BufferedReader;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * What a merge put into its directory, written there (hidden: {@value #NAME}) before the partition is switched to
 * it: the directory it replaces, every visible file that directory held when the merge checked it last (merged
 * or copied: all obsolete once the switch is made, deleted by a later round), and the files the merge wrote. A
 * later round deletes only files named here, so a file that arrived in the old directory afterwards is never lost.
 *
 * <p>Text, one entry a line: {@code lakecommit-merge 1}, {@code from <location>}, then {@code replaced <size>
 * <name>} and {@code written <size> <name>} lines.
 *
 * @param from the location the partition had before the merge
 * @param replaced names and sizes of the visible files at {@code from}
 * @param written names and sizes of the files in the merge's directory (merged and copied)
 */
record MergeManifest(Path from, Map<String, Long> replaced, Map<String, Long> written) {
  static final String NAME = ".lakecommit-merged";
  private static final String HEADER = "lakecommit-merge ";
  private static final int VERSION = 1;

  MergeManifest {
    replaced = Map.copyOf(replaced);
    written = Map.copyOf(written);
  }

  /**
   * Writes the manifest into {@code dir}, whole or not at all (a temporary name, then renamed), replacing one an
   * earlier pass left.
   */
  void write(FileSystem fs, Path dir) throws IOException {
    StringBuilder text = new StringBuilder(HEADER).append(VERSION).append('\n');
    text.append("from ").append(from).append('\n');
    replaced.forEach((name, size) -> text.append("replaced ").append(size).append(' ').append(name).append('\n'));
    written.forEach((name, size) -> text.append("written ").append(size).append(' ').append(name).append('\n'));
    Path target = new Path(dir, NAME);
    Path temp = new Path(dir, NAME + ".tmp");
    try (OutputStream out = fs.create(temp, true)) {
      out.write(text.toString().getBytes(StandardCharsets.UTF_8));
    }
    fs.delete(target, false);
    if (!fs.rename(temp, target)) {
      throw new IOException("Cannot write the merge manifest " + target);
    }
  }

  /** The manifest in {@code dir}, if there is one. */
  static Optional<MergeManifest> read(FileSystem fs, Path dir) throws IOException {
    Path path = new Path(dir, NAME);
    List<String> lines = new ArrayList<>();
    try (BufferedReader in = new BufferedReader(new InputStreamReader(fs.open(path), StandardCharsets.UTF_8))) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        lines.add(line);
      }
    } catch (FileNotFoundException e) {
      return Optional.empty();
    }
    if (lines.isEmpty() || !lines.get(0).startsWith(HEADER)) {
      throw new IOException("Not a merge manifest: " + path);
    }
    int version;
    try {
      version = Integer.parseInt(lines.get(0).substring(HEADER.length()).trim());
    } catch (NumberFormatException e) {
      throw new IOException("Corrupt merge manifest " + path + ": line '" + lines.get(0) + "'", e);
    }
    if (version != VERSION) {
      throw new IOException("Unknown version " + version + " of merge manifest " + path);
    }
    Path from = null;
    Map<String, Long> replaced = new LinkedHashMap<>();
    Map<String, Long> written = new LinkedHashMap<>();
    for (String line : lines.subList(1, lines.size())) {
      int space = line.indexOf(' ');
      String kind = space < 0 ? line : line.substring(0, space);
      String rest = line.substring(space + 1);
      switch (kind) {
        case "from" -> from = new Path(rest);
        case "replaced", "written" -> {
          int split = rest.indexOf(' ');
          try {
            (kind.equals("replaced") ? replaced : written).put(rest.substring(split + 1),
                Long.parseLong(rest.substring(0, Math.max(split, 0))));
          } catch (NumberFormatException e) {
            throw new IOException("Corrupt merge manifest " + path + ": line '" + line + "'", e);
          }
        }
        default -> throw new IOException("Corrupt merge manifest " + path + ": line '" + line + "'");
      }
    }
    if (from == null) {
      throw new IOException("Corrupt merge manifest " + path + ": no 'from' line");
    }
    return Optional.of(new MergeManifest(from, replaced, written));
  }
}
