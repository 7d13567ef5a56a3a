package dev.lakecommit.ingest.source;

/** Test switches of the source package for tests in other packages. */
public final class SourceSwitches {
  private SourceSwitches() {}

  /** Whether JSON objects are read straight into records ({@link JsonRecords}) or all the map's way. */
  public static void directJson(boolean enabled) {
    JsonRecords.enabled = enabled;
  }
}
