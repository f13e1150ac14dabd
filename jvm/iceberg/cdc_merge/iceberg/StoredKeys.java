package cdc_merge.iceberg;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The stored rows of a small batch's keys, read from an Iceberg table in the driver.
 *
 * <p>A small batch's classification (macros/materializations/cdc_merge/classify.sql) needs, for
 * each of its keys, the stored row's seq and, to delete it by position, its data file and position.
 * Asked of Spark, that is a query with a scan and a join: a Spark job of its own in every mirror's
 * run. Read here, with Iceberg's generic reader (its scan planning, file pruning and delete files),
 * the answer is a JSON object the classification reads as a constant, and Spark's optimizer computes
 * the classified batch without a job. Only for tables small enough for one thread: the caller
 * gives the most records it reads so (adapter/dbt/adapters/cdc_spark/stored_keys.py).
 */
public final class StoredKeys {
  private static final JsonFactory JSON = new JsonFactory();
  private static final StructType STORED_ROWS = new StructType()
      .add("_cdc_key", DataTypes.StringType)
      .add("_cdc_seq", DataTypes.StringType)
      .add("_cdc_stored_file_hash", DataTypes.LongType)
      .add("_cdc_stored_pos", DataTypes.LongType);

  private StoredKeys() {}

  /**
   * The rows of the table at snapshotId whose keyColumn is one of keys (the first column of keys,
   * a local relation), as a JSON object from key to {"_cdc_seq", and with positions
   * "_cdc_stored_file_hash" (Spark's xxhash64 of the data file's path) and "_cdc_stored_pos"};
   * null when the snapshot holds more than maxRecords rows, or does not say how many.
   * indexMaxKeys above 0: answered from the table's {@link KeyIndex} (built first when none is kept
   * at snapshotId) when the snapshot holds at most that many rows.
   */
  public static String lookup(SparkSession spark, String tableName, long snapshotId, Dataset<Row> keys,
      String keyColumn, String seqColumn, boolean withPositions, long maxRecords, long indexMaxKeys) throws Exception {
    Table table = PositionDeletes.load(spark, tableName);
    Snapshot snapshot = table.snapshot(snapshotId);
    if (snapshot == null) {
      throw new IllegalStateException(tableName + " has no snapshot " + snapshotId);
    }
    Set<String> wanted = new HashSet<>();
    for (Row row : keys.collectAsList()) {
      if (!row.isNullAt(0)) {
        wanted.add(row.getString(0));
      }
    }
    if (indexMaxKeys > 0) {
      KeyIndex index = KeyIndex.at(table, tableName, snapshotId, keyColumn, seqColumn, indexMaxKeys);
      Map<String, KeyIndex.Stored> indexed = index == null ? null : index.rowsOf(snapshotId, wanted);
      if (indexed != null) {
        return indexedRows(indexed, withPositions);
      }
    }
    String records = snapshot.summary().get("total-records");
    if (records == null || Long.parseLong(records) > maxRecords) {
      return null;
    }
    StringWriter out = new StringWriter();
    try (JsonGenerator json = JSON.createGenerator(out)) {
      json.writeStartObject();
      if (!wanted.isEmpty()) {
        writeStoredRows(json, table, snapshotId, wanted, keyColumn, seqColumn, withPositions);
      }
      json.writeEndObject();
    }
    return out.toString();
  }

