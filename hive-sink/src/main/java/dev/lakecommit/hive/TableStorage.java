package dev.lakecommit.hive;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The file side of a commit, on a Hadoop file system: moving staged files into partition directories (in
 * parallel; on S3A a rename is a server-side copy and a delete), success markers, and deleting what
 * insert-overwrite replaced. Every operation can be repeated after a crash with the same result.
 */
final class TableStorage implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TableStorage.class);
  /** Object stores: directories are implied by keys, so nothing needs creating before a rename. */
  private static final Set<String> OBJECT_STORES = Set.of("s3a", "s3", "s3n", "gs", "oss", "cosn", "obs");
  private static final AtomicInteger POOLS = new AtomicInteger();

  /**
   * One staged file and where it goes.
   *
   * @param movedTo where an earlier attempt may have moved the file instead, or null: the partition's location
   *     before a merge switched it (the attempt then noticed the switch and stopped)
   * @param upload the staged file's pending upload, or null if it is a plain file
   */
  record Move(Path source, Path target, long size, Path movedTo, PendingUploads.Upload upload) {
    Move(Path source, Path target, long size) {
      this(source, target, size, null, null);
    }
  }

  private final FileSystem fs;
  private final PendingUploads uploads;
  private final boolean idempotent;
  private final ThreadPoolExecutor pool;

  /**
   * @param idempotent test-only when false: a file found at its target is not recognized as moved (the target
   *     gets a new name instead), and a missing staged file is ignored — how a commit without checks behaves
   */
  TableStorage(FileSystem fs, int threads, boolean idempotent) throws IOException {
    this.fs = fs;
    this.uploads = PendingUploads.of(fs);
    this.idempotent = idempotent;
    int id = POOLS.incrementAndGet();
    AtomicInteger count = new AtomicInteger();
    this.pool = new ThreadPoolExecutor(threads, threads, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
      Thread thread = new Thread(r, "lakecommit-hive-move-" + id + "-" + count.incrementAndGet());
      thread.setDaemon(true);
      return thread;
    });
    pool.allowCoreThreadTimeOut(true);
  }

  FileSystem fs() {
    return fs;
  }

  /** The pending uploads of this storage, or null if it is not S3A. */
  PendingUploads uploads() {
    return uploads;
  }

  /**
   * The pending uploads of staged files, read in parallel; a file whose upload is not pending (completed and cleaned
   * up already) has none.
   */
  java.util.Map<String, PendingUploads.Upload> loadUploads(List<Path> staged)
      throws IOException, InterruptedException {
    java.util.Map<String, PendingUploads.Upload> loaded = new java.util.concurrent.ConcurrentHashMap<>();
    if (uploads == null || staged.isEmpty()) {
      return loaded;
    }
    List<Future<Void>> reads = new ArrayList<>();
    for (Path path : staged) {
      reads.add(pool.submit(() -> {
        try {
          loaded.put(path.toString(), uploads.load(path));
        } catch (FileNotFoundException e) {
          // Completed and cleaned up by an earlier attempt, or lost: the move finds out which.
        }
        return null;
      }));
    }
    awaitAll(reads);
    return loaded;
  }

  /**
   * Moves every file, in parallel, calling {@code afterEach} on this thread as each one is in place. A file
   * already at its target with the staged size counts as moved (by an earlier attempt or a racing committer);
   * its staged copy, if still there (a copy-and-delete rename that stopped half-way), is deleted.
   *
   * @return how many files this call moved (the others were in place)
   * @throws FatalCommitException if a staged file is neither staged nor at its target, or a different file is
   *     at its target
   * @throws IOException if the file system fails; moving again is safe
   */
  int moveAll(List<Move> moves, Runnable afterEach) throws IOException, InterruptedException {
    createDirectories(moves);
    CompletionService<Boolean> done = new ExecutorCompletionService<>(pool);
    List<Future<Boolean>> futures = new ArrayList<>(moves.size());
    for (Move move : moves) {
      futures.add(done.submit(() -> move(move)));
    }
    int moved = 0;
    int finished = 0;
    try {
      for (; finished < moves.size(); finished++) {
        Future<Boolean> next = done.take();
        moved += next.get() ? 1 : 0;
        afterEach.run();
      }
      return moved;
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof IOException io) {
        throw io;
      }
      if (cause instanceof Error error) {
        throw error;
      }
      throw new IOException("Cannot move staged files: " + cause, cause);
    } finally {
      if (finished < moves.size()) {
        futures.forEach(f -> f.cancel(false));
      }
    }
  }

  private boolean move(Move move) throws IOException {
    FileStatus target = statusOrNull(move.target());
    if (move.upload() != null || (uploads != null && PendingUploads.isPending(move.source()))) {
      return complete(move, target);
    }
    if (!idempotent) {
      return moveUnchecked(move, target);
    }
    if (target != null) {
      checkSame(move, target);
      deleteLeftover(move.source());
      return false;
    }
    boolean renamed;
    try {
      renamed = fs.rename(move.source(), move.target());
    } catch (FileNotFoundException e) {
      renamed = false;
    }
    if (renamed) {
      return true;
    }
    // Not renamed: a racing committer may have moved it, or it is lost.
    target = statusOrNull(move.target());
    if (target != null) {
      checkSame(move, target);
      deleteLeftover(move.source());
      return false;
    }
    if (!fs.exists(move.source())) {
      FileStatus moved = move.movedTo() == null ? null : statusOrNull(move.movedTo());
      if (moved != null) {
        checkSame(move, moved);
        if (fs.rename(move.movedTo(), move.target())) {
          return true;
        }
        target = statusOrNull(move.target()); // a merge's clean-up moved it there meanwhile
        if (target != null) {
          checkSame(move, target);
          return false;
        }
      }
      throw new FatalCommitException.StagedFileLost(String.format(
          "Staged file %s is lost: it is neither staged nor at %s", move.source(), move.target()));
    }
    throw new IOException(String.format("Cannot rename %s to %s", move.source(), move.target()));
  }

  /**
   * Puts a staged upload in place: completes it where it was staged to go, or — where the partition is somewhere
   * else (an existing partition at its own location) — completes it and renames it there (a copy). A file already at
   * its target with the staged size counts as moved; what is left of the staged file is deleted.
   */
  private boolean complete(Move move, FileStatus target) throws IOException {
    if (!idempotent && target != null) {
      // Test-only, as moveUnchecked: the file at the target is not recognized, the commit lands it again.
      Path to = freeName(move.target());
      org.apache.hadoop.fs.FileUtil.copy(fs, move.target(), fs, to, false, fs.getConf());
      return true;
    }
    if (target != null) {
      checkSame(move, target);
      uploads.deleteStaged(move.source());
      return false;
    }
    PendingUploads.Upload upload = move.upload();
    if (upload == null) {
      try {
        upload = uploads.load(move.source());
      } catch (FileNotFoundException e) {
        throw new FatalCommitException.StagedFileLost(String.format(
            "Staged upload %s is lost: it has no pending upload and nothing is at %s", move.source(), move.target()));
      }
    }
    Path destination = new Path(upload.destination());
    boolean elsewhere = !HivePaths.sameLocation(destination, move.target());
    FileStatus completed = elsewhere ? statusOrNull(destination) : null;
    if (completed == null) {
      try {
        uploads.complete(upload);
      } catch (IOException e) {
        // Completed by a racing committer meanwhile, or no longer pending (aborted): the destination says which.
        completed = statusOrNull(destination);
        if (completed == null) {
          FileStatus raced = statusOrNull(move.target());
          if (raced != null) {
            checkSame(move, raced);
            return false;
          }
          throw new FatalCommitException.StagedFileLost(String.format("Staged upload %s (upload %s to %s) cannot be"
              + " completed and nothing is at %s: %s", move.source(), upload.uploadId(), destination, move.target(),
              e.getMessage()));
        }
      }
    }
    if (elsewhere) {
      if (!fs.rename(destination, move.target())) {
        FileStatus raced = statusOrNull(move.target());
        if (raced == null) {
          throw new IOException(String.format("Cannot rename %s to %s", destination, move.target()));
        }
        checkSame(move, raced);
      }
    } else if (completed != null) {
      checkSame(move, completed);
    }
    uploads.deleteStaged(move.source());
    return true;
  }

  private Path freeName(Path target) throws IOException {
    Path to = target;
    for (int n = 1; statusOrNull(to) != null; n++) {
      String name = target.getName();
      int dot = name.lastIndexOf('.');
      to = new Path(target.getParent(), dot < 0 ? name + "-" + n : name.substring(0, dot) + "-" + n
          + name.substring(dot));
    }
    return to;
  }

  private boolean moveUnchecked(Move move, FileStatus target) throws IOException {
    if (!fs.exists(move.source())) {
      return false;
    }
    Path to = move.target();
    for (int n = 1; target != null; n++) {
      String name = move.target().getName();
      int dot = name.lastIndexOf('.');
      to = new Path(move.target().getParent(), dot < 0 ? name + "-" + n : name.substring(0, dot) + "-" + n
          + name.substring(dot));
      target = statusOrNull(to);
    }
    return fs.rename(move.source(), to);
  }

  private void checkSame(Move move, FileStatus target) throws FatalCommitException {
    if (!target.isFile() || target.getLen() != move.size()) {
      throw new FatalCommitException(String.format(
          "Refusing to overwrite %s (%s bytes) with staged file %s (%s bytes): a different file has its name",
          move.target(), target.isFile() ? target.getLen() : "a directory, not", move.source(), move.size()));
    }
  }

  private void deleteLeftover(Path source) throws IOException {
    if (fs.exists(source)) {
      fs.delete(source, false);
    }
  }

  /** Whether {@code fs} is an object store: directories are implied by keys, and a rename is a copy. */
  static boolean isObjectStore(FileSystem fs) {
    String scheme = fs.getUri().getScheme() == null ? "" : fs.getUri().getScheme().toLowerCase(Locale.ROOT);
    return OBJECT_STORES.contains(scheme);
  }

  private void createDirectories(List<Move> moves) throws IOException {
    if (isObjectStore(fs)) {
      return;
    }
    Set<Path> dirs = new LinkedHashSet<>();
    moves.forEach(move -> dirs.add(move.target().getParent()));
    for (Path dir : dirs) {
      if (!fs.mkdirs(dir)) {
        throw new IOException("Cannot create directory " + dir);
      }
    }
  }

  /** Writes an empty {@code _SUCCESS} file into each directory (again if it is there). */
  void writeSuccessFiles(Set<Path> dirs) throws IOException, InterruptedException {
    List<Future<Void>> writes = new ArrayList<>();
    for (Path dir : dirs) {
      writes.add(pool.submit(() -> {
        fs.create(new Path(dir, HivePaths.SUCCESS_FILE), true).close();
        return null;
      }));
    }
    awaitAll(writes);
  }

  /**
   * Deletes what readers saw at {@code replaced} now that its partition (or table) reads {@code current}: the
   * directory's visible files and its {@code _SUCCESS} marker, never other directories — except that a directory
   * the sink created for an earlier overwrite goes whole. Deleting again deletes nothing.
   */
  int deleteReplaced(Path replaced, Path current) throws IOException {
    if (HivePaths.sameLocation(replaced, current)) {
      return 0;
    }
    if (HivePaths.isOverwriteDir(replaced) && !HivePaths.isAncestor(replaced, current)) {
      int files = countFiles(replaced);
      fs.delete(replaced, true);
      return files;
    }
    int deleted = 0;
    for (FileStatus child : listOrEmpty(replaced)) {
      String name = child.getPath().getName();
      if (child.isFile() && (!HivePaths.isHidden(name) || name.equals(HivePaths.SUCCESS_FILE))) {
        fs.delete(child.getPath(), false);
        deleted++;
      }
    }
    return deleted;
  }

  /** Whether a reader of {@code dir} sees any file there (names that are not hidden). */
  boolean hasVisibleFiles(Path dir) throws IOException {
    for (FileStatus child : listOrEmpty(dir)) {
      if (child.isFile() && !HivePaths.isHidden(child.getPath().getName())) {
        return true;
      }
    }
    return false;
  }

  /** Deletes a directory and what is in it; a failure is logged, not thrown (leftovers are only storage). */
  void deleteQuietly(Path dir) {
    try {
      fs.delete(dir, true);
    } catch (IOException e) {
      LOG.warn("Could not delete {}; it holds no data of the table and can be removed by hand", dir, e);
    }
  }

  /**
   * Deletes {@code dir} and the directories under it that hold no file, bottom-up, each with a non-recursive
   * delete, which the file system refuses for a directory that is not empty: a file staged there meanwhile is never
   * deleted. What cannot be deleted stays; nothing is thrown.
   */
  void deleteEmptyDirectoriesQuietly(Path dir) {
    try {
      deleteEmpty(dir);
    } catch (IOException e) {
      LOG.warn("Could not delete the empty directories under {}; they hold no data of the table and can be removed"
          + " by hand", dir, e);
    }
  }

  private boolean deleteEmpty(Path dir) throws IOException {
    boolean empty = true;
    for (FileStatus child : listOrEmpty(dir)) {
      empty &= child.isDirectory() && deleteEmpty(child.getPath());
    }
    if (!empty) {
      return false;
    }
    try {
      return fs.delete(dir, false);
    } catch (IOException notEmptyNow) {
      return false;
    }
  }

  private int countFiles(Path dir) throws IOException {
    int files = 0;
    for (FileStatus child : listOrEmpty(dir)) {
      files += child.isFile() ? 1 : 0;
    }
    return files;
  }

  private FileStatus[] listOrEmpty(Path dir) throws IOException {
    try {
      return fs.listStatus(dir);
    } catch (FileNotFoundException e) {
      return new FileStatus[0];
    }
  }

  private FileStatus statusOrNull(Path path) throws IOException {
    try {
      return fs.getFileStatus(path);
    } catch (FileNotFoundException e) {
      return null;
    }
  }

  private static <T> void awaitAll(List<Future<T>> futures) throws IOException, InterruptedException {
    try {
      for (Future<T> future : futures) {
        future.get();
      }
    } catch (ExecutionException e) {
      futures.forEach(f -> f.cancel(false));
      if (e.getCause() instanceof IOException io) {
        throw io;
      }
      throw new IOException(e.getCause());
    }
  }

  @Override
  public void close() {
    pool.shutdownNow();
  }
}
