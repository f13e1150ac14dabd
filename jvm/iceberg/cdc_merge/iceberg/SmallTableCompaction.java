package cdc_merge.iceberg;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetricsConfig;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.RewriteFiles;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableUtil;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.util.StructLikeMap;
import org.apache.spark.sql.SparkSession;

/**
 * A small table compacted in the driver: the data files of each partition that has two or more, or
 * any with position deletes, rewritten as one file per partition with the deleted rows left out, and
 * the delete files that then apply to no live data file dropped, in one commit. Files written under
 * an older partition spec make it rewrite every file, into partitions of the current spec.
 *
 * <p>Spark's {@code rewrite_data_files} and {@code rewrite_position_delete_files} plan, read and
 * write through Spark jobs: 0.3-1.0 s a table for the few thousand rows of a mirror, its tombstones,
 * the offsets and runs tables or a young raw table, and a maintenance touches five of them
 * (docs/maintenance.md). The same rewrite here reads with Iceberg's generic reader (the deletes
 * loaded in the calling thread, {@link CallingThreadRecords}) and writes with its generic Parquet
 * writer. Tables larger than the caller's limit, with equality deletes, of a format other than 2, or
 * with a file other than Parquet are left to Spark's procedures ({@link #write} returns null).
 *
 * <p>As Spark's rewrite does, the commit is validated from the snapshot the files were read at and
 * keeps that snapshot's data sequence number: a commit of another process that deleted rows of a
 * rewritten file since fails it (and its files are removed), instead of the rewrite bringing those
 * rows back. Called from the cdc_spark adapter (driver_maintenance.py).
 */
public final class SmallTableCompaction {
  private final Table table;
  private final long startingSnapshot;
  private final long startingSequence;
  private final List<DataFile> rewritten;
  private final List<DeleteFile> removedDeletes;
  private final List<DataFile> added;
  private final int deleteFilesLeft;

  private SmallTableCompaction(Table table, long startingSnapshot, long startingSequence, List<DataFile> rewritten,
      List<DeleteFile> removedDeletes, List<DataFile> added, int deleteFilesLeft) {
    this.table = table;
    this.startingSnapshot = startingSnapshot;
    this.startingSequence = startingSequence;
    this.rewritten = rewritten;
    this.removedDeletes = removedDeletes;
    this.added = added;
    this.deleteFilesLeft = deleteFilesLeft;
  }

  /** The data files of one partition of the snapshot (by their own spec), with the delete files each has. */
  private static final class PartitionFiles {
    final Map<String, DataFile> files = new LinkedHashMap<>();
    final List<FileScanTask> tasks = new ArrayList<>();
    boolean withDeletes;
  }

