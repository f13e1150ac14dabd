package cdc_merge.iceberg;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Objects;
import java.util.UUID;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.NoSuchViewException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.util.LocationUtil;
import org.apache.iceberg.view.BaseViewOperations;
import org.apache.iceberg.view.ViewMetadata;
import org.apache.iceberg.view.ViewMetadataParser;
import org.apache.iceberg.view.ViewVersion;

/**
 * A view of {@link CdcMergeHadoopCatalog}: its metadata files in {@code <view>/view-metadata/},
 * the current one named in {@code version-hint.text}. A commit writes the new metadata file, then
 * replaces the hint if it still names the metadata the commit started from (checked and replaced
 * under the commit lock the tables use, held across the machine's processes). A process killed
 * while it replaced the hint leaves none: the newest metadata file is then the view's.
 *
 * <p>dbt's view materialization replaces its view on every run: a replace that changes nothing a
 * reader sees commits nothing, and a commit deletes the metadata files of all but the last few
 * versions, as Iceberg deletes a table's with {@code write.metadata.delete-after-commit.enabled}.
 */
final class HadoopViewOperations extends BaseViewOperations {
  // The tables' commit lock (FileLockManager): across this machine's processes.
  private static final FileLockManager LOCK = new FileLockManager();
  // Metadata files kept besides the current one: those of the versions just before it.
  static final int PREVIOUS_VERSIONS_KEPT = 4;

  private final CdcMergeHadoopCatalog catalog;
  private final TableIdentifier identifier;
  private final String location;
  private final FileIO io;

  HadoopViewOperations(CdcMergeHadoopCatalog catalog, TableIdentifier identifier, String location, FileIO io) {
    this.catalog = catalog;
    this.identifier = identifier;
    this.location = LocationUtil.stripTrailingSlash(location);
    this.io = io;
  }

  @Override
  protected void doRefresh() {
    String current = currentFromHint(null);
    if (current == null) {
      if (currentMetadataLocation() != null) {
        throw new NoSuchViewException("View does not exist: %s", identifier);
      }
      disableRefresh();
      return;
    }
    try {
      refreshFromMetadataLocation(current);
    } catch (NotFoundException removed) {
      // Deleted by the commits of newer versions since the hint was read: the hint names a newer file now.
      String newer = currentFromHint(null);
      if (newer == null || newer.equals(current)) {
        throw removed;
      }
      refreshFromMetadataLocation(newer);
    }
  }

  @Override
  protected void doCommit(ViewMetadata base, ViewMetadata metadata) {
    if (base != null && sameToReaders(base, metadata)) {
      // Nothing to write: the view stays as it was. Had another commit changed it since base was read,
      // this replace counts as the earlier of the two (it changes nothing, so the other's view stands).
      return;
    }
    String written = writeNewMetadataIfRequired(metadata);
    String hint = hint().toString();
    if (!LOCK.acquire(hint, written)) {
      throw new CommitFailedException("Cannot commit view %s: another commit holds its lock", identifier);
    }
    try {
      String current = currentFromHint(written);
      String expected = base == null ? null : base.metadataFileLocation();
      if (!Objects.equals(current, expected)) {
        throw new CommitFailedException("Cannot commit view %s: it changed since it was read", identifier);
      }
      writeHint(written);
      // Under the lock: no other commit of this view replaces the hint meanwhile.
      removeOldMetadata(written);
    } finally {
      LOCK.release(hint, written);
    }
  }

  /**
   * True when metadata's current version reads as base's: the same SQL per dialect, default catalog
   * and namespace, schema (names, types, ids, comments), properties and location. A replace builds
   * a new version (its own timestamp and summary) even for the same SQL.
   */
  static boolean sameToReaders(ViewMetadata base, ViewMetadata metadata) {
    ViewVersion was = base.currentVersion();
    ViewVersion now = metadata.currentVersion();
    return was.representations().equals(now.representations())
        && Objects.equals(was.defaultCatalog(), now.defaultCatalog())
        && was.defaultNamespace().equals(now.defaultNamespace())
        && base.schema().sameSchema(metadata.schema())
        && base.properties().equals(metadata.properties())
        && base.location().equals(metadata.location())
        && base.formatVersion() == metadata.formatVersion();
  }

