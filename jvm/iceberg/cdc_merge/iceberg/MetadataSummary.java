package cdc_merge.iceberg;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Comparators;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Types;

/**
 * What the apply asks of a table's Iceberg metadata on every run of every mirror (the idle check,
 * maintenance decisions, the raw table's snapshot log), as text in one call.
 *
 * <p>Read from Python object by object, a table's snapshots cost several py4j round trips each, and
 * a listing's end one exception (0.05-0.1 s a mirror, BENCHMARKS.md "Many mirrors"). Lines of
 * {@code name TAB value}; called from the cdc_spark adapter (adapter/dbt/adapters/cdc_spark/run_state.py).
 */
public final class MetadataSummary {
  private MetadataSummary() {}

  /**
   * {@code current}, then a {@code snapshot} line per snapshot kept: {@code snapshot TAB id TAB
   * parent TAB operation TAB added records} (parent empty for none).
   */
  public static String snapshotLog(Table table) {
    StringBuilder lines = new StringBuilder();
    Snapshot current = table.currentSnapshot();
    lines.append("current\t").append(current == null ? "" : String.valueOf(current.snapshotId())).append('\n');
    for (Snapshot snapshot : table.snapshots()) {
      String added = snapshot.summary().get("added-records");
      lines.append("snapshot\t").append(snapshot.snapshotId())
          .append('\t').append(snapshot.parentId() == null ? "" : String.valueOf(snapshot.parentId()))
          .append('\t').append(snapshot.operation())
          .append('\t').append(added == null ? "0" : added)
          .append('\t').append(snapshot.timestampMillis()).append('\n');
    }
    return lines.toString();
  }

  /**
   * The current snapshot's id and its summary's {@code total-data-files} and
   * {@code total-delete-files} (absent when the summary lacks them), an {@code older} line with the
   * commit time in milliseconds of every other snapshot, and the table property {@code property}.
   * Empty when the table has no snapshot.
   */
  public static String currentState(Table table, String property) {
    Snapshot current = table.currentSnapshot();
    if (current == null) {
      return "";
    }
    StringBuilder lines = new StringBuilder();
    lines.append("current\t").append(current.snapshotId()).append('\n');
    for (String total : new String[] {"total-data-files", "total-delete-files"}) {
      String value = current.summary().get(total);
      if (value != null) {
        lines.append(total).append('\t').append(value).append('\n');
      }
    }
    for (Snapshot snapshot : table.snapshots()) {
      if (snapshot.snapshotId() != current.snapshotId()) {
        lines.append("older\t").append(snapshot.timestampMillis()).append('\n');
      }
    }
    String value = table.properties().get(property);
    if (value != null) {
      lines.append("property\t").append(value.replace('\n', ' ')).append('\n');
    }
    return lines.toString();
  }

  /** Data files of the current snapshot smaller than {@code bytes}: the files compaction would rewrite. */
  public static long smallDataFiles(Table table, long bytes) {
    long small = 0;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask task : tasks) {
        if (task.file().fileSizeInBytes() < bytes) {
          small++;
        }
      }
    } catch (IOException failed) {
      throw new UncheckedIOException(failed);
    }
    return small;
  }

  /**
   * The greatest upper bound of string column {@code column} over the current snapshot's data files,
   * from their manifests (no data file read): {@code upper TAB value}; {@code none} when the table
   * holds no data file; null when a file has no bound for it (its metrics mode keeps none, or the
   * bound could not be rounded up) or there is no such string column. A bound can only be at or
   * above the column's greatest value: rows deleted since still count, and a truncated bound is
   * rounded up. Compared by code point, as Iceberg and Python compare strings.
   */
  public static String columnUpperBound(Table table, String column) {
    Types.NestedField field = table.schema().findField(column);
    if (field == null || !field.type().equals(Types.StringType.get())) {
      return null;
    }
    String greatest = null;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().includeColumnStats().planFiles()) {
      for (FileScanTask task : tasks) {
        ByteBuffer bound = task.file().upperBounds() == null ? null : task.file().upperBounds().get(field.fieldId());
        if (bound == null) {
          return null;
        }
        String value = Conversions.<CharSequence>fromByteBuffer(field.type(), bound).toString();
        if (greatest == null || Comparators.charSequences().compare(value, greatest) > 0) {
          greatest = value;
        }
      }
    } catch (IOException failed) {
      throw new UncheckedIOException(failed);
    }
    return greatest == null ? "none" : "upper\t" + greatest;
  }
}
