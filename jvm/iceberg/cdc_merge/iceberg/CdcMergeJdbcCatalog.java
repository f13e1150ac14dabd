package cdc_merge.iceberg;

import java.sql.SQLException;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.jdbc.JdbcCatalog;

/**
 * Iceberg's JDBC catalog whose sessions can join a consistency group's catalog transaction
 * ({@link CatalogTransaction}): the `cluster` target's catalog in the Thrift server
 * ({@code catalog-impl}, python_jobs/cluster/spark_conf.py). Each Spark session has its own
 * instance (Spark makes a session's catalogs), so a joined session stages its commits and every
 * other session, a reader's too, sees the catalog's published rows.
 */
public class CdcMergeJdbcCatalog extends JdbcCatalog {
  private String uri;
  private final Properties connectionProperties = new Properties();
  private boolean typedRows;
  private volatile CatalogTransaction joined;

  @Override
  public void initialize(String name, Map<String, String> properties) {
    super.initialize(name, properties);
    this.uri = properties.get("uri");
    // As JdbcClientPool connects: the catalog's properties under "jdbc.".
    for (Map.Entry<String, String> property : properties.entrySet()) {
      if (property.getKey().startsWith(PROPERTY_PREFIX)) {
        connectionProperties.put(property.getKey().substring(PROPERTY_PREFIX.length()), property.getValue());
      }
    }
    // Schema V1 rows carry iceberg_type (TABLE or VIEW); V0 rows have no such column.
    this.typedRows =
        "V1".equals(properties.getOrDefault(PROPERTY_PREFIX + "schema-version", "V0").toUpperCase(Locale.ROOT));
  }

  @Override
  protected TableOperations newTableOps(TableIdentifier table) {
    return new StagedTableOperations(super.newTableOps(table), table, () -> joined);
  }

  /** From now on this session's commits are staged in the group's transaction of the run. */
  public int join(String group, String runId) {
    this.joined = CatalogTransaction.join(name(), group, runId);
    return joined.stagedTables().size();
  }

  /**
   * Publishes the group's transaction of the run, whichever session staged in it, and returns the
   * tables published (0 when the run has none open: never joined, or published already).
   */
  public int publish(String group, String runId) throws SQLException {
    CatalogTransaction transaction = CatalogTransaction.find(name(), group, runId);
    if (transaction == null) {
      return 0;
    }
    try {
      return transaction.publish(uri, connectionProperties, name(), typedRows, super::newTableOps);
    } finally {
      if (joined == transaction) {
        joined = null;
      }
    }
  }
}
