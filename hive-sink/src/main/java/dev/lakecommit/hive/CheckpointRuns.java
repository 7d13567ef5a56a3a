package dev.lakecommit.hive;

import dev.lakecommit.core.JobId;
import dev.lakecommit.staging.StagingLayout;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.OptionalLong;
import java.util.stream.Collectors;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;

/**
 * Which checkpoint of which job wrote each row of a Hive data file, as runs of consecutive rows in file order. Hive
 * keeps no commit history; a checkpoint's own file tells by its name ({@code <job>-<checkpoint>-...}) and is one
 * run. A merged file ({@link MergeWriter}) keeps its sources' runs, in the order it copied them, in its Parquet
 * footer under {@value #FOOTER_KEY}, so the commit order of its rows survives the merge.
 *
 * @param runs the runs, in row order; adjacent runs of one checkpoint are one run
 */
public record CheckpointRuns(List<Run> runs) {
  /** The footer key of a merged file's runs: {@code job:checkpoint:rows} entries, comma-separated. */
  public static final String FOOTER_KEY = "lakecommit.checkpoint-runs";

  /** Stands for rows of a file that no known job wrote (job ids never hold it). */
  private static final String UNKNOWN = "?";

  public CheckpointRuns {
    runs = List.copyOf(runs);
  }

  /**
   * {@code rows} consecutive rows that checkpoint {@code checkpointId} of {@code job} committed; {@code job} is null
   * for rows of a file no known job wrote (another writer's).
   */
  public record Run(String job, long checkpointId, long rows) {
    boolean sameCheckpoint(Run other) {
      return java.util.Objects.equals(job, other.job) && checkpointId == other.checkpointId;
    }
  }

  /**
   * The runs of one data file: from its footer if it is a merged file, else one run named by its file name.
   *
   * @param fileName the file's name (or location)
   * @param footer the file's Parquet footer
   * @param jobs the ids of the jobs that wrote the table
   * @throws IllegalArgumentException if the footer's runs cannot be read or do not add up to the file's rows
   */
  public static CheckpointRuns of(String fileName, ParquetMetadata footer, Collection<String> jobs) {
    long rows = footer.getBlocks().stream().mapToLong(BlockMetaData::getRowCount).sum();
    String stored = footer.getFileMetaData().getKeyValueMetaData().get(FOOTER_KEY);
    if (stored != null) {
      CheckpointRuns runs = parse(stored, fileName);
      long counted = runs.rows();
      if (counted != rows) {
        throw new IllegalArgumentException("Data file " + fileName + " holds " + rows + " rows but its "
            + FOOTER_KEY + " footer accounts for " + counted);
      }
      return runs;
    }
    for (String job : jobs) {
      OptionalLong checkpoint = StagingLayout.checkpointInName(JobId.of(job), fileName);
      if (checkpoint.isPresent()) {
        return new CheckpointRuns(List.of(new Run(job, checkpoint.getAsLong(), rows)));
      }
    }
    return new CheckpointRuns(List.of(new Run(null, 0, rows)));
  }

  /** The runs of {@code sources}' rows written one after the other, adjacent runs of one checkpoint joined. */
  public static CheckpointRuns concat(List<CheckpointRuns> sources) {
    List<Run> joined = new ArrayList<>();
    for (CheckpointRuns source : sources) {
      for (Run run : source.runs) {
        if (run.rows == 0) {
          continue;
        }
        int last = joined.size() - 1;
        if (last >= 0 && joined.get(last).sameCheckpoint(run)) {
          joined.set(last, new Run(run.job, run.checkpointId, joined.get(last).rows + run.rows));
        } else {
          joined.add(run);
        }
      }
    }
    return new CheckpointRuns(joined);
  }

  public long rows() {
    return runs.stream().mapToLong(Run::rows).sum();
  }

  /** The footer value of these runs ({@value #FOOTER_KEY}). */
  public String encode() {
    return runs.stream()
        .map(run -> (run.job == null ? UNKNOWN : run.job) + ":" + run.checkpointId + ":" + run.rows)
        .collect(Collectors.joining(","));
  }

  static CheckpointRuns parse(String value, String fileName) {
    List<Run> runs = new ArrayList<>();
    if (value.isEmpty()) {
      return new CheckpointRuns(runs);
    }
    for (String entry : value.split(",")) {
      String[] parts = entry.split(":");
      try {
        if (parts.length != 3) {
          throw new NumberFormatException("not job:checkpoint:rows");
        }
        long rows = Long.parseLong(parts[2]);
        long checkpoint = Long.parseLong(parts[1]);
        if (rows < 0 || checkpoint < 0) {
          throw new NumberFormatException("negative");
        }
        runs.add(new Run(parts[0].equals(UNKNOWN) ? null : JobId.of(parts[0]).value(), checkpoint, rows));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("Data file " + fileName + " has an unreadable " + FOOTER_KEY
            + " footer entry '" + entry + "' (" + e.getMessage() + ")", e);
      }
    }
    return new CheckpointRuns(runs);
  }
}
