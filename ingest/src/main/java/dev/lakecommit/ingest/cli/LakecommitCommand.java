package dev.lakecommit.ingest.cli;

import dev.lakecommit.core.runtime.JobFailedException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code lakecommit}: the standalone tool. Exit codes: 0 success; 1 verify found duplicates or losses; 2 usage
 * error (a bad option value, a missing input: found before anything is created); 3 the job failed (bad input,
 * storage or catalog failure, a commit of unknown outcome) — every checkpoint it completed is kept, and running the
 * same command again resumes; 4 {@code ingest} completed with diverted records: with {@code --bad-records},
 * records of the job went to dead-letter files instead of the table.
 */
@Command(name = "lakecommit", mixinStandardHelpOptions = true, versionProvider = LakecommitCommand.Version.class,
    description = "Exactly-once ingestion into Iceberg or Hive tables: one idempotent commit per checkpoint.",
    subcommands = {IngestCommand.class, VerifyCommand.class, StatusCommand.class, CutCommand.class,
        CleanupCommand.class, MaintainCommand.class, CommandLine.HelpCommand.class})
public final class LakecommitCommand implements Runnable {
  public static final int VERIFY_FAILED = 1;
  public static final int USAGE = 2;
  public static final int JOB_FAILED = 3;
  public static final int COMPLETED_WITH_BAD_RECORDS = 4;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(),
        "Missing command: ingest, verify, status, cleanup or maintain");
  }

  /**
   * The tool's command line with its error handling: every failure is one message of the tool's own (the cause
   * chain summarised, {@code --verbose} for the stack trace), usage errors say what to try without dumping the
   * usage, and no value of a secret-looking option is ever echoed.
   */
  public static CommandLine commandLine() {
    CommandLine line = new CommandLine(new LakecommitCommand());
    line.setCaseInsensitiveEnumValuesAllowed(true);
    line.setParameterExceptionHandler((e, args) -> {
      CommandLine cmd = e.getCommandLine();
      java.io.PrintWriter err = cmd.getErr();
      err.println("error: " + Redaction.maskArguments(e.getMessage(), args));
      CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
      err.println("Try '" + cmd.getCommandSpec().qualifiedName() + " --help' for its options.");
      err.flush();
      return USAGE;
    });
    line.setExecutionExceptionHandler((e, cmd, parsed) -> {
      String[] args = parsed.originalArgs().toArray(String[]::new);
      cmd.getErr().println("error: " + Redaction.maskArguments(summary(e), args));
      if (verbose(parsed)) {
        java.io.StringWriter trace = new java.io.StringWriter();
        e.printStackTrace(new java.io.PrintWriter(trace));
        cmd.getErr().print(Redaction.maskArguments(trace.toString(), args));
      }
      cmd.getErr().flush();
      return exitCode(e);
    });
    return line;
  }

  @CommandLine.Option(names = "--verbose", scope = CommandLine.ScopeType.INHERIT,
      description = "On failure, also print the stack trace.")
  boolean verbose;

  /** 2 for usage errors (bad option values, missing input), 3 for everything else a job can fail on. */
  static int exitCode(Throwable e) {
    if (e instanceof IllegalArgumentException && !(e instanceof NumberFormatException)) {
      return USAGE;
    }
    return JOB_FAILED;
  }

  /**
   * The failure as one line: its message, then the messages of its causes that add something ({@code caused by:
   * ...}), without class names where a message says it all.
   */
  static String summary(Throwable e) {
    StringBuilder text = new StringBuilder(describe(e));
    java.util.Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
    seen.add(e);
    for (Throwable cause = e.getCause(); cause != null && seen.add(cause); cause = cause.getCause()) {
      String described = describe(cause);
      if (!text.toString().contains(described.replaceFirst("^[A-Za-z.]*(Exception|Error): ", ""))) {
        text.append("; caused by: ").append(described);
      }
    }
    return Redaction.redactText(text.toString().replaceAll("\\s*\\R\\s*", " "));
  }

  private static String describe(Throwable e) {
    String message = e.getMessage();
    if (message == null || message.isBlank()) {
      return e.getClass().getSimpleName();
    }
    boolean plain = e instanceof JobFailedException || e instanceof IllegalArgumentException
        || e instanceof IllegalStateException || e.getClass() == java.io.IOException.class
        || e.getClass() == java.io.UncheckedIOException.class;
    return plain ? message : e.getClass().getSimpleName() + ": " + message;
  }

  private static boolean verbose(CommandLine.ParseResult parsed) {
    for (CommandLine.ParseResult result = parsed; result != null; result = result.subcommand()) {
      if (result.hasMatchedOption("--verbose")) {
        return true;
      }
    }
    return false;
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
