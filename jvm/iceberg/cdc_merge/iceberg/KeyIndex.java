package cdc_merge.iceberg;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;

/**
 * Each stored key of a mirror (or of its tombstones) with its seq, data file and position, kept in
 * a long-lived process between runs (docs/apply_service.md, "Build order", step 1).
 *
 * <p>An index belongs to one snapshot of one table (its UUID and snapshot id): it answers only for
 * that snapshot, whose rows never change. It is built by one scan of the key and seq columns, and
 * follows the table only through the process's own one-commit batches ({@link OneCommitBatch}),
 * whose deleted keys and added rows it knows: a commit whose parent is the indexed snapshot moves
 * it to the commit's snapshot. Any other snapshot (a `dbt run` beside the service, compaction, a
 * full refresh, a MERGE of a large batch) is simply not the indexed one, and the next lookup builds
 * the index again. Kept per table name; {@link StoredKeys#lookup} asks it when the caller allows.
 * Its keys are held in primitive arrays ({@link KeyRows}), not as objects a key.
 */
public final class KeyIndex {
  // By table name, least recently used first (access order).
  private static final Map<String, KeyIndex> KEPT = new LinkedHashMap<>(16, 0.75f, true);

  private final UUID tableUuid;
  private long snapshotId; // guarded by this, with rows

  private final String keyColumn;
  private final String seqColumn;
  private final KeyRows rows;

  /** A stored key's row: its seq as text (null when the row has none), data file hash and position. */
  public static final class Stored {
    public final String seq;
    public final long fileHash;
    public final long pos;

    Stored(String seq, long fileHash, long pos) {
      this.seq = seq;
      this.fileHash = fileHash;
      this.pos = pos;
    }
  }

  private KeyIndex(UUID tableUuid, long snapshotId, String keyColumn, String seqColumn, KeyRows rows) {
    this.tableUuid = tableUuid;
    this.snapshotId = snapshotId;
    this.keyColumn = keyColumn;
    this.seqColumn = seqColumn;
    this.rows = rows;
  }

  /**
   * The index of tableName at snapshotId: the one kept when it is of this table and snapshot, else
   * built by a scan and kept. Null (and none kept) when the snapshot holds more than maxKeys rows
   * (its records less those deleted by position), does not say how many, or holds a key twice. maxKeys bounds all indexes together: the
   * ones used least recently are dropped to make room.
   */
  static KeyIndex at(Table table, String tableName, long snapshotId, String keyColumn, String seqColumn, long maxKeys)
      throws IOException {
    synchronized (KEPT) {
      KeyIndex kept = KEPT.get(tableName);
      if (kept != null && kept.isOf(table, snapshotId, keyColumn, seqColumn)) {
        return kept;
      }
      KEPT.remove(tableName);
    }
    KeyIndex built = scan(table, snapshotId, keyColumn, seqColumn, maxKeys);
    if (built != null) {
      synchronized (KEPT) {
        makeRoom(maxKeys - built.rows.size());
        KEPT.put(tableName, built);
      }
    }
    return built;
  }

  /** Drops the indexes used least recently until all together hold at most keys keys. */
  private static void makeRoom(long keys) {
    long held = 0;
    for (KeyIndex kept : KEPT.values()) {
      held += kept.size();
    }
    Iterator<KeyIndex> leastRecentFirst = KEPT.values().iterator();
    while (held > keys && leastRecentFirst.hasNext()) {
      held -= leastRecentFirst.next().size();
      leastRecentFirst.remove();
    }
  }

  private synchronized int size() {
    return rows.size();
  }

