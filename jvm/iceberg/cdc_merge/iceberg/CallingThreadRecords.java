package cdc_merge.iceberg;

import java.util.Locale;
import java.util.Map;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.data.DeleteLoader;
import org.apache.iceberg.data.GenericDeleteFilter;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.IdentityPartitionConverters;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.expressions.Evaluator;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.relocated.com.google.common.collect.Iterables;
import org.apache.iceberg.util.PartitionUtil;

/**
 * A table scan's records, read in the driver as {@code IcebergGenerics.read} reads them, but with
 * each data file's position deletes loaded in the calling thread.
 *
 * <p>Iceberg's generic reader loads a data file's deletes on its delete worker pool and polls the
 * pool every 10 ms (its Tasks.waitFor): the small lookups of {@link StoredKeys}, {@link KeyIndex} and
 * {@link SmallTableRows} waited 10 ms for every data file that has deletes, in the demo's cycles
 * about 5 s of waits in 15 cycles (docs/apply_service.md, "Iceberg's 10 ms polls"). The same steps
 * as Iceberg's GenericReader (package-private there): the delete filter's required schema, the
 * file's records with the task's residual as a row-group filter, the deletes applied, the residual
 * on each record. Parquet files only, as the product writes them; a table whose default format is
 * another is read by IcebergGenerics.
 */
final class CallingThreadRecords {
  private CallingThreadRecords() {}

  static CloseableIterable<Record> read(TableScan scan) {
    String format = scan.table().properties().getOrDefault(TableProperties.DEFAULT_FILE_FORMAT, "parquet");
    if (!FileFormat.PARQUET.name().equalsIgnoreCase(format)) {
      IcebergGenerics.ScanBuilder generic = IcebergGenerics.read(scan.table()).where(scan.filter()).project(scan.schema());
      return (scan.snapshot() == null ? generic : generic.useSnapshot(scan.snapshot().snapshotId())).build();
    }
    CloseableIterable<FileScanTask> tasks = scan.planFiles();
    FileIO io = scan.table().io();
    Schema tableSchema = scan.table().schema();
    Schema projection = scan.schema();
    boolean caseSensitive = scan.isCaseSensitive();
    CloseableIterable<Record> records =
        CloseableIterable.concat(Iterables.transform(tasks, task -> open(task, io, tableSchema, projection, caseSensitive)));
    // Closing it closes the data file being read (a reader that stops early) and then the plan's manifests.
    return CloseableIterable.combine(records, () -> {
      try (CloseableIterable<FileScanTask> planned = tasks) {
        records.close();
      }
    });
  }

  /** One task's records: its data file's rows, its deletes applied (loaded in the calling thread). */
  static CloseableIterable<Record> open(FileScanTask task, FileIO io, Schema tableSchema, Schema projection,
      boolean caseSensitive) {
    if (task.file().format() != FileFormat.PARQUET) {
      throw new IllegalStateException("cannot read " + task.file().location() + ": a "
          + task.file().format().name().toLowerCase(Locale.ROOT) + " file in a table whose files are Parquet");
    }
    GenericDeleteFilter deletes = new GenericDeleteFilter(io, task, tableSchema, projection) {
      @Override
      protected DeleteLoader newDeleteLoader() {
        return new BaseDeleteLoader(this::loadInputFile, CallingThread.EXECUTOR);
      }
    };
    Schema readSchema = deletes.requiredSchema();
    Map<Integer, ?> partition = PartitionUtil.constantsMap(task, IdentityPartitionConverters::convertConstant);
    CloseableIterable<Record> records = Parquet.read(io.newInputFile(task.file()))
        .project(readSchema)
        .createReaderFunc(fileSchema -> GenericParquetReaders.buildReader(readSchema, fileSchema, partition))
        .split(task.start(), task.length())
        .caseSensitive(caseSensitive)
        .filter(task.residual())
        .build();
    records = deletes.filter(records);
    Expression residual = task.residual();
    if (residual == null || residual == Expressions.alwaysTrue()) {
      return records;
    }
    InternalRecordWrapper wrapper = new InternalRecordWrapper(readSchema.asStruct());
    Evaluator filter = new Evaluator(readSchema.asStruct(), residual, caseSensitive);
    return CloseableIterable.filter(records, record -> filter.eval(wrapper.wrap(record)));
  }
}
