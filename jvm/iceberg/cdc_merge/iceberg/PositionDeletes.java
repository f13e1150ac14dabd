package cdc_merge.iceberg;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.MetricsConfig;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.parquet.ParquetUtil;
import org.apache.iceberg.spark.Spark3Util;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Types;
import org.apache.spark.sql.SparkSession;

/**
 * Deleting rows of an Iceberg table by the positions a query found them at, without a second
 * scan of the table.
 *
 * <p>The cdc_merge apply reads the mirror's {@code _file} and {@code _pos} while it classifies a
 * batch; Spark then writes the positions of the replaced rows as Parquet position delete files
 * (one per data file), and {@link #commit} adds them to a branch of the mirror in one commit.
 * Spark SQL has no statement for this: a MERGE or DELETE finds the rows again with a join over
 * the whole table (BENCHMARKS.md, "Applied since (7)"). Called from the cdc_spark adapter
 * (adapter/dbt/adapters/cdc_spark/iceberg.py).
 */
public final class PositionDeletes {
  private static final int FILE_PATH_ID = MetadataColumns.DELETE_FILE_PATH.fieldId();
  private static final int POS_ID = MetadataColumns.DELETE_FILE_POS.fieldId();

  private PositionDeletes() {}

  /** Why rows of the table cannot be deleted by position here, or null when they can. */
  public static String unsupportedReason(SparkSession spark, String tableName) throws Exception {
    Table table = load(spark, tableName);
    int formatVersion = TableUtil.formatVersion(table);
    if (formatVersion != 2) {
      // Format 3 takes deletion vectors, not position delete files.
      return "it is an Iceberg format-version " + formatVersion + " table (position delete files need version 2)";
    }
    for (PartitionSpec spec : table.specs().values()) {
      if (!spec.isUnpartitioned()) {
        return "it is partitioned (" + spec.fields() + ")";
      }
    }
    return null;
  }

  /** A new, empty folder in the table's data location for one batch's position delete files. */
  public static String newDirectory(SparkSession spark, String tableName) throws Exception {
    Table table = load(spark, tableName);
    return table.locationProvider().newDataLocation("cdc-merge-deletes-" + UUID.randomUUID());
  }

  /**
   * Adds the Parquet position delete files under directory to branch of the table in one commit.
   *
   * <p>Each file must hold the positions of one data file that is live in the branch, sorted,
   * with Iceberg's field ids (Spark writes them from the columns' {@code parquet.field.id}
   * metadata), and together they must hold expectedPositions rows: anything else is refused
   * before the commit, since a position that points nowhere would silently delete nothing.
   * The commit fails if a data file they name was removed since the branch's current snapshot.
   * Unless the outcome of the commit is unknown, the files are removed when they are not added.
   *
   * @return the number of delete files added
   */
  public static int commit(SparkSession spark, String tableName, String branch, String directory, long expectedPositions)
      throws Exception {
    Path root = new Path(directory);
    FileSystem fs = root.getFileSystem(spark.sessionState().newHadoopConf());
    try {
      return addDeleteFiles(spark, tableName, branch, fs, root, expectedPositions);
    } catch (CommitStateUnknownException unknown) {
      throw unknown; // the files may be part of the table now
    } catch (Exception notAdded) {
      fs.delete(root, true);
      throw notAdded;
    }
  }