  /**
   * After a one-commit batch of this process committed to tableName: the index kept at the batch's
   * parent snapshot moves to committed, without removedKeys (the keys whose rows it deleted by
   * position) and with the added rows (keys and seqs, at positions 0.. of the data file of
   * addedFileHash). Any other index of the table is dropped. removedKeys null: not known, dropped.
   */
  static void committed(Table table, String tableName, long parentSnapshotId, Snapshot committed,
      Collection<String> removedKeys, List<String> addedKeys, List<String> addedSeqs, long addedFileHash) {
    KeyIndex kept;
    synchronized (KEPT) {
      kept = KEPT.remove(tableName);
    }
    boolean follows = kept != null && removedKeys != null && committed != null
        && committed.parentId() != null && committed.parentId() == parentSnapshotId;
    if (!follows) {
      return;
    }
    synchronized (kept) {
      if (!kept.isOf(table, parentSnapshotId, kept.keyColumn, kept.seqColumn)) {
        return;
      }
      for (String key : removedKeys) {
        kept.rows.remove(key);
      }
      for (int position = 0; position < addedKeys.size(); position++) {
        kept.rows.put(addedKeys.get(position), addedSeqs.get(position), addedFileHash, position);
      }
      kept.snapshotId = committed.snapshotId();
    }
    synchronized (KEPT) {
      KEPT.putIfAbsent(tableName, kept);
    }
  }

  /** Drops every kept index: tests, and a process that wants its memory back. */
  public static void dropAll() {
    synchronized (KEPT) {
      KEPT.clear();
    }
  }

  /** The snapshot id the index kept for tableName is of, or null when none is kept. */
  public static Long keptSnapshot(String tableName) {
    synchronized (KEPT) {
      KeyIndex kept = KEPT.get(tableName);
      if (kept == null) {
        return null;
      }
      synchronized (kept) {
        return kept.snapshotId;
      }
    }
  }

  /** How many keys the index kept for tableName holds, or -1 when none is kept. */
  public static long keptKeys(String tableName) {
    synchronized (KEPT) {
      KeyIndex kept = KEPT.get(tableName);
      if (kept == null) {
        return -1;
      }
      return kept.size();
    }
  }

  /**
   * The rows of keys at snapshotId (a key the snapshot does not hold is left out); null when the
   * index has moved on from snapshotId since it was handed out.
   */
  synchronized Map<String, Stored> rowsOf(long snapshot, Collection<String> keys) {
    if (snapshotId != snapshot) {
      return null;
    }
    Map<String, Stored> found = new HashMap<>();
    for (String key : keys) {
      Stored row = rows.get(key);
      if (row != null) {
        found.put(key, row);
      }
    }
    return found;
  }

  private synchronized boolean isOf(Table table, long snapshot, String key, String seq) {
    return snapshotId == snapshot && tableUuid.equals(table.uuid()) && keyColumn.equals(key) && seqColumn.equals(seq);
  }

  private static KeyIndex scan(Table table, long snapshotId, String keyColumn, String seqColumn, long maxKeys)
      throws IOException {
    Snapshot snapshot = table.snapshot(snapshotId);
    if (snapshot == null) {
      throw new IllegalStateException(table.name() + " has no snapshot " + snapshotId);
    }
    // Rows deleted by position stay in their data files' counts until compaction: not keys.
    String records = snapshot.summary().get("total-records");
    String deleted = snapshot.summary().get("total-position-deletes");
    long keys = records == null ? Long.MAX_VALUE : Long.parseLong(records) - (deleted == null ? 0 : Long.parseLong(deleted));
    if (keys > maxKeys) {
      return null;
    }
    List<Types.NestedField> columns = new ArrayList<>();
    columns.add(table.schema().findField(keyColumn));
    columns.add(table.schema().findField(seqColumn));
    columns.add(MetadataColumns.FILE_PATH);
    columns.add(MetadataColumns.ROW_POSITION);
    KeyRows rows = new KeyRows((int) Math.min(1 << 24, Math.min(keys, maxKeys) + 16));
    Map<String, Long> fileHashes = new HashMap<>();
    try (CloseableIterable<Record> stored = CallingThreadRecords.read(table.newScan()
        .useSnapshot(snapshotId)
        .project(new Schema(columns)))) {
      for (Record row : stored) {
        String key = (String) row.get(0);
        Object seq = row.get(1);
        long fileHash = fileHashes.computeIfAbsent(row.get(2).toString(), PositionDeletes::sparkXxhash64);
        if (rows.put(key, seq == null ? null : seq.toString(), fileHash, ((Number) row.get(3)).longValue())) {
          return null; // two rows of one key: left to the scan path, whose classification reports it
        }
        if (rows.size() > maxKeys) {
          return null; // more than the summary said (deleted twice by position)
        }
      }
    }
    return new KeyIndex(table.uuid(), snapshotId, keyColumn, seqColumn, rows);
  }
}
