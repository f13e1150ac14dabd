package cdc_merge.iceberg;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.catalog.ViewCatalog;
import org.apache.iceberg.hadoop.HadoopCatalog;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.hadoop.Util;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.util.LocationUtil;
import org.apache.iceberg.view.BaseMetastoreViewCatalog;
import org.apache.iceberg.view.View;
import org.apache.iceberg.view.ViewBuilder;
import org.apache.iceberg.view.ViewOperations;

/**
 * Iceberg's Hadoop catalog (a warehouse folder, the embedded target's catalog) with views, which
 * Iceberg's own has not: dbt's default materialization over the mirrors works there as on a
 * catalog with views ({@code catalog-impl}, set by python_jobs/landing/io/session.py).
 *
 * <p>A view lives where a table of its name would, {@code <warehouse>/<namespace>/<view>}, with its
 * metadata files in {@code view-metadata/} (not {@code metadata/}, which would make the folder a
 * table to the Hadoop catalog) and the current one named in {@code view-metadata/version-hint.text}
 * ({@link HadoopViewOperations}). Such a folder is neither a table nor a namespace here.
 *
 * <p>A table or view is dropped so that a process dying at any moment of the drop leaves its name
 * either whole or gone: the folder stops being one in a single rename of its metadata folder, and
 * its files are deleted after. (Iceberg's own drop deletes the folder file by file in no set order:
 * a run killed half way through a full refresh left a current metadata file whose manifests were
 * gone, and every later run failed reading it.)
 */
public class CdcMergeHadoopCatalog extends HadoopCatalog implements ViewCatalog {
  static final String VIEW_METADATA = "view-metadata";
  static final String VERSION_HINT = "version-hint.text";

  private final Views views = new Views();
  private String warehouse;
  private FileIO viewIO;

  @Override
  public void initialize(String name, Map<String, String> properties) {
    // Commits serialized across this machine's processes (FileLockManager), unless the settings name another lock.
    Map<String, String> withLock = new java.util.HashMap<>(properties);
    withLock.putIfAbsent(CatalogProperties.LOCK_IMPL, FileLockManager.class.getName());
    super.initialize(name, withLock);
    this.warehouse = LocationUtil.stripTrailingSlash(properties.get(CatalogProperties.WAREHOUSE_LOCATION));
    views.initialize(name, properties);
  }

  static final String DROPPED = "-dropped-";
  static final String DROP_CRASH_POINT = "table-drop";

  @Override
  public List<Namespace> listNamespaces(Namespace namespace) {
    return super.listNamespaces(namespace).stream()
        .filter(child -> !isView(folder(child)) && !holdsDroppedMetadata(folder(child)))
        .collect(Collectors.toList());
  }

  @Override
  public boolean dropTable(TableIdentifier identifier, boolean purge) {
    if (!isValidIdentifier(identifier)) {
      return super.dropTable(identifier, purge);
    }
    TableMetadata last = newTableOps(identifier).current();
    if (last == null) {
      return false;
    }
    if (purge && writesOutsideItsFolder(last)) {
      return super.dropTable(identifier, true);
    }
    return dropFolder(new Path(defaultWarehouseLocation(identifier)), "metadata");
  }

  /** True when the table's data may lie outside its folder, where deleting the folder would not purge it. */
  private static boolean writesOutsideItsFolder(TableMetadata table) {
    Map<String, String> properties = table.properties();
    return properties.containsKey(TableProperties.WRITE_DATA_LOCATION)
        || properties.containsKey("write.object-storage.path")
        || properties.containsKey("write.folder-storage.path")
        || Boolean.parseBoolean(properties.getOrDefault(TableProperties.OBJECT_STORE_ENABLED, "false"));
  }

  /**
   * Renames folder/metadataFolder away (after which the folder is no longer a table or view), then
   * deletes the folder. A death after the rename leaves files no name refers to: a later create of
   * the name writes beside them, and the next drop removes them.
   */
  private boolean dropFolder(Path folder, String metadataFolder) {
    try {
      FileSystem fs = fileSystem(folder);
      Path metadata = new Path(folder, metadataFolder);
      Path dropped = new Path(folder, metadataFolder + DROPPED + UUID.randomUUID());
      if (!fs.rename(metadata, dropped)) {
        throw new IOException("could not rename " + metadata + " to " + dropped + " to drop " + folder);
      }
      fs.delete(dropped, true);
      CrashPoints.crashPoint(DROP_CRASH_POINT);
      return fs.delete(folder, true);
    } catch (IOException error) {
      throw new UncheckedIOException(error);
    }
  }