  private static int addDeleteFiles(
      SparkSession spark, String tableName, String branch, FileSystem fs, Path root, long expectedPositions)
      throws Exception {
    Table table = load(spark, tableName);
    Snapshot start = table.snapshot(branch);
    if (start == null) {
      throw new IllegalStateException(tableName + " has no branch " + branch);
    }
    Map<String, Long> liveRows = liveDataFileRows(table, branch);
    MetricsConfig metricsConfig = MetricsConfig.forPositionDelete(table);
    RowDelta delta = table.newRowDelta().toBranch(branch).validateFromSnapshot(start.snapshotId());
    List<String> referenced = new ArrayList<>();
    long positions = 0;
    for (LocatedFileStatus status : parquetFiles(fs, root)) {
      String path = status.getPath().toString();
      Metrics metrics = ParquetUtil.fileMetrics(table.io().newInputFile(path), metricsConfig);
      String dataFile = onlyDataFile(path, metrics);
      Long rows = liveRows.get(dataFile);
      if (rows == null) {
        throw new IllegalStateException(path + " deletes rows of " + dataFile + ", which is not a live data file of "
            + tableName + " at branch " + branch);
      }
      long lastPosition = Conversions.<Long>fromByteBuffer(Types.LongType.get(), metrics.upperBounds().get(POS_ID));
      if (lastPosition >= rows) {
        throw new IllegalStateException(path + " deletes position " + lastPosition + " of " + dataFile + ", which has "
            + rows + " rows");
      }
      positions += metrics.recordCount();
      referenced.add(dataFile);
      DeleteFile deletes = FileMetadata.deleteFileBuilder(table.spec())
          .ofPositionDeletes()
          .withPath(path)
          .withFormat(FileFormat.PARQUET)
          .withFileSizeInBytes(status.getLen())
          .withMetrics(metrics)
          .withReferencedDataFile(dataFile)
          .build();
      delta.addDeletes(deletes);
    }
    if (positions != expectedPositions) {
      throw new IllegalStateException(root + " holds " + positions + " positions, expected " + expectedPositions);
    }
    if (referenced.isEmpty()) {
      return 0;
    }
    delta.validateDataFilesExist(referenced).validateDeletedFiles().set("cdc-merge.deletes", "by-position").commit();
    return referenced.size();
  }

  private static Table load(SparkSession spark, String tableName) throws Exception {
    // The name resolves in the session's current catalog, which Spark reads from the calling
    // thread's active session: a py4j thread has none, and would get spark_catalog.
    SparkSession.setActiveSession(spark);
    return Spark3Util.loadIcebergTable(spark, tableName);
  }

  private static List<LocatedFileStatus> parquetFiles(FileSystem fs, Path root) throws IOException {
    List<LocatedFileStatus> files = new ArrayList<>();
    RemoteIterator<LocatedFileStatus> listing = fs.listFiles(root, true);
    while (listing.hasNext()) {
      LocatedFileStatus status = listing.next();
      if (status.getPath().getName().endsWith(".parquet")) {
        files.add(status);
      }
    }
    return files;
  }

  private static String onlyDataFile(String path, Metrics metrics) {
    ByteBuffer lower = metrics.lowerBounds() == null ? null : metrics.lowerBounds().get(FILE_PATH_ID);
    ByteBuffer upper = metrics.upperBounds() == null ? null : metrics.upperBounds().get(FILE_PATH_ID);
    if (lower == null || upper == null || metrics.upperBounds().get(POS_ID) == null) {
      throw new IllegalStateException(path + " has no bounds for Iceberg's position delete field ids "
          + FILE_PATH_ID + " and " + POS_ID + " (was it written with spark.sql.parquet.fieldId.write.enabled=false?)");
    }
    String first = Conversions.<CharSequence>fromByteBuffer(Types.StringType.get(), lower).toString();
    String last = Conversions.<CharSequence>fromByteBuffer(Types.StringType.get(), upper).toString();
    if (!first.equals(last)) {
      throw new IllegalStateException(path + " deletes rows of more than one data file (" + first + " .. " + last + ")");
    }
    return first;
  }

  private static Map<String, Long> liveDataFileRows(Table table, String branch) throws IOException {
    Map<String, Long> rows = new HashMap<>();
    try (CloseableIterable<FileScanTask> tasks = table.newScan().useRef(branch).planFiles()) {
      for (FileScanTask task : tasks) {
        rows.put(task.file().location(), task.file().recordCount());
      }
    }
    return rows;
  }
}
