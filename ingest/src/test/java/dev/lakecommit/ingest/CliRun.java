package dev.lakecommit.ingest;

import dev.lakecommit.ingest.cli.LakecommitCommand;
import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/** The tool run in-process, with what it printed. */
record CliRun(int exitCode, String out, String err) {

  static CliRun of(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine line = LakecommitCommand.commandLine();
    line.setOut(new PrintWriter(out, true));
    line.setErr(new PrintWriter(err, true));
    int code = line.execute(args);
    return new CliRun(code, out.toString(), err.toString());
  }

  @Override
  public String toString() {
    return "exit " + exitCode + "\n--- out\n" + out + "--- err\n" + err;
  }
}
