package cdc_merge.iceberg;

import java.util.Objects;
import java.util.UUID;
import java.util.function.Supplier;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.encryption.EncryptionManager;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.LocationProvider;

/**
 * A JDBC catalog table's operations that, while the session has joined a catalog transaction,
 * stage commits in it instead of swapping the catalog row, and read the staged metadata back, so
 * that the run's later statements see its own commits and every other session sees none until the
 * transaction publishes ({@link CatalogTransaction}). Outside a transaction, and for a table's
 * creation, they are the catalog's own operations.
 */
final class StagedTableOperations implements TableOperations {
  private final TableOperations catalogs;
  private final TableIdentifier table;
  private final Supplier<CatalogTransaction> joined;

  StagedTableOperations(TableOperations catalogs, TableIdentifier table, Supplier<CatalogTransaction> joined) {
    this.catalogs = catalogs;
    this.table = table;
    this.joined = joined;
  }

  private TableMetadata staged() {
    CatalogTransaction transaction = joined.get();
    return transaction == null ? null : transaction.staged(table);
  }

  @Override
  public TableMetadata current() {
    TableMetadata staged = staged();
    return staged != null ? staged : catalogs.current();
  }

  @Override
  public TableMetadata refresh() {
    TableMetadata staged = staged();
    return staged != null ? staged : catalogs.refresh();
  }

  @Override
  public void commit(TableMetadata base, TableMetadata metadata) {
    CatalogTransaction transaction = joined.get();
    if (transaction == null || base == null) {
      catalogs.commit(base, metadata);
      return;
    }
    if (!transaction.isOpen()) {
      throw transaction.discarded(table);
    }
    TableMetadata staged = transaction.staged(table);
    // The transaction keeps the first of these: publishing is conditional on the row still naming it.
    TableMetadata from = staged != null ? staged : catalogs.refresh();
    if (!Objects.equals(base.metadataFileLocation(), from.metadataFileLocation())) {
      throw new CommitFailedException(
          "Cannot commit %s: metadata location %s has changed from %s",
          table, base.metadataFileLocation(), from.metadataFileLocation());
    }
    String location = writeMetadata(metadata, nextVersion(from.metadataFileLocation()));
    transaction.stage(table, from, TableMetadataParser.read(io(), location));
  }

  private String writeMetadata(TableMetadata metadata, int version) {
    String codec =
        metadata.property(TableProperties.METADATA_COMPRESSION, TableProperties.METADATA_COMPRESSION_DEFAULT);
    String location =
        metadataFileLocation(
            String.format(
                "%05d-%s%s",
                version,
                UUID.randomUUID(),
                TableMetadataParser.getFileExtension(TableMetadataParser.Codec.fromName(codec))));
    TableMetadataParser.write(metadata, io().newOutputFile(location));
    return location;
  }

  /** The version after a metadata file's (Iceberg names them NNNNN-uuid.metadata.json). */
  static int nextVersion(String metadataLocation) {
    String name = metadataLocation.substring(metadataLocation.lastIndexOf('/') + 1);
    int dash = name.indexOf('-');
    try {
      return Integer.parseInt(name.substring(0, dash)) + 1;
    } catch (RuntimeException e) {
      return 1;
    }
  }

  @Override
  public FileIO io() {
    return catalogs.io();
  }

  @Override
  public EncryptionManager encryption() {
    return catalogs.encryption();
  }

  @Override
  public String metadataFileLocation(String fileName) {
    return catalogs.metadataFileLocation(fileName);
  }

  @Override
  public LocationProvider locationProvider() {
    return catalogs.locationProvider();
  }

  @Override
  public TableOperations temp(TableMetadata uncommittedMetadata) {
    return catalogs.temp(uncommittedMetadata);
  }

  @Override
  public long newSnapshotId() {
    return catalogs.newSnapshotId();
  }
}
