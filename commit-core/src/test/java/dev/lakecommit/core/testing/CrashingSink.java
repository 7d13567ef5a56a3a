package dev.lakecommit.core.testing;

import dev.lakecommit.core.CommitId;
import dev.lakecommit.core.CommitOutcome;
import dev.lakecommit.core.JobId;
import dev.lakecommit.core.SimpleVersionedSerializer;
import dev.lakecommit.core.Sink;
import dev.lakecommit.core.SinkAggregatedCommitter;
import dev.lakecommit.core.SinkWriter;
import dev.lakecommit.core.SupportsDeletes;
import dev.lakecommit.core.SupportsAggregatedCommitter;
import dev.lakecommit.core.SupportsTarget;
import dev.lakecommit.core.CommitTarget;
import dev.lakecommit.core.RunEpoch;
import dev.lakecommit.core.WriterContext;
import java.io.IOException;
import java.util.List;
import java.util.Optional;

/**
 * Any sink with an aggregated committer, with the crash points of a {@link CrashSchedule}: before a record is
 * written, inside prepareCommit (after the writer closed its files), and after the target accepted a commit but
 * before the runtime heard of it.
 */
public final class CrashingSink<IN, C, S, A, T extends Sink<IN, C, S> & SupportsAggregatedCommitter<C, A> & SupportsTarget>
    implements Sink<IN, C, S>, SupportsAggregatedCommitter<C, A>, SupportsTarget {

  private final T delegate;
  private final CrashSchedule crashes;
  private final java.util.function.Consumer<CommitTarget> opened;

  public CrashingSink(T delegate, CrashSchedule crashes) {
    this(delegate, crashes, target -> {});
  }

  /** @param opened sees every target the runtime opens through this sink, as the delegate made it */
  public CrashingSink(T delegate, CrashSchedule crashes, java.util.function.Consumer<CommitTarget> opened) {
    this.delegate = delegate;
    this.crashes = crashes;
    this.opened = opened;
  }

  @Override
  public SinkWriter<IN, C, S> createWriter(WriterContext context) throws IOException {
    return wrap(delegate.createWriter(context));
  }

  @Override
  public SinkWriter<IN, C, S> restoreWriter(WriterContext context, List<S> states) throws IOException {
    return wrap(delegate.restoreWriter(context, states));
  }

  /** A writer that crashes as scheduled, and takes deletes (crashing as at a write) where its delegate does. */
  @SuppressWarnings("unchecked")
  private SinkWriter<IN, C, S> wrap(SinkWriter<IN, C, S> writer) {
    if (!(writer instanceof SupportsDeletes<?> deletes)) {
      return new Writer(writer);
    }
    SupportsDeletes<IN> target = (SupportsDeletes<IN>) deletes;
    return new DeletingWriter(writer, target);
  }

  private final class DeletingWriter extends Writer implements SupportsDeletes<IN> {
    private final SupportsDeletes<IN> deletes;

    DeletingWriter(SinkWriter<IN, C, S> writer, SupportsDeletes<IN> deletes) {
      super(writer);
      this.deletes = deletes;
    }

    @Override
    public void delete(IN record) throws IOException {
      crashes.reach(CrashSchedule.WRITE, -1);
      deletes.delete(record);
    }
  }

  @Override
  public SimpleVersionedSerializer<C> commitInfoSerializer() {
    return delegate.commitInfoSerializer();
  }

  @Override
  public SimpleVersionedSerializer<S> writerStateSerializer() {
    return delegate.writerStateSerializer();
  }

  @Override
  public SinkAggregatedCommitter<C, A> createAggregatedCommitter() throws IOException {
    return new Committer(delegate.createAggregatedCommitter());
  }

  @Override
  public SimpleVersionedSerializer<A> aggregatedCommitSerializer() {
    return delegate.aggregatedCommitSerializer();
  }

  /** The delegate's target, crashing right after the epoch claim. */
  @Override
  public CommitTarget openTarget() throws IOException {
    CommitTarget target = delegate.openTarget();
    opened.accept(target);
    return new dev.lakecommit.core.ForwardingCommitTarget(target) {
      @Override
      public RunEpoch claimEpoch(JobId jobId, String run) throws IOException {
        RunEpoch claimed = delegate.claimEpoch(jobId, run);
        crashes.reach(CrashSchedule.EPOCH_CLAIMED, -1);
        return claimed;
      }
    };
  }

  private class Writer extends ForwardingSinkWriter<IN, C, S> {
    Writer(SinkWriter<IN, C, S> writer) {
      super(writer);
    }

    @Override
    public void write(IN record) throws IOException {
      crashes.reach(CrashSchedule.WRITE, -1);
      delegate.write(record);
    }

    @Override
    public Optional<C> prepareCommit(long checkpointId) throws IOException {
      Optional<C> info = delegate.prepareCommit(checkpointId);
      crashes.reach(CrashSchedule.PREPARE, checkpointId);
      return info;
    }
  }

  private final class Committer implements SinkAggregatedCommitter<C, A> {
    private final SinkAggregatedCommitter<C, A> committer;

    Committer(SinkAggregatedCommitter<C, A> committer) {
      this.committer = committer;
    }

    @Override
    public A combine(CommitId commitId, List<C> infos) {
      return committer.combine(commitId, infos);
    }

    @Override
    public CommitOutcome commit(A committable) {
      CommitOutcome outcome = committer.commit(committable);
      if (outcome instanceof CommitOutcome.Committed) {
        crashes.reach(CrashSchedule.COMMIT_APPLIED, committer.commitId(committable).checkpointId());
      }
      return outcome;
    }

    @Override
    public void fence(JobId jobId, long epoch) {
      committer.fence(jobId, epoch);
    }

    @Override
    public Optional<String> missingStaged(A committable) throws IOException {
      return committer.missingStaged(committable);
    }

    @Override
    public CommitId commitId(A committable) {
      return committer.commitId(committable);
    }

    @Override
    public void close() throws IOException {
      committer.close();
    }
  }
}
