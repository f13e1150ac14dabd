package cdc_merge.iceberg;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.spark.SparkSchemaUtil;
import org.apache.iceberg.types.Types;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;

/**
 * Some columns of a small Iceberg table, read in the driver as a local relation.
 *
 * <p>The offsets and runs rows of a run are written by INSERTs whose SELECT reads the offsets, runs
 * and quarantine tables (each mirror's newest offset ordinal, its previous run, the lines quarantined
 * since): three Spark scans, each a job with its scan planning, where the tables hold a few thousand
 * rows, or of many more of which only the newest matter. Read here with Iceberg's generic reader
 * (file pruning, delete files applied), the same SELECT reads local relations instead
 * (adapter/dbt/adapters/cdc_spark/kept_rows_in_driver.py).
 */
public final class SmallTableRows {
  private SmallTableRows() {}

  /**
   * The columns of tableName's current snapshot as a local relation: only the rows whose
   * filterColumn is one of filterValues (when filterColumn is not null), and whose sinceColumn is at
   * or after sinceMicros (when sinceColumn is not null; the data files before it are not read).
   * Null when more than maxRecords rows would be read, when everyValue is set and some filter value
   * has no row, and when there is no such table yet (the caller's SQL creates it). A table with no
   * snapshot has no rows.
   */
  public static Dataset<Row> read(SparkSession spark, String tableName, String[] columns, String filterColumn,
      String[] filterValues, String sinceColumn, long sinceMicros, boolean everyValue, long maxRecords) throws Exception {
    Table table;
    try {
      table = PositionDeletes.load(spark, tableName);
    } catch (NoSuchTableException missing) {
      return null;
    }
    List<Types.NestedField> fields = new ArrayList<>();
    for (String column : columns) {
      Types.NestedField field = table.schema().findField(column);
      if (field == null) {
        throw new IllegalArgumentException(tableName + " lacks one of the columns " + String.join(", ", columns));
      }
      fields.add(field);
    }
    Schema projected = new Schema(fields); // in the order asked, as the view's columns
    List<Row> rows = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    Snapshot snapshot = table.currentSnapshot();
    if (snapshot != null) {
      TableScan scan = table.newScan().useSnapshot(snapshot.snapshotId()).select(columns);
      Expression filter = Expressions.alwaysTrue();
      if (filterColumn != null) {
        filter = Expressions.and(filter, Expressions.in(filterColumn, (Object[]) filterValues));
      }
      if (sinceColumn != null) {
        filter = Expressions.and(filter, Expressions.greaterThanOrEqual(sinceColumn, sinceMicros));
      }
      boolean java8Times = spark.sessionState().conf().datetimeJava8ApiEnabled();
      int filterAt = filterColumn == null ? -1 : indexOf(projected, filterColumn);
      try (CloseableIterable<Record> read = CallingThreadRecords.read(scan.filter(filter))) {
        for (Record record : read) {
          if (rows.size() >= maxRecords) {
            return null;
          }
          Object[] values = new Object[columns.length];
          for (int i = 0; i < columns.length; i++) {
            values[i] = sparkValue(record.getField(projected.columns().get(i).name()), java8Times);
          }
          if (filterAt >= 0) {
            seen.add(String.valueOf(values[filterAt]));
          }
          rows.add(RowFactory.create(values));
        }
      }
    }
    if (everyValue && filterColumn != null && !seen.containsAll(Arrays.asList(filterValues))) {
      return null;
    }
    return spark.createDataFrame(rows, SparkSchemaUtil.convert(projected));
  }

  private static int indexOf(Schema projected, String column) {
    for (int i = 0; i < projected.columns().size(); i++) {
      if (projected.columns().get(i).name().equals(column)) {
        return i;
      }
    }
    throw new IllegalArgumentException("the filter column " + column + " is not one of the columns read");
  }

  /** An Iceberg generic value as Spark's Row holds it for the converted type. */
  private static Object sparkValue(Object value, boolean java8Times) {
    if (value instanceof OffsetDateTime) {
      OffsetDateTime moment = (OffsetDateTime) value;
      return java8Times ? moment.toInstant() : Timestamp.from(moment.toInstant());
    }
    if (value instanceof LocalDate) {
      return java8Times ? value : Date.valueOf((LocalDate) value);
    }
    if (value == null || value instanceof String || value instanceof Long || value instanceof Integer
        || value instanceof Double || value instanceof Float || value instanceof Boolean
        || value instanceof BigDecimal || value instanceof LocalDateTime) {
      return value;
    }
    if (value instanceof ByteBuffer) {
      ByteBuffer bytes = ((ByteBuffer) value).duplicate();
      byte[] copy = new byte[bytes.remaining()];
      bytes.get(copy);
      return copy;
    }
    throw new IllegalArgumentException("a value of " + value.getClass().getName() + " is not read in the driver");
  }
}
