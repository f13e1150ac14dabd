package cdc_merge.iceberg;

import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.types.Types;

/**
 * How many records each snapshot of an Iceberg table added per value of an identity partition.
 *
 * <p>The raw table is partitioned by {@code table_name}, and a snapshot's summary counts the
 * records it added for all source tables together. A mirror that splits its pending snapshots into
 * chunks needs its own table's count, or most of its chunks hold none of its events. The counts
 * come from the manifests the snapshots added (no data file is read). Called from the cdc_spark
 * adapter (adapter/dbt/adapters/cdc_spark/snapshot_events.py).
 */
public final class SnapshotEvents {
  private SnapshotEvents() {}

  /**
   * For each snapshot id of {@code snapshotIds} (comma-separated), one line per partition value:
   * {@code snapshot_id TAB value TAB records}. Records in data files whose spec has no identity
   * partition on {@code column} (or a null value) are counted under a line whose value is the
   * single character {@code *}, so the caller counts them for every table. An unknown snapshot id
   * gives no line.
   */
  public static String addedRecordsByValue(Table table, String snapshotIds, String column) {
    Map<Integer, Integer> positionBySpec = new HashMap<>();
    for (Map.Entry<Integer, PartitionSpec> spec : table.specs().entrySet()) {
      positionBySpec.put(spec.getKey(), identityPosition(table, spec.getValue(), column));
    }
    StringBuilder lines = new StringBuilder();
    for (String id : snapshotIds.split(",")) {
      if (id.isEmpty()) {
        continue;
      }
      Snapshot snapshot = table.snapshot(Long.parseLong(id));
      if (snapshot == null) {
        continue;
      }
      Map<String, Long> records = new HashMap<>();
      for (DataFile file : snapshot.addedDataFiles(table.io())) {
        Integer position = positionBySpec.get(file.specId());
        Object value = position == null || position < 0 ? null : file.partition().get(position, Object.class);
        records.merge(value == null ? "*" : value.toString(), file.recordCount(), Long::sum);
      }
      for (Map.Entry<String, Long> entry : records.entrySet()) {
        lines.append(id).append('\t').append(entry.getKey()).append('\t').append(entry.getValue()).append('\n');
      }
    }
    return lines.toString();
  }

  /** The position of the spec's identity partition field on the column, or -1. */
  private static int identityPosition(Table table, PartitionSpec spec, String column) {
    Types.NestedField source = table.schema().findField(column);
    if (source == null) {
      return -1;
    }
    int position = 0;
    for (PartitionField field : spec.fields()) {
      if (field.sourceId() == source.fieldId() && field.transform().isIdentity()) {
        return position;
      }
      position++;
    }
    return -1;
  }
}
