package dev.lakecommit.ingest.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * SIGTERM and SIGINT stop an unbounded job cleanly: the first one asks the input to end, so the job takes its last
 * checkpoint, commits it and exits 0; a second one stops the process at once (what is committed stays committed,
 * the next run resumes from the last checkpoint). The JVM's own handlers are restored when the job is done.
 */
final class StopSignals implements AutoCloseable {
  private final List<Signal> signals = new ArrayList<>();
  private final List<SignalHandler> previous = new ArrayList<>();

  private StopSignals() {}

  static StopSignals install(Runnable stop, PrintWriter out) {
    StopSignals installed = new StopSignals();
    for (String name : List.of("TERM", "INT")) {
      Signal signal = new Signal(name);
      boolean[] seen = {false};
      SignalHandler[] original = new SignalHandler[1];
      try {
        original[0] = Signal.handle(signal, received -> {
          if (seen[0]) {
            original[0].handle(received);
            return;
          }
          seen[0] = true;
          out.printf("%nSIG%s: committing the current checkpoint, then exiting (again to stop at once)%n", name);
          out.flush();
          stop.run();
        });
        installed.signals.add(signal);
        installed.previous.add(original[0]);
      } catch (IllegalArgumentException unsupported) {
        // a JVM that reserves the signal (-Xrs) keeps its own handling: the job stops as after a crash
      }
    }
    return installed;
  }

  @Override
  public void close() {
    for (int i = 0; i < signals.size(); i++) {
      Signal.handle(signals.get(i), previous.get(i));
    }
  }
}
