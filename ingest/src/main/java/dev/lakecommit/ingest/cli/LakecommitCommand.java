package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.runtime.JobFailedException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code lakecommit}: the standalone tool. Exit codes: 0 success; 1 verify found duplicates or losses; 2 usage
 * error; 3 the job failed (bad input, storage or catalog failure) — every checkpoint it completed is kept, and
 * running the same command again resumes; 4 {@code ingest} completed with diverted records: with
 * {@code --bad-records}, records of the job went to dead-letter files instead of the table.
 */
@Command(name = "lakecommit", mixinStandardHelpOptions = true, versionProvider = LakecommitCommand.Version.class,
    description = "Exactly-once ingestion into Iceberg or Hive tables: one idempotent commit per checkpoint.",
    subcommands = {IngestCommand.class, VerifyCommand.class, StatusCommand.class, CleanupCommand.class,
        CommandLine.HelpCommand.class})
public final class LakecommitCommand implements Runnable {
  public static final int VERIFY_FAILED = 1;
  public static final int USAGE = 2;
  public static final int JOB_FAILED = 3;
  public static final int COMPLETED_WITH_BAD_RECORDS = 4;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "Missing command: ingest, verify, status or cleanup");
  }

  /** The tool's command line with its error handling: messages, not stack traces, for expected failures. */
  public static CommandLine commandLine() {
    CommandLine line = new CommandLine(new LakecommitCommand());
    line.setCaseInsensitiveEnumValuesAllowed(true);
    line.setExecutionExceptionHandler((e, cmd, parsed) -> {
      String message = Redaction.redactText(e.getMessage() == null ? e.toString() : e.getMessage());
      cmd.getErr().println("error: " + message);
      if (!(e instanceof JobFailedException) && !(e instanceof IllegalArgumentException)
          && !(e instanceof java.io.IOException) && !(e instanceof IllegalStateException)) {
        e.printStackTrace(cmd.getErr());
      }
      if (e instanceof IllegalArgumentException && !(e instanceof NumberFormatException)) {
        return USAGE;
      }
      return JOB_FAILED;
    });
    return line;
  }

  /** The version from the jar's manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String version = LakecommitCommand.class.getPackage().getImplementationVersion();
      return new String[] {"lakecommit " + (version == null ? "dev" : version)};
    }
  }
}