  /**
   * Deletes the metadata files of versions more than PREVIOUS_VERSIONS_KEPT before current's (with
   * their .crc: the checksummed file system deletes it with its file). Never current, nor a file
   * written after it (a commit in progress, which writes before it takes the lock; a create of the
   * name after a drop). A file deleted here is one no hint names any more; a reader that read the
   * hint before it named a newer file reads the hint again (doRefresh), and a view already loaded
   * holds its SQL in memory. A failure leaves the files to a later commit.
   */
  private void removeOldMetadata(String current) {
    int version = versionOf(new Path(current).getName());
    if (version < 0) {
      return;
    }
    String currentName = new Path(current).getName();
    Path folder = hint().getParent();
    try {
      FileSystem fs = catalog.fileSystem(folder);
      long written = fs.getFileStatus(new Path(current)).getModificationTime();
      for (FileStatus file : fs.listStatus(folder, path -> path.getName().endsWith(".metadata.json"))) {
        int old = versionOf(file.getPath().getName());
        if (old >= 0 && old < version - PREVIOUS_VERSIONS_KEPT && file.getModificationTime() < written
            && !file.getPath().getName().equals(currentName)) {
          fs.delete(file.getPath(), false);
        }
      }
    } catch (IOException error) {
      // The commit stands; the files go with a later one.
    }
  }

  /** NNNNN of NNNNN-<uuid>.metadata.json, or -1 for another name. */
  private static int versionOf(String name) {
    int dash = name.indexOf('-');
    try {
      return dash > 0 ? Integer.parseInt(name.substring(0, dash)) : -1;
    } catch (NumberFormatException notOurs) {
      return -1;
    }
  }

  @Override
  protected String writeNewMetadataIfRequired(ViewMetadata metadata) {
    if (metadata.metadataFileLocation() != null) {
      return metadata.metadataFileLocation();
    }
    // NNNNN-<uuid>.metadata.json: the version BaseViewOperations reads back from the name, the codec from its end.
    OutputFile file = io.newOutputFile(String.format(Locale.ROOT, "%s/%s/%05d-%s.metadata.json", location,
        CdcMergeHadoopCatalog.VIEW_METADATA, currentVersion() + 1, UUID.randomUUID()));
    ViewMetadataParser.overwrite(metadata, file);
    return file.location();
  }

  private Path hint() {
    return new Path(location, CdcMergeHadoopCatalog.VIEW_METADATA + "/" + CdcMergeHadoopCatalog.VERSION_HINT);
  }

  /**
   * The metadata file the hint names; without a hint (a process that died between replacing it and
   * renaming the new one in place), the newest metadata file, the one that commit was writing; but
   * never ignored, the file a commit in progress has just written.
   */
  private String currentFromHint(String ignored) {
    Path hint = hint();
    try {
      FileSystem fs = catalog.fileSystem(hint);
      if (fs.exists(hint)) {
        return CdcMergeHadoopCatalog.read(fs, hint);
      }
      String newest = null;
      try {
        for (FileStatus file : fs.listStatus(hint.getParent(), path -> path.getName().endsWith(".metadata.json"))) {
          String name = file.getPath().toString();
          if (ignored != null && new Path(ignored).getName().equals(file.getPath().getName())) {
            continue;
          }
          // NNNNN-<uuid>.metadata.json: the newest has the highest version.
          if (newest == null || file.getPath().getName().compareTo(new Path(newest).getName()) > 0) {
            newest = name;
          }
        }
      } catch (java.io.FileNotFoundException noMetadata) {
        return null;
      }
      return newest;
    } catch (IOException error) {
      throw new UncheckedIOException(error);
    }
  }

  /** The hint replaced whole: written beside it, then renamed over it. */
  private void writeHint(String metadataLocation) {
    Path hint = hint();
    Path partial = new Path(hint.getParent(), "." + UUID.randomUUID() + "-" + CdcMergeHadoopCatalog.VERSION_HINT);
    try {
      FileSystem fs = catalog.fileSystem(hint);
      try (OutputStream out = fs.create(partial, false)) {
        out.write(metadataLocation.getBytes(StandardCharsets.UTF_8));
      }
      if (fs.exists(hint) && !fs.delete(hint, false)) {
        throw new IOException("cannot replace " + hint);
      }
      if (!fs.rename(partial, hint)) {
        throw new IOException("cannot rename " + partial + " to " + hint);
      }
    } catch (IOException error) {
      throw new UncheckedIOException(error);
    }
  }

  @Override
  protected String viewName() {
    return identifier.toString();
  }

  @Override
  protected FileIO io() {
    return io;
  }
}
