package cdc_merge.iceberg;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.iceberg.LockManager;

/**
 * The embedded catalog's commit lock, held across the processes of one machine.
 *
 * <p>Iceberg's Hadoop catalog commits a table by checking that the next version's metadata file
 * does not exist and renaming its own into place, under a lock of its {@code lock-impl}; its
 * default lock is one JVM's. A local file system's rename replaces a file that appeared in between,
 * so two processes committing the same version at the same instant (two landings into one raw
 * table, two runs appending offsets rows) both succeeded and one commit was lost. Here the lock is
 * also an OS file lock (fcntl, released when its process dies), so the second process
 * finds the version taken and Iceberg retries its commit on top of the first
 * (tests/test_catalog_commits.py). The lock files, a fixed number of stripes by the locked name,
 * live under the system temp folder beside the runs' own locks (python_jobs/run_locks.py).
 */
public final class FileLockManager implements LockManager {
  static final int STRIPES = 64;
  static final String FOLDER = "cdc_merge_catalog_locks";
  static final String TIMEOUT_MS = "lock.acquire-timeout-ms";
  static final long DEFAULT_TIMEOUT_MS = 180_000;

  /** One JVM's threads take a stripe in turn: the OS lock is the whole process's. */
  private static final Map<Path, ReentrantLock> IN_THIS_JVM = new ConcurrentHashMap<>();

  private final Map<String, Held> held = new ConcurrentHashMap<>();
  private long timeoutMs = DEFAULT_TIMEOUT_MS;

  private static final class Held {
    final ReentrantLock inJvm;
    final FileChannel channel;
    final FileLock lock;

    Held(ReentrantLock inJvm, FileChannel channel, FileLock lock) {
      this.inJvm = inJvm;
      this.channel = channel;
      this.lock = lock;
    }
  }

  @Override
  public void initialize(Map<String, String> properties) {
    if (properties.containsKey(TIMEOUT_MS)) {
      timeoutMs = Long.parseLong(properties.get(TIMEOUT_MS));
    }
  }

  /** The file whose OS lock stands for entityId's (tests/test_catalog_commits.py takes it from another process). */
  public static String lockFile(String entityId) {
    return Paths.get(System.getProperty("java.io.tmpdir"), FOLDER, "stripe-" + Math.floorMod(entityId.hashCode(), STRIPES) + ".lock")
        .toString();
  }

  @Override
  public boolean acquire(String entityId, String ownerId) {
    Path file = Paths.get(lockFile(entityId));
    ReentrantLock inJvm = IN_THIS_JVM.computeIfAbsent(file, ignored -> new ReentrantLock());
    long deadline = System.currentTimeMillis() + timeoutMs;
    try {
      if (!inJvm.tryLock(timeoutMs, TimeUnit.MILLISECONDS)) {
        return false;
      }
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt();
      return false;
    }
    FileChannel channel = null;
    try {
      try {
        channel = open(file);
      } catch (java.nio.file.AccessDeniedException anotherUsers) {
        // Another user's lock file: this process's commits keep to the JVM's lock, as Iceberg's own.
        warnOnce(file + " is another user's: commits of this process are locked in this JVM only");
        held.put(key(entityId, ownerId), new Held(inJvm, null, null));
        return true;
      }
      FileLock lock = channel.tryLock();
      while (lock == null) {
        if (System.currentTimeMillis() > deadline) {
          throw new IOException("another process holds " + file + " for longer than " + timeoutMs + " ms");
        }
        Thread.sleep(1);
        lock = channel.tryLock();
      }
      held.put(key(entityId, ownerId), new Held(inJvm, channel, lock));
      return true;
    } catch (IOException | InterruptedException failed) {
      if (failed instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      closeQuietly(channel);
      inJvm.unlock();
      return false;
    }
  }

  @Override
  public boolean release(String entityId, String ownerId) {
    Held lock = held.remove(key(entityId, ownerId));
    if (lock == null) {
      return false;
    }
    try {
      if (lock.lock != null) {
        lock.lock.release();
      }
      return true;
    } catch (IOException error) {
      return false;
    } finally {
      closeQuietly(lock.channel);
      lock.inJvm.unlock();
    }
  }

  @Override
  public void close() {}

  /** The lock file, made writable by every user of the machine where this process may. */
  private static FileChannel open(Path file) throws IOException {
    Path folder = file.getParent();
    if (!Files.isDirectory(folder)) {
      Files.createDirectories(folder);
      everyone(folder, "rwxrwxrwx");
    }
    boolean created = !Files.exists(file);
    FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    if (created) {
      everyone(file, "rw-rw-rw-");
    }
    return channel;
  }

  private static void everyone(Path path, String permissions) {
    try {
      Files.setPosixFilePermissions(path, java.nio.file.attribute.PosixFilePermissions.fromString(permissions));
    } catch (IOException | UnsupportedOperationException notPermitted) {
      // another user made it, or a file system without POSIX permissions: left as it is
    }
  }

  private static volatile boolean warned;

  private static void warnOnce(String message) {
    if (!warned) {
      warned = true;
      System.err.println("cdc_merge: " + message);
    }
  }

  private static String key(String entityId, String ownerId) {
    return entityId + "\u0000" + ownerId;
  }

  private static void closeQuietly(FileChannel channel) {
    if (channel != null) {
      try {
        channel.close();
      } catch (IOException ignored) {
        // the lock goes with the channel or the process
      }
    }
  }
}
