package cdc_merge.iceberg;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetricsConfig;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.deletes.PositionDelete;
import org.apache.iceberg.deletes.PositionDeleteWriter;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.spark.Spark3Util;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.XXH64;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Deleting rows of an Iceberg table by the positions a query found them at, without a second
 * scan of the table.
 *
 * <p>The cdc_merge apply reads the mirror's {@code _file} and {@code _pos} while it classifies a
 * batch; {@link #commit} writes the positions of the replaced rows as Parquet position delete
 * files (one per data file, in the driver) and adds them to a branch of the mirror in one commit.
 * Spark SQL has no statement for this: a MERGE or DELETE finds the rows again with a join over
 * the whole table (BENCHMARKS.md, "Applied since (7)"). Called from the cdc_spark adapter
 * (adapter/dbt/adapters/cdc_spark/position_deletes.py).
 */
public final class PositionDeletes {
  // The seed of Spark SQL's xxhash64 (XxHash64 expression).
  private static final long SPARK_HASH_SEED = 42L;

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

  /**
   * Deletes rows of the table's branch in one commit: one position delete file per data file.
   *
   * <p>positionsByFile has a row per data file: {@code file_hash}, Spark's {@code xxhash64} of the
   * rows' {@code _file} (a long travels through the classification's joins far cheaper than a path:
   * 1.5 s less at 1M rows), and {@code positions} (array of bigint, ascending), their {@code _pos},
   * both as read from the branch. Every hash must be that of exactly one live data file of the
   * branch and every position a row inside it, and together they must be expectedPositions
   * positions: anything else is refused before the commit, since a position that points nowhere
   * would silently delete nothing. The commit fails if a data file they name was removed since the
   * branch's current snapshot. Unless the outcome of the commit is unknown, the files written are
   * removed when they are not added.
   *
   * @return the number of delete files added
   */
  public static int commit(
      SparkSession spark, String tableName, String branch, Dataset<Row> positionsByFile, long expectedPositions)
      throws Exception {
    Table table = load(spark, tableName);
    Snapshot start = table.snapshot(branch);
    if (start == null) {
      throw new IllegalStateException(tableName + " has no branch " + branch);
    }
    Positions positions = Positions.of(tableName, "branch " + branch, table.newScan().useRef(branch), positionsByFile, expectedPositions);
    List<String> referenced = positions.dataFiles;
    if (referenced.isEmpty()) {
      return 0;
    }
    List<DeleteFile> written = writeAll(table, referenced, positions.positionsOfFiles);
    try {
      RowDelta delta = table.newRowDelta().scanManifestsWith(CallingThread.EXECUTOR)
          .toBranch(branch).validateFromSnapshot(start.snapshotId());
      written.forEach(delta::addDeletes);
      delta.validateDataFilesExist(referenced).validateDeletedFiles().set("cdc-merge.deletes", "by-position").commit();
      return written.size();
    } catch (CommitStateUnknownException unknown) {
      throw unknown; // the files may be part of the table now
    } catch (Exception notAdded) {
      removeAll(table, written);
      throw notAdded;
    }
  }

  /** The rows to delete, by data file, once checked against the live data files of a scan of the table. */
  static final class Positions {
    final List<String> dataFiles = new ArrayList<>();
    final List<List<Long>> positionsOfFiles = new ArrayList<>();

    /** positionsByFile as commit takes it; where names the scanned ref in messages. */
    static Positions of(String tableName, String where, TableScan scan, Dataset<Row> positionsByFile, long expectedPositions)
        throws IOException {
      Map<Long, List<Long>> byFile = new LinkedHashMap<>();
      for (Row file : positionsByFile.collectAsList()) {
        Long fileHash = file.isNullAt(file.fieldIndex("file_hash")) ? null : file.getLong(file.fieldIndex("file_hash"));
        byFile.put(fileHash, file.getList(file.fieldIndex("positions")));
      }
      return checked(tableName, where, scan, byFile, expectedPositions);
    }

    /**
     * positions with a row per position ({@code file_hash}, {@code pos}), grouped and sorted here
     * in the driver: for a small batch kept in the driver (OneCommitBatch), where a Spark
     * aggregation would cost a job with a shuffle.
     */
    static Positions ofRows(String tableName, String where, TableScan scan, List<Row> positions, long expectedPositions)
        throws IOException {
      Map<Long, List<Long>> byFile = new LinkedHashMap<>();
      for (Row row : positions) {
        Long fileHash = row.isNullAt(0) ? null : row.getLong(0);
        byFile.computeIfAbsent(fileHash, hash -> new ArrayList<>()).add(row.isNullAt(1) ? null : ((Number) row.get(1)).longValue());
      }
      for (List<Long> filePositions : byFile.values()) {
        filePositions.sort(Comparator.nullsFirst(Comparator.naturalOrder()));
      }
      return checked(tableName, where, scan, byFile, expectedPositions);
    }

    private static Positions checked(
        String tableName, String where, TableScan scan, Map<Long, List<Long>> byFile, long expectedPositions) throws IOException {
      Map<Long, DataFile> liveFiles = liveDataFilesByHash(scan);
      Positions found = new Positions();
      long positions = 0;
      for (Map.Entry<Long, List<Long>> file : byFile.entrySet()) {
        found.dataFiles.add(checkPositions(tableName, where, file.getKey(), file.getValue(), liveFiles));
        found.positionsOfFiles.add(file.getValue());
        positions += file.getValue().size();
      }
      if (positions != expectedPositions) {
        throw new IllegalStateException(
            "the positions to delete from " + tableName + " are " + positions + ", expected " + expectedPositions);
      }
      return found;
    }
  }

  /**
   * One delete file per data file, written on as many threads as the driver has cores: a 10k-event
   * batch into 30M rows touches every data file (BENCHMARKS.md, "Applied since (8)"). When one fails,
   * the others are waited for and removed.
   */
  static List<DeleteFile> writeAll(Table table, List<String> dataFiles, List<List<Long>> positionsOfFiles)
      throws Exception {
    String batch = "cdc-merge-deletes-" + UUID.randomUUID();
    int threads = Math.min(dataFiles.size(), Runtime.getRuntime().availableProcessors());
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<DeleteFile>> writes = new ArrayList<>();
      for (int i = 0; i < dataFiles.size(); i++) {
        String name = batch + "-" + i;
        String dataFile = dataFiles.get(i);
        List<Long> rowPositions = positionsOfFiles.get(i);
        writes.add(pool.submit(() -> write(table, name, dataFile, rowPositions)));
      }
      List<DeleteFile> written = new ArrayList<>();
      Exception failure = null;
      for (Future<DeleteFile> write : writes) {
        try {
          written.add(write.get());
        } catch (ExecutionException failed) {
          if (failure == null) {
            failure = failed.getCause() instanceof Exception ? (Exception) failed.getCause() : failed;
          }
        }
      }
      if (failure != null) {
        removeAll(table, written);
        throw failure;
      }
      return written;
    } finally {
      pool.shutdownNow();
    }
  }

  static void removeAll(Table table, List<DeleteFile> written) {
    for (DeleteFile deletes : written) {
      table.io().deleteFile(deletes.location());
    }
  }

  /** The path of the data file whose positions these are, once they are known to fit it. */
  private static String checkPositions(
      String tableName, String where, Long fileHash, List<Long> positions, Map<Long, DataFile> liveFiles) {
    DataFile file = fileHash == null ? null : liveFiles.get(fileHash);
    if (file == null) {
      throw new IllegalStateException("cannot delete rows of the file with hash " + fileHash + ": "
          + (fileHash != null && liveFiles.containsKey(fileHash) ? "two live data files have it" : "it is not a live data file")
          + " of " + tableName + " at " + where);
    }
    String dataFile = file.location();
    long rows = file.recordCount();
    long previous = -1;
    for (Long position : positions) {
      if (position == null || position <= previous || position >= rows) {
        throw new IllegalStateException("cannot delete position " + position + " of " + dataFile + ", which has "
            + rows + " rows (positions must ascend, each once, after " + previous + ")");
      }
      previous = position;
    }
    return dataFile;
  }

  /** The positions of one data file as a Parquet position delete file, written as Iceberg writes them. */
  private static DeleteFile write(Table table, String name, String dataFile, List<Long> positions) throws IOException {
    OutputFile out = table.io().newOutputFile(table.locationProvider().newDataLocation(FileFormat.PARQUET.addExtension(name)));
    PositionDeleteWriter<Object> writer = Parquet.writeDeletes(out)
        .withSpec(table.spec())
        .setAll(table.properties())
        .metricsConfig(MetricsConfig.forPositionDelete(table))
        .overwrite()
        .buildPositionWriter();
    PositionDelete<Object> delete = PositionDelete.create();
    try (PositionDeleteWriter<Object> closing = writer) {
      for (Long position : positions) {
        closing.write(delete.set(dataFile, position));
      }
    } catch (IOException | RuntimeException failed) {
      table.io().deleteFile(out.location());
      throw failed;
    }
    // Named so that readers of other data files skip it without looking at its bounds.
    return FileMetadata.deleteFileBuilder(table.spec()).copy(writer.toDeleteFile()).withReferencedDataFile(dataFile).build();
  }

  static Table load(SparkSession spark, String tableName) throws Exception {
    // The name resolves in the session's current catalog, which Spark reads from the calling
    // thread's active session: a py4j thread has none, and would get spark_catalog.
    SparkSession.setActiveSession(spark);
    return Spark3Util.loadIcebergTable(spark, tableName);
  }

  /** Spark SQL's xxhash64 of a string: how the apply's queries name a data file (xxhash64(_file)). */
  static long sparkXxhash64(String text) {
    UTF8String bytes = UTF8String.fromString(text);
    return XXH64.hashUnsafeBytes(bytes.getBaseObject(), bytes.getBaseOffset(), bytes.numBytes(), SPARK_HASH_SEED);
  }

  /** The scan's live data files by Spark's xxhash64 of their path; null for a hash two of them share. */
  private static Map<Long, DataFile> liveDataFilesByHash(TableScan scan) throws IOException {
    Map<Long, DataFile> files = new HashMap<>();
    try (CloseableIterable<FileScanTask> tasks = scan.planFiles()) {
      for (FileScanTask task : tasks) {
        long hash = sparkXxhash64(task.file().location());
        DataFile known = files.get(hash);
        boolean same = known != null && known.location().equals(task.file().location());
        files.put(hash, files.containsKey(hash) && !same ? null : task.file().copyWithoutStats());
      }
    }
    return files;
  }
}