  private boolean holdsDroppedMetadata(Path folder) {
    try {
      return fileSystem(folder).listStatus(folder, path -> path.getName().contains(DROPPED)).length > 0;
    } catch (java.io.FileNotFoundException gone) {
      return false;
    } catch (IOException error) {
      throw new UncheckedIOException(error);
    }
  }

  @Override
  public List<TableIdentifier> listViews(Namespace namespace) {
    Path parent = folder(namespace);
    List<TableIdentifier> found = new ArrayList<>();
    try {
      FileSystem fs = fileSystem(parent);
      if (!fs.isDirectory(parent)) {
        return found;
      }
      for (FileStatus status : fs.listStatus(parent)) {
        if (status.isDirectory() && isView(status.getPath())) {
          found.add(TableIdentifier.of(namespace, status.getPath().getName()));
        }
      }
    } catch (IOException error) {
      throw new UncheckedIOException(error);
    }
    return found;
  }

  @Override
  public View loadView(TableIdentifier identifier) {
    return views.loadView(identifier);
  }

  @Override
  public ViewBuilder buildView(TableIdentifier identifier) {
    return views.buildView(identifier);
  }

  @Override
  public boolean dropView(TableIdentifier identifier) {
    Path location = new Path(viewLocation(identifier));
    if (!isView(location)) {
      return false;
    }
    return dropFolder(location, VIEW_METADATA);
  }

  @Override
  public void renameView(TableIdentifier from, TableIdentifier to) {
    throw new UnsupportedOperationException("Cannot rename a view of a Hadoop catalog: create it under the new name");
  }

  String viewLocation(TableIdentifier identifier) {
    return folder(identifier.namespace()) + "/" + identifier.name();
  }

  private Path folder(Namespace namespace) {
    return namespace.isEmpty() ? new Path(warehouse) : new Path(warehouse, String.join("/", namespace.levels()));
  }

  /** A folder with a view's hint, or (a commit that died replacing the hint) a view's metadata file. */
  private boolean isView(Path folder) {
    Path metadata = new Path(folder, VIEW_METADATA);
    try {
      FileSystem fs = fileSystem(folder);
      return fs.exists(new Path(metadata, VERSION_HINT))
          || fs.listStatus(metadata, path -> path.getName().endsWith(".metadata.json")).length > 0;
    } catch (java.io.FileNotFoundException notAView) {
      return false;
    } catch (IOException error) {
      throw new UncheckedIOException(error);
    }
  }

  FileSystem fileSystem(Path path) {
    return Util.getFs(path, getConf());
  }

  static String read(FileSystem fs, Path path) throws IOException {
    try (java.io.InputStream in = fs.open(path)) {
      return new String(readAll(in), StandardCharsets.UTF_8).trim();
    }
  }

  private static byte[] readAll(java.io.InputStream in) throws IOException {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    byte[] buffer = new byte[4096];
    for (int read = in.read(buffer); read >= 0; read = in.read(buffer)) {
      out.write(buffer, 0, read);
    }
    return out.toByteArray();
  }

  /** Iceberg's view catalog machinery (the view builder: create, replace, create or replace) over this catalog's folders. */
  private final class Views extends BaseMetastoreViewCatalog {
    @Override
    protected ViewOperations newViewOps(TableIdentifier identifier) {
      return new HadoopViewOperations(CdcMergeHadoopCatalog.this, identifier, viewLocation(identifier), io());
    }

    @Override
    protected TableOperations newTableOps(TableIdentifier identifier) {
      return tableOps(identifier);
    }

    @Override
    protected String defaultWarehouseLocation(TableIdentifier identifier) {
      return viewLocation(identifier);
    }

    @Override
    public List<TableIdentifier> listTables(Namespace namespace) {
      return CdcMergeHadoopCatalog.this.listTables(namespace);
    }

    @Override
    public boolean dropTable(TableIdentifier identifier, boolean purge) {
      return CdcMergeHadoopCatalog.this.dropTable(identifier, purge);
    }

    @Override
    public void renameTable(TableIdentifier from, TableIdentifier to) {
      CdcMergeHadoopCatalog.this.renameTable(from, to);
    }

    @Override
    public List<TableIdentifier> listViews(Namespace namespace) {
      return CdcMergeHadoopCatalog.this.listViews(namespace);
    }

    @Override
    public boolean dropView(TableIdentifier identifier) {
      return CdcMergeHadoopCatalog.this.dropView(identifier);
    }

    @Override
    public void renameView(TableIdentifier from, TableIdentifier to) {
      CdcMergeHadoopCatalog.this.renameView(from, to);
    }
  }

  private TableOperations tableOps(TableIdentifier identifier) {
    return newTableOps(identifier);
  }

  private synchronized FileIO io() {
    if (viewIO == null) {
      viewIO = new HadoopFileIO(getConf());
    }
    return viewIO;
  }
}