  /**
   * The rows of the table at snapshotId whose keyColumn is one of keys (the first column of keys),
   * from the table's {@link KeyIndex} (built first when none is kept at snapshotId), as a local
   * relation of _cdc_key, _cdc_seq, _cdc_stored_file_hash and _cdc_stored_pos: what the
   * classification's scan of the stored keys finds (classify.sql stored_keys_sql), for a batch of
   * more keys than a constant holds well. Null when the snapshot holds more than indexMaxKeys rows.
   */
  public static Dataset<Row> indexedRelation(SparkSession spark, String tableName, long snapshotId, Dataset<Row> keys,
      String keyColumn, String seqColumn, long indexMaxKeys) throws Exception {
    Table table = PositionDeletes.load(spark, tableName);
    KeyIndex index = KeyIndex.at(table, tableName, snapshotId, keyColumn, seqColumn, indexMaxKeys);
    if (index == null) {
      return null;
    }
    Set<String> wanted = new HashSet<>();
    for (Row row : keys.collectAsList()) {
      if (!row.isNullAt(0)) {
        wanted.add(row.getString(0));
      }
    }
    Map<String, KeyIndex.Stored> indexed = index.rowsOf(snapshotId, wanted);
    if (indexed == null) {
      return null;
    }
    List<Row> rows = new ArrayList<>(indexed.size());
    for (Map.Entry<String, KeyIndex.Stored> row : indexed.entrySet()) {
      KeyIndex.Stored stored = row.getValue();
      rows.add(RowFactory.create(row.getKey(), stored.seq, stored.fileHash, stored.pos));
    }
    return spark.createDataFrame(rows, STORED_ROWS);
  }

  /** A table without a snapshot holds no rows: the relation of {@link #indexedRelation} with none. */
  public static Dataset<Row> noRows(SparkSession spark) {
    return spark.createDataFrame(new ArrayList<Row>(), STORED_ROWS);
  }

  private static String indexedRows(Map<String, KeyIndex.Stored> rows, boolean withPositions) throws IOException {
    StringWriter out = new StringWriter();
    try (JsonGenerator json = JSON.createGenerator(out)) {
      json.writeStartObject();
      for (Map.Entry<String, KeyIndex.Stored> row : rows.entrySet()) {
        json.writeObjectFieldStart(row.getKey());
        writeStoredRow(json, row.getValue().seq, row.getValue().fileHash, row.getValue().pos, withPositions);
        json.writeEndObject();
      }
      json.writeEndObject();
    }
    return out.toString();
  }

  private static void writeStoredRow(JsonGenerator json, String seq, long fileHash, long pos, boolean withPositions)
      throws IOException {
    if (seq == null) {
      json.writeNullField("_cdc_seq");
    } else {
      json.writeStringField("_cdc_seq", seq);
    }
    if (withPositions) {
      json.writeNumberField("_cdc_stored_file_hash", fileHash);
      json.writeNumberField("_cdc_stored_pos", pos);
    }
  }

  private static void writeStoredRows(JsonGenerator json, Table table, long snapshotId, Set<String> wanted,
      String keyColumn, String seqColumn, boolean withPositions) throws IOException {
    List<Types.NestedField> columns = new ArrayList<>();
    columns.add(table.schema().findField(keyColumn));
    columns.add(table.schema().findField(seqColumn));
    if (withPositions) {
      columns.add(MetadataColumns.FILE_PATH);
      columns.add(MetadataColumns.ROW_POSITION);
    }
    Set<String> seen = new HashSet<>();
    try (CloseableIterable<Record> rows = CallingThreadRecords.read(table.newScan()
        .useSnapshot(snapshotId)
        .filter(Expressions.in(keyColumn, wanted.toArray()))
        .project(new Schema(columns)))) {
      for (Record row : rows) {
        String key = (String) row.get(0);
        // Another row of one key would be two answers to one lookup; the mirror holds one per key.
        if (!seen.add(key)) {
          throw new IllegalStateException(table.name() + " holds the key " + key + " more than once (rows"
              + " written into it by hand?), and applies nothing until one row holds it: run cdc-verify --repair"
              + " --state <the capture's state file>, which deletes the key's rows and reads it again from the"
              + " source (or delete them yourself and read the key again with cdc-snapshot)");
        }
        json.writeObjectFieldStart(key);
        Object seq = row.get(1);
        writeStoredRow(json, seq == null ? null : seq.toString(),
            withPositions ? PositionDeletes.sparkXxhash64(row.get(2).toString()) : 0,
            withPositions ? ((Number) row.get(3)).longValue() : 0, withPositions);
        json.writeEndObject();
      }
    }
  }
}
