package cdc_merge.iceberg;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.MetricsConfig;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.spark.SparkSchemaUtil;
import org.apache.iceberg.spark.data.SparkParquetWriters;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A small batch applied to a mirror in one Iceberg commit on main: the stored rows it replaces
 * deleted by position and its new rows added as one data file, both written in the driver.
 *
 * <p>The branch path (a branch, deletes by position committed to it, an INSERT committed to it, a
 * fast-forward of main, the branch dropped) costs five statements and four metadata commits per
 * batch, most of a small mirror's run (docs/apply_design.md). For a batch of at most a few
 * thousand rows this writes the same files in the driver and commits them as one RowDelta, which
 * readers see at once or not at all. {@link #write} writes the files; {@link #commit} adds them,
 * validated against the snapshot the batch was classified at: a data file removed since
 * (compaction by another process) or any data or delete file another writer committed to main since
 * (another run of the same mirror, e.g. on another machine, that inserted the same new keys or
 * deleted the same stored rows) fails the commit, with nothing of it committed, instead of leaving a
 * row undeleted or a key twice; {@link #abort} removes them. Called from the cdc_spark adapter (position_deletes.py).
 */
public final class OneCommitBatch {
  /** Names an append's snapshot, so that the append knows the table's current snapshot is its own. */
  private static final String APPEND_ID = "cdc-merge.append-id";
  private static final String KEY_COLUMN = "_cdc_key";
  private static final String SEQ_COLUMN = "_cdc_seq";

  private final Table table;
  private final String tableName;
  private final long classifiedAt;
  private final List<String> referenced;
  private final List<DeleteFile> deletes;
  private final DataFile rows;
  private final List<String> removedKeys;
  private final WrittenRows written;

  private OneCommitBatch(Table table, String tableName, long classifiedAt, List<String> referenced, List<DeleteFile> deletes,
      List<String> removedKeys, WrittenRows written) {
    this.table = table;
    this.tableName = tableName;
    this.classifiedAt = classifiedAt;
    this.referenced = referenced;
    this.deletes = deletes;
    this.rows = written == null ? null : written.file;
    this.removedKeys = removedKeys;
    this.written = written;
  }

  /** A data file written, with the keys and seqs of its rows by position (for the {@link KeyIndex}). */
  private static final class WrittenRows {
    final DataFile file;
    final List<String> keys = new ArrayList<>();
    final List<String> seqs = new ArrayList<>();

    WrittenRows(DataFile file) {
      this.file = file;
    }
  }

  /**
   * Writes the batch's files. positions: a row per position to delete ({@code file_hash}, {@code pos},
   * as {@link PositionDeletes#commit} takes them but not grouped by file, and optionally the key
   * stored there, {@code _cdc_key}, which lets the table's {@link KeyIndex} follow the commit), as
   * the classification read them at snapshot classifiedAt of main, expectedPositions of them.
   * newRows: the rows to add, by column name (columns of the table it lacks are null), expectedRows of them.
   */
  public static OneCommitBatch write(
      SparkSession spark, String tableName, long classifiedAt, Dataset<Row> positions, long expectedPositions,
      Dataset<Row> newRows, long expectedRows) throws Exception {
    Table table = PositionDeletes.load(spark, tableName);
    Snapshot current = table.currentSnapshot();
    if (current == null || current.snapshotId() != classifiedAt) {
      throw new IllegalStateException(tableName + " was written since its batch was classified at snapshot " + classifiedAt
          + " (now " + (current == null ? "none" : current.snapshotId()) + "): run again");
    }
    List<Row> positionRows = positions.collectAsList();
    PositionDeletes.Positions byFile = PositionDeletes.Positions.ofRows(
        tableName, "snapshot " + classifiedAt, table.newScan().useSnapshot(classifiedAt), positionRows, expectedPositions);
    List<DeleteFile> deletes = byFile.dataFiles.isEmpty()
        ? Collections.emptyList()
        : PositionDeletes.writeAll(table, byFile.dataFiles, byFile.positionsOfFiles);
    try {
      WrittenRows written = expectedRows == 0 ? null : writeRows(table, tableName, newRows, expectedRows);
      return new OneCommitBatch(table, tableName, classifiedAt, byFile.dataFiles, deletes, keysOf(positions, positionRows), written);
    } catch (Exception failed) {
      PositionDeletes.removeAll(table, deletes);
      throw failed;
    }
  }

  /** The keys of the positions, or null when they do not carry them. */
  private static List<String> keysOf(Dataset<Row> positions, List<Row> positionRows) {
    int keyColumn = Arrays.asList(positions.columns()).indexOf(KEY_COLUMN);
    if (keyColumn < 0) {
      return null;
    }
    List<String> keys = new ArrayList<>();
    for (Row row : positionRows) {
      keys.add(row.isNullAt(keyColumn) ? null : row.getString(keyColumn));
    }
    return keys;
  }

  /**
   * newRows (by column name, as {@link #write} takes them, expectedRows of them) appended to main of
   * tableName in one commit, as one data file written in the driver: a few bookkeeping rows
   * (adapter/dbt/adapters/cdc_spark/kept_rows_in_driver.py) without a Spark write job. Returns
   * {parent snapshot id, the commit's snapshot id}, so that a reader that knew the parent's rows
   * knows the commit's (followed_rows.py follows the offsets and runs tables so); null when nothing was
   * appended, the table had no snapshot before, or another commit followed this one at once.
   */
  public static long[] append(SparkSession spark, String tableName, Dataset<Row> newRows, long expectedRows) throws Exception {
    if (expectedRows == 0) {
      return null;
    }
    Table table = PositionDeletes.load(spark, tableName);
    DataFile rows = writeRows(table, tableName, newRows, expectedRows).file;
    String appendId = UUID.randomUUID().toString();
    try {
      table.newAppend().scanManifestsWith(CallingThread.EXECUTOR).appendFile(rows)
          .set("cdc-merge.apply", "rows-in-driver").set(APPEND_ID, appendId).commit();
    } catch (CommitStateUnknownException unknown) {
      throw unknown; // the file may be part of the table now
    } catch (RuntimeException notAdded) {
      table.io().deleteFile(rows.location());
      throw notAdded;
    }
    // The commit refreshed the table: its current snapshot is this append's, unless another followed at once.
    Snapshot committed = table.currentSnapshot();
    if (committed == null || committed.parentId() == null || !appendId.equals(committed.summary().get(APPEND_ID))) {
      return null;
    }
    return new long[] {committed.parentId(), committed.snapshotId()};
  }

  /** Adds the files to main in one commit; the files are removed if it fails for sure. */
  public void commit() {
    // The check in write() is not atomic: another writer may commit between it and this commit. These
    // validations are, since Iceberg repeats them on every commit attempt against the table it refreshed.
    RowDelta delta = table.newRowDelta().scanManifestsWith(CallingThread.EXECUTOR).validateFromSnapshot(classifiedAt)
        .conflictDetectionFilter(Expressions.alwaysTrue()).validateNoConflictingDataFiles().validateNoConflictingDeleteFiles();
    deletes.forEach(delta::addDeletes);
    if (rows != null) {
      delta.addRows(rows);
    }
    if (!deletes.isEmpty()) {
      delta.set("cdc-merge.deletes", "by-position"); // as PositionDeletes marks its commits
    }
    try {
      delta.validateDataFilesExist(referenced).validateDeletedFiles().set("cdc-merge.apply", "one-commit").commit();
    } catch (CommitStateUnknownException unknown) {
      KeyIndex.committed(table, tableName, classifiedAt, null, null, null, null, 0);
      throw unknown; // the files may be part of the table now
    } catch (ValidationException conflict) {
      abort();
      throw new ValidationException(conflict, "%s was committed by another writer since its batch was classified at snapshot %s"
          + " (another run of this mirror?): nothing of this batch was committed; run again (%s)", tableName, classifiedAt,
          conflict.getMessage());
    } catch (RuntimeException notAdded) {
      abort();
      throw notAdded;
    }
    // The commit refreshed the table: its current snapshot is this commit's, unless another followed at once.
    boolean keysKnown = removedKeys != null && (written == null || written.keys.size() == written.file.recordCount());
    KeyIndex.committed(table, tableName, classifiedAt, table.currentSnapshot(), keysKnown ? removedKeys : null,
        written == null ? Collections.emptyList() : written.keys, written == null ? Collections.emptyList() : written.seqs,
        written == null ? 0 : PositionDeletes.sparkXxhash64(written.file.location()));
  }

  /** Removes the files written, none of which was committed. */
  public void abort() {
    PositionDeletes.removeAll(table, deletes);
    if (rows != null) {
      table.io().deleteFile(rows.location());
    }
  }

  public int deleteFiles() {
    return deletes.size();
  }

  public long rowsAdded() {
    return rows == null ? 0 : rows.recordCount();
  }

  /**
   * The rows as one Parquet data file of the table, its columns cast to the table's types, with the
   * keys and seqs of its rows when the table has {@value #KEY_COLUMN} and {@value #SEQ_COLUMN}.
   */
  private static WrittenRows writeRows(Table table, String tableName, Dataset<Row> newRows, long expectedRows) throws IOException {
    StructType tableType = SparkSchemaUtil.convert(table.schema());
    Map<String, String> given = new HashMap<>();
    for (String column : newRows.columns()) {
      given.put(column.toLowerCase(Locale.ROOT), column);
    }
    List<Column> columns = new ArrayList<>();
    for (StructField field : tableType.fields()) {
      String name = given.get(field.name().toLowerCase(Locale.ROOT));
      Column value = name == null ? functions.lit(null) : functions.col("`" + name.replace("`", "``") + "`");
      columns.add(value.cast(field.dataType()).as(field.name()));
    }
    InternalRow[] collected = (InternalRow[]) newRows.select(columns.toArray(new Column[0]))
        .queryExecution().executedPlan().executeCollect();
    if (collected.length != expectedRows) {
      throw new IllegalStateException("the rows to add to " + tableName + " are " + collected.length + ", expected " + expectedRows);
    }
    String name = "cdc-merge-rows-" + UUID.randomUUID();
    OutputFile out = table.io().newOutputFile(table.locationProvider().newDataLocation(FileFormat.PARQUET.addExtension(name)));
    DataWriter<InternalRow> writer = Parquet.writeData(out)
        .schema(table.schema())
        .createWriterFunc(messageType -> SparkParquetWriters.buildWriter(tableType, messageType))
        .setAll(table.properties())
        .metricsConfig(MetricsConfig.forTable(table))
        .withSpec(table.spec())
        .overwrite()
        .build();
    try (DataWriter<InternalRow> closing = writer) {
      for (InternalRow row : collected) {
        closing.write(row);
      }
    } catch (IOException | RuntimeException failed) {
      table.io().deleteFile(out.location());
      throw failed;
    }
    WrittenRows written = new WrittenRows(writer.toDataFile());
    int key = fieldIndex(tableType, KEY_COLUMN);
    int seq = fieldIndex(tableType, SEQ_COLUMN);
    if (key >= 0 && seq >= 0) {
      for (InternalRow row : collected) {
        written.keys.add(row.isNullAt(key) ? null : row.getUTF8String(key).toString());
        Object value = row.isNullAt(seq) ? null : row.get(seq, tableType.fields()[seq].dataType());
        written.seqs.add(value == null ? null : value.toString());
      }
    }
    return written;
  }

  private static int fieldIndex(StructType type, String name) {
    StructField[] fields = type.fields();
    for (int i = 0; i < fields.length; i++) {
      if (fields[i].name().equalsIgnoreCase(name)) {
        return i;
      }
    }
    return -1;
  }
}
