package cdc_merge.iceberg;

import java.sql.SQLException;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.jdbc.JdbcClientPool;

/**
 * Iceberg's JDBC catalog whose sessions can join a consistency group's catalog transaction
 * ({@link CatalogTransaction}): the `cluster` target's catalog in the Thrift server
 * ({@code catalog-impl}, python_jobs/cluster/spark_conf.py). Each Spark session has its own
 * instance (Spark makes a session's catalogs), so a joined session stages its commits and every
 * other session, a reader's too, sees the catalog's published rows.
 *
 * <p>Spark never closes a session's catalogs, and a JDBC catalog keeps its pool of database
 * connections open: with a pool per session, the Thrift server's sessions (dbt opens one per model,
 * readers one per query) used up the database's connections. The sessions of this JVM share one pool
 * per database instead.
 */
public class CdcMergeJdbcCatalog extends JdbcCatalog {
  private static final Map<String, JdbcClientPool> SHARED_POOLS = new ConcurrentHashMap<>();

  private String uri;
  private final Properties connectionProperties = new Properties();
  private boolean typedRows;
  private volatile CatalogTransaction joined;

  public CdcMergeJdbcCatalog() {
    super(
        null,
        properties ->
            SHARED_POOLS.computeIfAbsent(
                new TreeMap<>(properties).toString(),
                key -> new JdbcClientPool(properties.get("uri"), properties)),
        true);
  }

  /** The shared pool stays open for the JVM's other sessions (its FileIO, Hadoop's, holds nothing). */
  @Override
  public void close() {}

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
