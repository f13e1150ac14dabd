package cdc_merge.iceberg;

import java.util.Locale;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.spark.PathIdentifier;
import org.apache.iceberg.spark.SparkCatalog;
import org.apache.iceberg.util.PropertyUtil;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.analysis.NoSuchProcedureException;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.iceberg.catalog.Procedure;
import org.apache.spark.sql.connector.iceberg.catalog.ProcedureParameter;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Iceberg's SparkCatalog with the cdc_merge apply's helpers as procedures, for a Spark Thrift
 * Server, where dbt reaches Spark through SQL only (python_jobs/cluster/, the `cluster` target).
 *
 * <p>In dbt's own SparkSession the adapter calls {@link PositionDeletes} and {@link KeyRanges}
 * through py4j; through a Thrift server the same methods run as
 * {@code CALL lake.system.snapshot_position_deletes(...)} and the two below, in the server.
 */
public class CdcMergeSparkCatalog extends SparkCatalog {
  // Named snapshot_*: Iceberg's SQL extensions parse a CALL only when its text names one of
  // Iceberg's own procedures ("system.snapshot" is one); Spark's own parser has no CALL.
  static final String POSITION_DELETES_UNSUPPORTED = "snapshot_position_deletes_unsupported";
  static final String DELETE_ROWS_BY_POSITION = "snapshot_position_deletes";
  static final String KEY_RANGE_SKIPS_FILES = "snapshot_key_range_skips_files";
  static final String JOIN_CATALOG_TRANSACTION = "snapshot_catalog_transaction_join";
  static final String PUBLISH_CATALOG_TRANSACTION = "snapshot_catalog_transaction_publish";

  @Override
  public Procedure loadProcedure(Identifier ident) throws NoSuchProcedureException {
    String[] namespace = ident.namespace();
    if (namespace.length == 1 && namespace[0].equalsIgnoreCase("system")) {
      switch (ident.name().toLowerCase(Locale.ROOT)) {
        case POSITION_DELETES_UNSUPPORTED:
          return new PositionDeletesUnsupported();
        case DELETE_ROWS_BY_POSITION:
          return new DeleteRowsByPosition();
        case KEY_RANGE_SKIPS_FILES:
          return new KeyRangeSkipsFiles();
        case JOIN_CATALOG_TRANSACTION:
          return new CatalogTransactionStep(this, false);
        case PUBLISH_CATALOG_TRANSACTION:
          return new CatalogTransactionStep(this, true);
        default:
          break;
      }
    }
    return super.loadProcedure(ident);
  }

  /**
   * DROP TABLE ... PURGE: the catalog entry dropped, then the table's files deleted here in the
   * driver, as the Iceberg catalog's own purge does. Iceberg's SparkCatalog deletes them with a
   * Spark action instead, whose jobs over the manifests took 1-3 s for each batch's changes table
   * of a few files on the cluster.
   */
  @Override
  public boolean purgeTable(Identifier ident) {
    if (ident instanceof PathIdentifier) {
      return super.purgeTable(ident);
    }
    Catalog catalog = icebergCatalog();
    TableIdentifier name = buildIdentifier(ident);
    Table table;
    try {
      table = catalog.loadTable(name);
    } catch (org.apache.iceberg.exceptions.NoSuchTableException e) {
      return false;
    }
    ValidationException.check(
        PropertyUtil.propertyAsBoolean(table.properties(), TableProperties.GC_ENABLED, TableProperties.GC_ENABLED_DEFAULT),
        "Cannot purge table: GC is disabled (deleting files may corrupt other tables)");
    TableMetadata metadata = ((HasTableOperations) table).operations().current();
    if (!catalog.dropTable(name, false)) {
      return false;
    }
    // A folder catalog deletes the table's folder with its entry: nothing is left to delete.
    if (table.io().newInputFile(metadata.metadataFileLocation()).exists()) {
      CatalogUtil.dropTableData(table.io(), metadata);
    }
    return true;
  }

  private static String text(InternalRow args, int ordinal) {
    return args.isNullAt(ordinal) ? null : args.getUTF8String(ordinal).toString();
  }

  private static InternalRow[] oneRow(Object value) {
    return new InternalRow[] {new GenericInternalRow(new Object[] {value})};
  }

  /** (table) -> reason: why the table's rows cannot be deleted by position, null when they can. */
  static final class PositionDeletesUnsupported implements Procedure {
    @Override
    public ProcedureParameter[] parameters() {
      return new ProcedureParameter[] {ProcedureParameter.required("table", DataTypes.StringType)};
    }

