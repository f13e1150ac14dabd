package cdc_merge.iceberg;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.function.Function;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;

/**
 * The commits of one consistency group's mirrors in one run, kept out of the JDBC catalog until the
 * run publishes them all in one PostgreSQL transaction (the semantics of the REST catalog's
 * {@code transactions/commit}), so that plain reads see the group's runs whole
 * (docs/consistent_cuts.md, "One catalog transaction").
 *
 * <p>A staged commit writes its metadata file as a normal commit does; only the catalog row that
 * points at it waits. Publishing swaps every staged table's row, each conditional on the row still
 * naming the metadata the transaction started from, and commits only if every one matched: a
 * table another process committed meanwhile fails the whole transaction and nothing is published,
 * unless the transaction only appended to it (the offsets, runs and cuts tables, which mirrors
 * outside the group append to as well): those appends are made again on top of the other commit.
 * Nothing published is nothing applied: the run's offsets are staged with its mirrors.
 */
final class CatalogTransaction {
  /** Open transactions of this JVM (a Thrift server), by catalog and group. */
  private static final Map<String, CatalogTransaction> OPEN = new HashMap<>();

  private static final int MAX_REBASES = 3;

  private final String key;
  private final String runId;
  // Per table: the catalog's metadata when the transaction first staged it, and the newest staged.
  private final Map<TableIdentifier, TableMetadata> publishedFrom = new LinkedHashMap<>();
  private final Map<TableIdentifier, TableMetadata> staged = new HashMap<>();
  private boolean open = true;

  private CatalogTransaction(String key, String runId) {
    this.key = key;
    this.runId = runId;
  }

  private static String key(String catalog, String group) {
    return catalog + "/" + group;
  }

  /**
   * The group's transaction for this run: the open one when it is this run's, else a new one. An
   * open transaction of another run belongs to a run that died (runs of one mirror take turns), and
   * is discarded: none of it was published, so none of it was applied.
   */
  static synchronized CatalogTransaction join(String catalog, String group, String runId) {
    String key = key(catalog, group);
    CatalogTransaction current = OPEN.get(key);
    if (current != null && current.runId.equals(runId)) {
      return current;
    }
    if (current != null) {
      current.open = false;
    }
    CatalogTransaction created = new CatalogTransaction(key, runId);
    OPEN.put(key, created);
    return created;
  }

  /** The run's open transaction of the group, or null when it has none (published, or never joined). */
  static synchronized CatalogTransaction find(String catalog, String group, String runId) {
    CatalogTransaction current = OPEN.get(key(catalog, group));
    return current != null && current.runId.equals(runId) ? current : null;
  }

  synchronized boolean isOpen() {
    return open;
  }

  synchronized TableMetadata staged(TableIdentifier table) {
    return staged.get(table);
  }

  synchronized void stage(TableIdentifier table, TableMetadata catalogMetadata, TableMetadata metadata) {
    if (!open) {
      throw discarded(table);
    }
    publishedFrom.putIfAbsent(table, catalogMetadata);
    staged.put(table, metadata);
  }

  CommitFailedException discarded(TableIdentifier table) {
    return new CommitFailedException(
        "Cannot commit %s: the catalog transaction of %s for run %s is closed (published, failed, or"
            + " discarded when another run of the group started: then none of this run's group was"
            + " published, and a run started after the other has ended applies it)",
        table, key, runId);
  }

  /**
   * Publishes every staged table in one database transaction and closes this transaction.
   * Returns the tables published.
   */
  int publish(
      String uri,
      Properties connectionProperties,
      String catalogName,
      boolean typedRows,
      Function<TableIdentifier, TableOperations> catalogOperations)
      throws SQLException {
    List<TableIdentifier> tables;
    synchronized (this) {
      if (!open) {
        throw discarded(null);
      }
      open = false;
      tables = new ArrayList<>(publishedFrom.keySet());
    }
    synchronized (CatalogTransaction.class) {
      if (OPEN.get(key) == this) {
        OPEN.remove(key);
      }
    }
    if (tables.isEmpty()) {
      return 0;
    }
    String update =
        "UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?"
            + " WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?"
            + (typedRows ? " AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)" : "");
    try (Connection connection = DriverManager.getConnection(uri, connectionProperties)) {
      connection.setAutoCommit(false);
      try (PreparedStatement statement = connection.prepareStatement(update)) {
        for (TableIdentifier table : tables) {
          TableMetadata from = publishedFrom.get(table);
          TableMetadata to = staged.get(table);
          for (int attempt = 0; !swap(statement, catalogName, table, from, to); attempt++) {
            // Another process committed the table since: appends only (the bookkeeping tables that
            // every mirror appends its rows to) are made again on top of its commit.
            if (attempt == MAX_REBASES || !appendsOnly(from, to)) {
              throw new CommitFailedException(
                  "Cannot publish the catalog transaction of %s: %s was committed by another process"
                      + " since the run read it (its metadata is no longer %s); nothing was"
                      + " published, the next run applies the group again",
                  key, table, from.metadataFileLocation());
            }
            TableOperations catalogs = catalogOperations.apply(table);
            CatalogTransaction rebase = new CatalogTransaction(key, runId);
            AppendFiles append =
                new BaseTable(new StagedTableOperations(catalogs, table, () -> rebase), table.toString())
                    .newFastAppend();
            for (Snapshot snapshot : stagedSnapshots(from, to)) {
              snapshot.addedDataFiles(catalogs.io()).forEach(append::appendFile);
            }
            append.commit();
            from = rebase.publishedFrom.get(table);
            to = rebase.staged.get(table);
          }
        }
        connection.commit();
      } catch (SQLException | RuntimeException e) {
        connection.rollback();
        throw e;
      }
    }
    return tables.size();
  }

  private static boolean swap(
      PreparedStatement statement, String catalogName, TableIdentifier table, TableMetadata from, TableMetadata to)
      throws SQLException {
    statement.setString(1, to.metadataFileLocation());
    statement.setString(2, from.metadataFileLocation());
    statement.setString(3, catalogName);
    statement.setString(4, String.join(".", table.namespace().levels()));
    statement.setString(5, table.name());
    statement.setString(6, from.metadataFileLocation());
    return statement.executeUpdate() == 1;
  }

  /** The snapshots the transaction added to the table's main branch, oldest first. */
  private static List<Snapshot> stagedSnapshots(TableMetadata from, TableMetadata to) {
    Long stop = from.currentSnapshot() == null ? null : from.currentSnapshot().snapshotId();
    List<Snapshot> added = new ArrayList<>();
    for (Snapshot snapshot = to.currentSnapshot();
        snapshot != null && !Objects.equals(snapshot.snapshotId(), stop);
        snapshot = snapshot.parentId() == null ? null : to.snapshot(snapshot.parentId())) {
      added.add(0, snapshot);
    }
    return added;
  }

  /** Whether the transaction only appended data files to the table, with its schema and settings as they were. */
  private static boolean appendsOnly(TableMetadata from, TableMetadata to) {
    return from.currentSchemaId() == to.currentSchemaId()
        && from.defaultSpecId() == to.defaultSpecId()
        && from.properties().equals(to.properties())
        && stagedSnapshots(from, to).stream().allMatch(s -> DataOperations.APPEND.equals(s.operation()));
  }

  /** The tables staged so far, for messages and tests. */
  synchronized List<TableIdentifier> stagedTables() {
    return Collections.unmodifiableList(new ArrayList<>(publishedFrom.keySet()));
  }
}
