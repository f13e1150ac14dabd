package cdc_merge.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system (checksummed, as {@code file://} is by default), setting a new file's
 * permissions through Java instead of a {@code chmod} process.
 *
 * <p>Without Hadoop's native library, which pip's pyspark does not ship, every file Hadoop creates
 * on a local disk forks the JVM to run {@code chmod}: 10-15 ms a file on a 2-core machine, against
 * about 1 ms through {@link Files#setPosixFilePermissions}. An Iceberg commit creates about a dozen
 * files (data, delete, manifests, manifest list, metadata and their checksums), so most of a small
 * batch's commit was spent forking (docs/apply_design.md). Set as {@code fs.file.impl} by the
 * embedded session's settings (python_jobs/landing/io/session.py local_file_system_conf), its jar on
 * the driver's class path: a jar of its own, which needs Hadoop only, as the JVM's class loader
 * would not find the Iceberg classes the other helpers use.
 */
public class LocalFileSystem extends org.apache.hadoop.fs.LocalFileSystem {
  public LocalFileSystem() {
    super(new RawWithoutFork());
  }

  /** The raw local file system whose permissions are set in the JVM. */
  public static class RawWithoutFork extends RawLocalFileSystem {
    @Override
    public void setPermission(Path path, FsPermission permission) throws IOException {
      java.nio.file.Path file = pathToFile(path).toPath();
      try {
        Files.setPosixFilePermissions(file, posix(permission.toShort()));
      } catch (UnsupportedOperationException notPosix) {
        super.setPermission(path, permission);
      }
    }

    private static Set<PosixFilePermission> posix(short mode) {
      PosixFilePermission[] byBit = {
        PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
        PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
        PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
      };
      Set<PosixFilePermission> permissions = EnumSet.noneOf(PosixFilePermission.class);
      for (int bit = 0; bit < byBit.length; bit++) {
        if ((mode & (1 << bit)) != 0) {
          permissions.add(byBit[bit]);
        }
      }
      return permissions;
    }
  }
}