    @Override
    public StructType outputType() {
      return new StructType().add("reason", DataTypes.StringType, true);
    }

    @Override
    public InternalRow[] call(InternalRow args) {
      try {
        String reason = PositionDeletes.unsupportedReason(SparkSession.active(), text(args, 0));
        return oneRow(reason == null ? null : UTF8String.fromString(reason));
      } catch (Exception e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
    }
  }

  /**
   * (table, branch, positions_sql, expected_positions) -> delete_files: deletes the rows at the
   * positions the query gives (columns file_hash, pos) from the branch, in one commit.
   */
  static final class DeleteRowsByPosition implements Procedure {
    @Override
    public ProcedureParameter[] parameters() {
      return new ProcedureParameter[] {
        ProcedureParameter.required("table", DataTypes.StringType),
        ProcedureParameter.required("branch", DataTypes.StringType),
        ProcedureParameter.required("positions_sql", DataTypes.StringType),
        ProcedureParameter.required("expected_positions", DataTypes.LongType)
      };
    }

    @Override
    public StructType outputType() {
      return new StructType().add("delete_files", DataTypes.IntegerType, false);
    }

    @Override
    public InternalRow[] call(InternalRow args) {
      SparkSession spark = SparkSession.active();
      // One row per data file reaches the driver, as in adapter/dbt/adapters/cdc_spark/position_deletes.py.
      org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> positionsByFile =
          spark
              .sql(text(args, 2))
              .groupBy("file_hash")
              .agg(
                  functions
                      .sort_array(functions.collect_list(functions.col("pos").cast("long")))
                      .alias("positions"));
      try {
        return oneRow(
            PositionDeletes.commit(spark, text(args, 0), text(args, 1), positionsByFile, args.getLong(3)));
      } catch (Exception e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
    }
  }

  /** (table, column, lower, upper) -> skips: whether a read of column between the bounds skips a data file. */
  static final class KeyRangeSkipsFiles implements Procedure {
    @Override
    public ProcedureParameter[] parameters() {
      return new ProcedureParameter[] {
        ProcedureParameter.required("table", DataTypes.StringType),
        ProcedureParameter.required("column", DataTypes.StringType),
        ProcedureParameter.required("lower", DataTypes.StringType),
        ProcedureParameter.required("upper", DataTypes.StringType)
      };
    }

    @Override
    public StructType outputType() {
      return new StructType().add("skips", DataTypes.BooleanType, false);
    }

    @Override
    public InternalRow[] call(InternalRow args) {
      try {
        return oneRow(
            KeyRanges.skipsDataFiles(
                SparkSession.active(), text(args, 0), text(args, 1), text(args, 2), text(args, 3)));
      } catch (Exception e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
    }
  }

  /**
   * (consistency_group, run_id) -> tables: joins this session to the group's catalog transaction
   * of the run (the tables staged so far), or publishes it (the tables published), on a catalog
   * that has them ({@link CdcMergeJdbcCatalog}).
   */
  static final class CatalogTransactionStep implements Procedure {
    private final CdcMergeSparkCatalog catalog;
    private final boolean publish;

    CatalogTransactionStep(CdcMergeSparkCatalog catalog, boolean publish) {
      this.catalog = catalog;
      this.publish = publish;
    }

    @Override
    public ProcedureParameter[] parameters() {
      return new ProcedureParameter[] {
        ProcedureParameter.required("consistency_group", DataTypes.StringType),
        ProcedureParameter.required("run_id", DataTypes.StringType)
      };
    }

    @Override
    public StructType outputType() {
      return new StructType().add("tables", DataTypes.IntegerType, false);
    }

    @Override
    public InternalRow[] call(InternalRow args) {
      if (!(catalog.icebergCatalog() instanceof CdcMergeJdbcCatalog)) {
        throw new IllegalStateException(
            "catalog transactions need the catalog's catalog-impl to be "
                + CdcMergeJdbcCatalog.class.getName() + ", not " + catalog.icebergCatalog().getClass().getName());
      }
      CdcMergeJdbcCatalog jdbc = (CdcMergeJdbcCatalog) catalog.icebergCatalog();
      try {
        return oneRow(publish ? jdbc.publish(text(args, 0), text(args, 1)) : jdbc.join(text(args, 0), text(args, 1)));
      } catch (java.sql.SQLException e) {
        throw new IllegalStateException(e.getMessage(), e);
      }
    }
  }
}
