package dev.lakecommit.hive;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.ShowLocksRequest;
import org.apache.hadoop.hive.metastore.api.ShowLocksResponseElement;
import org.apache.thrift.TException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The process that asked for a metastore table lock, as the lock request's agent info names it: its pid, its PID
 * namespace and its start. A lock outlives a holder killed while it held it until the metastore's
 * {@code hive.txn.timeout} (300 s by default) reaps it; a writer restarted on the same machine would wait for it all
 * that time. So a waiting writer releases the locks of Lakecommit processes that are provably gone: same host, same
 * PID namespace, and no live process with that pid and start. A holder elsewhere is never judged.
 *
 * @param pid the process id
 * @param namespace the PID namespace ({@code /proc/self/ns/pid}'s link), empty where it cannot be read
 * @param startMillis the process's start, -1 if unknown
 */
record LockHolder(long pid, String namespace, long startMillis) {
  private static final Logger LOG = LoggerFactory.getLogger(LockHolder.class);
  private static final String AGENT = "lakecommit";
  /** The holder alone, or after another agent's own info (Iceberg's lock requests: "Iceberg-uuid lakecommit ..."). */
  private static final Pattern AGENT_INFO =
      Pattern.compile("(?:^|\\s)" + AGENT + " pid=(\\d+) pidns=(\\S*) start=(-?\\d+)$");
  private static final LockHolder CURRENT = current();

  /** This process. */
  static LockHolder self() {
    return CURRENT;
  }

  /** The lock request's agent info naming this holder. */
  String agentInfo() {
    return String.format("%s pid=%d pidns=%s start=%d", AGENT, pid, namespace, startMillis);
  }

  /** The holder an agent info names, if a Lakecommit process wrote it. */
  static Optional<LockHolder> parse(String agentInfo) {
    if (agentInfo == null) {
      return Optional.empty();
    }
    Matcher m = AGENT_INFO.matcher(agentInfo);
    return m.find()
        ? Optional.of(new LockHolder(Long.parseLong(m.group(1)), m.group(2), Long.parseLong(m.group(3))))
        : Optional.empty();
  }

  /**
   * Whether this holder, on {@code host}, is a process of this machine's PID namespace that no longer runs (its pid
   * is free, or taken by a process that started at another time).
   */
  boolean goneAsSeenFrom(LockHolder self, String host, String selfHost) {
    if (!host.equals(selfHost) || namespace.isEmpty() || !namespace.equals(self.namespace) || pid == self.pid) {
      return false;
    }
    Optional<ProcessHandle> process = ProcessHandle.of(pid);
    if (process.isEmpty() || !process.get().isAlive()) {
      return true;
    }
    Optional<Instant> started = process.get().info().startInstant();
    return startMillis >= 0 && started.isPresent() && started.get().toEpochMilli() != startMillis;
  }

  /**
   * Releases the locks on the table that Lakecommit processes of this host took and died holding or waiting for
   * ({@code own} is the caller's waiting lock, never released here).
   *
   * @return how many were released
   */
  static int releaseGone(IMetaStoreClient client, String database, String name, String host, long own)
      throws TException {
    ShowLocksRequest request = new ShowLocksRequest();
    request.setDbname(database);
    request.setTablename(name);
    int released = 0;
    List<ShowLocksResponseElement> locks = client.showLocks(request).getLocks();
    for (ShowLocksResponseElement lock : locks == null ? List.<ShowLocksResponseElement>of() : locks) {
      if (lock.getLockid() == own || lock.getHostname() == null) {
        continue;
      }
      Optional<LockHolder> holder = parse(lock.getAgentInfo());
      if (holder.isPresent() && holder.get().goneAsSeenFrom(CURRENT, lock.getHostname(), host)) {
        TableFencing.unlockQuietly(client, lock.getLockid());
        released++;
        LOG.warn("Released lock {} of table {}.{} ({}): process {} of this host, which asked for it, is gone",
            lock.getLockid(), database, name, lock.getState(), holder.get().pid());
      }
    }
    return released;
  }

  private static LockHolder current() {
    ProcessHandle self = ProcessHandle.current();
    String namespace;
    try {
      namespace = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString().replaceAll("\\s", "");
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      namespace = "";
    }
    long start = self.info().startInstant().map(Instant::toEpochMilli).orElse(-1L);
    return new LockHolder(self.pid(), namespace, start);
  }
}
