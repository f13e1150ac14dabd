package cdc_merge.iceberg;

import java.lang.reflect.Method;
import org.apache.iceberg.ExpireSnapshots;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.spark.sql.SparkSession;

/**
 * A table's snapshots expired in the driver, with the files only they referenced: Iceberg's own
 * ExpireSnapshots, its manifest reads and file deletes in the calling thread.
 *
 * <p>Spark's {@code expire_snapshots} procedure finds the files to delete with Spark jobs over the
 * manifests of every snapshot: 1.1-2.2 s for a small table of 30 snapshots, and a maintenance
 * expires up to five tables (docs/maintenance.md). The same expiry here reads the manifests in the
 * driver. The snapshots kept are the caller's (macros/maintenance/expiry.sql: the chain back to the
 * oldest snapshot a mirror, a cut or a recent batch needs); as the procedure is called, every
 * snapshot committed before the oldest of them is expired, but never one of the newest as many as
 * are kept, nor a branch's head. Tables of more than the caller's number of live data and delete
 * files are left to the procedure ({@link #expire} returns null). Called from the cdc_spark adapter
 * (driver_maintenance.py).
 */
public final class SnapshotExpiry {
  private SnapshotExpiry() {}

  /**
   * Expires the snapshots of tableName older than the oldest of keptSnapshotIds (comma-separated),
   * keeping at least as many ancestors of the current one: {snapshots expired, data and delete
   * files deleted}; null when the current snapshot has more than maxFiles live data and delete
   * files, or does not say how many.
   */
  public static long[] expire(SparkSession spark, String tableName, String keptSnapshotIds, long maxFiles) throws Exception {
    Table table = PositionDeletes.load(spark, tableName);
    Snapshot current = table.currentSnapshot();
    if (current == null) {
      return new long[] {0, 0};
    }
    long dataFiles = total(current, "total-data-files");
    long deleteFiles = total(current, "total-delete-files");
    if (dataFiles < 0 || deleteFiles < 0 || dataFiles + deleteFiles > maxFiles) {
      return null;
    }
    String[] kept = keptSnapshotIds.split(",");
    long oldestKept = Long.MAX_VALUE;
    for (String id : kept) {
      Snapshot snapshot = table.snapshot(Long.parseLong(id.trim()));
      if (snapshot == null) {
        throw new IllegalStateException(tableName + " has no snapshot " + id + " to keep: nothing expired");
      }
      oldestKept = Math.min(oldestKept, snapshot.timestampMillis());
    }
    int before = count(table.snapshots());
    // Data and delete files are what the procedure counts; manifests and manifest lists are under the metadata folder.
    String metadataFile = ((HasTableOperations) table).operations().current().metadataFileLocation();
    String metadata = metadataFile.substring(0, metadataFile.lastIndexOf('/') + 1);
    long[] deleted = {0};
    ExpireSnapshots expiry = table.expireSnapshots();
    reachableCleanup(expiry);
    expiry
        .expireOlderThan(oldestKept)
        .retainLast(kept.length)
        .planWith(CallingThread.EXECUTOR)
        .executeDeleteWith(CallingThread.EXECUTOR)
        .deleteWith(path -> {
          if (!path.startsWith(metadata)) {
            deleted[0]++;
          }
          table.io().deleteFile(path);
        })
        .commit();
    table.refresh();
    return new long[] {before - count(table.snapshots()), deleted[0]};
  }

  /**
   * The procedure's rule for which files go: every file no kept snapshot reaches. Iceberg's default
   * for a table with one branch (its incremental cleanup) deletes a file only once the snapshot that
   * removed it expires, so a compaction's old files would stay one expiry longer; the switch is
   * package-private in Iceberg 1.10. Where it is missing, that default applies (safe, later).
   */
  private static void reachableCleanup(ExpireSnapshots expiry) {
    try {
      Method incremental = expiry.getClass().getDeclaredMethod("withIncrementalCleanup", boolean.class);
      incremental.setAccessible(true);
      incremental.invoke(expiry, false);
    } catch (ReflectiveOperationException | RuntimeException missing) {
      // Iceberg's incremental cleanup
    }
  }

  private static long total(Snapshot snapshot, String property) {
    String value = snapshot.summary().get(property);
    return value == null ? -1 : Long.parseLong(value);
  }

  private static int count(Iterable<Snapshot> snapshots) {
    int count = 0;
    for (Snapshot ignored : snapshots) {
      count++;
    }
    return count;
  }
}