  /**
   * Writes the compacted files of tableName's current snapshot (none when nothing is worth a
   * rewrite); null when the table is not one this compaction takes: its data and delete files
   * larger than maxBytes together, or not as the product writes them (format 2, Parquet, position
   * deletes).
   */
  public static SmallTableCompaction write(SparkSession spark, String tableName, long maxBytes) throws Exception {
    Table table = PositionDeletes.load(spark, tableName);
    if (TableUtil.formatVersion(table) != 2) {
      return null;
    }
    Snapshot current = table.currentSnapshot();
    if (current == null) {
      return new SmallTableCompaction(table, -1, -1, new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), 0);
    }
    Map<Integer, StructLikeMap<PartitionFiles>> partitions = new HashMap<>();
    Map<String, DeleteFile> deleteFiles = new LinkedHashMap<>();
    Map<String, Set<String>> deletedFrom = new HashMap<>(); // delete file -> the data files it applies to
    long bytes = 0;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().useSnapshot(current.snapshotId()).planFiles()) {
      for (FileScanTask task : tasks) {
        DataFile file = task.file();
        if (file.format() != FileFormat.PARQUET) {
          return null;
        }
        PartitionSpec spec = table.specs().get(file.specId());
        PartitionFiles group = partitions
            .computeIfAbsent(file.specId(), id -> StructLikeMap.create(spec.partitionType()))
            .computeIfAbsent(file.partition(), PartitionFiles::new);
        group.tasks.add(task);
        if (group.files.put(file.location(), file) == null) {
          bytes += file.fileSizeInBytes();
        }
        for (DeleteFile deletes : task.deletes()) {
          if (deletes.content() != FileContent.POSITION_DELETES || deletes.format() != FileFormat.PARQUET) {
            return null;
          }
          group.withDeletes = true;
          deletedFrom.computeIfAbsent(deletes.location(), location -> new HashSet<>()).add(file.location());
          if (deleteFiles.put(deletes.location(), deletes) == null) {
            bytes += deletes.fileSizeInBytes();
          }
        }
        if (bytes > maxBytes) {
          return null;
        }
      }
    }
    // Files of an older spec hold rows of any partition of the current one: with them, every file is rewritten.
    boolean olderSpec = false;
    for (Map.Entry<Integer, StructLikeMap<PartitionFiles>> bySpec : partitions.entrySet()) {
      for (PartitionFiles group : bySpec.getValue().values()) {
        olderSpec |= bySpec.getKey() != table.spec().specId() && worthRewriting(group);
      }
    }
    List<FileScanTask> toRead = new ArrayList<>();
    List<DataFile> rewritten = new ArrayList<>();
    for (StructLikeMap<PartitionFiles> bySpec : partitions.values()) {
      for (PartitionFiles group : bySpec.values()) {
        if (olderSpec || worthRewriting(group)) {
          toRead.addAll(group.tasks);
          rewritten.addAll(group.files.values());
        }
      }
    }
    Set<String> rewrittenLocations = new HashSet<>();
    rewritten.forEach(file -> rewrittenLocations.add(file.location()));
    List<DeleteFile> removedDeletes = new ArrayList<>();
    for (Map.Entry<String, DeleteFile> deletes : deleteFiles.entrySet()) {
      if (rewrittenLocations.containsAll(deletedFrom.get(deletes.getKey()))) {
        removedDeletes.add(deletes.getValue());
      }
    }
    List<DataFile> added = toRead.isEmpty() ? new ArrayList<>() : writeRows(table, toRead);
    return new SmallTableCompaction(table, current.snapshotId(), current.sequenceNumber(), rewritten, removedDeletes, added,
        deleteFiles.size() - removedDeletes.size());
  }

  /** As Spark's rewrite_data_files with min-input-files 2 and delete-file-threshold 1 decides for small files. */
  private static boolean worthRewriting(PartitionFiles group) {
    return group.files.size() >= 2 || group.withDeletes;
  }

  /** The live rows of tasks, as one data file per partition of the table's current spec. */
  private static List<DataFile> writeRows(Table table, List<FileScanTask> tasks) throws IOException {
    Schema schema = table.schema();
    PartitionSpec spec = table.spec();
    PartitionKey partition = new PartitionKey(spec, schema);
    InternalRecordWrapper wrapper = new InternalRecordWrapper(schema.asStruct());
    StructLikeMap<DataWriter<Record>> writers = StructLikeMap.create(spec.partitionType());
    List<String> locations = new ArrayList<>();
    List<DataFile> written = new ArrayList<>();
    try {
      for (FileScanTask task : tasks) {
        try (CloseableIterable<Record> records = CallingThreadRecords.open(task, table.io(), schema, schema, true)) {
          for (Record record : records) {
            // The reader's records may carry the delete filter's _pos after the table's columns.
            Record row = GenericRecord.create(schema);
            for (int i = 0; i < row.size(); i++) {
              row.set(i, record.get(i));
            }
            partition.partition(wrapper.wrap(row));
            DataWriter<Record> writer = writers.get(partition);
            if (writer == null) {
              String location = newLocation(table, spec, spec.isUnpartitioned() ? null : partition);
              locations.add(location);
              writer = newWriter(table, location, spec, spec.isUnpartitioned() ? null : partition.copy());
              writers.put(partition.copy(), writer);
            }
            writer.write(row);
          }
        }
      }
      for (DataWriter<Record> writer : writers.values()) {
        writer.close();
        written.add(writer.toDataFile());
      }
      return written;
    } catch (IOException | RuntimeException failed) {
      for (DataWriter<Record> writer : writers.values()) {
        try {
          writer.close();
        } catch (IOException | RuntimeException ignored) {
          // removed below either way
        }
      }
      locations.forEach(table.io()::deleteFile);
      throw failed;
    }
  }

  private static String newLocation(Table table, PartitionSpec spec, StructLike partition) {
    String name = FileFormat.PARQUET.addExtension("cdc-merge-compacted-" + UUID.randomUUID());
    return partition == null
        ? table.locationProvider().newDataLocation(name)
        : table.locationProvider().newDataLocation(spec, partition, name);
  }

  private static DataWriter<Record> newWriter(Table table, String location, PartitionSpec spec, StructLike partition)
      throws IOException {
    OutputFile out = table.io().newOutputFile(location);
    Schema schema = table.schema();
    return Parquet.writeData(out)
        .schema(schema)
        .createWriterFunc(type -> GenericParquetWriter.create(schema, type))
        .setAll(table.properties())
        .metricsConfig(MetricsConfig.forTable(table))
        .withSpec(spec)
        .withPartition(partition)
        .overwrite()
        .build();
  }

  /** Replaces the rewritten files with the written ones in one commit; the written files are removed if it fails for sure. */
  public void commit() {
    if (rewritten.isEmpty()) {
      return;
    }
    RewriteFiles rewrite = table.newRewrite().scanManifestsWith(CallingThread.EXECUTOR)
        .validateFromSnapshot(startingSnapshot).dataSequenceNumber(startingSequence);
    rewritten.forEach(rewrite::deleteFile);
    removedDeletes.forEach(rewrite::deleteFile);
    added.forEach(rewrite::addFile);
    try {
      rewrite.set("cdc-merge.maintenance", "compaction-in-driver").commit();
    } catch (CommitStateUnknownException unknown) {
      throw unknown; // the files may be part of the table now
    } catch (RuntimeException notCommitted) {
      abort();
      throw notCommitted;
    }
  }

  /** Removes the files written, none of which was committed. */
  public void abort() {
    for (ContentFile<?> file : added) {
      table.io().deleteFile(file.location());
    }
  }

  /** {data files added, data and delete files removed, delete files left}, as the maintenance counts them. */
  public long[] counts() {
    return new long[] {added.size(), rewritten.size() + removedDeletes.size(), deleteFilesLeft};
  }
}
