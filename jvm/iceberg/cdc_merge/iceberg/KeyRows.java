package cdc_merge.iceberg;

import java.util.Arrays;

/**
 * A table's keys, each with its row's seq, data file hash and position: the map a {@link KeyIndex}
 * holds, in a few primitive arrays instead of objects per key.
 *
 * <p>A map of a million keys as objects (an entry, the key and the seq as strings with their
 * bytes, the row) is six million objects every full garbage collection of the warm process marks
 * one by one, and about twice the heap (docs/apply_service.md, "Memory"). Here a key is an entry number:
 * its hash, where its key's and seq's characters are in byte pages, its file hash and position, in
 * arrays by entry number; a table of slots (open addressing, linear probing) finds it by the key's
 * hash. A string whose characters all fit in a byte is stored a byte a character, any other two
 * bytes a character, so keys compare exactly as strings do. A removed entry leaves its slot marked
 * and its bytes in place until the next rebuild, which copies the live entries only.
 */
public final class KeyRows {
  private static final int FREE = 0;
  private static final int REMOVED = -1; // any other slot: its entry's number + 1
  private static final int NO_SEQ = -1;
  private static final int DEAD = -1; // an entry's text, once removed
  private static final int PAGE_BYTES = 1 << 20;

  private int[] slots;
  private int entries; // entry numbers handed out, live or removed
  private int live;
  private int[] hashes;
  private int[] keyTexts; // an entry's key: characters << 1 | two bytes a character
  private int[] seqTexts; // the same for its seq; NO_SEQ: none
  private long[] textAt; // page << 32 | offset of the key's bytes, the seq's right after
  private long[] fileHashes;
  private long[] positions;
  private byte[][] pages = new byte[0][];
  private int pageUsed;
  // A null key (a row without one) is held beside the arrays, as a map of objects would hold it.
  private boolean holdsNullKey;
  private KeyIndex.Stored nullKeyRow;

  /** A map for about expectedKeys keys (it grows past that as needed). */
  public KeyRows(int expectedKeys) {
    int entryCapacity = Math.max(8, expectedKeys);
    slots = new int[slotsFor(entryCapacity)]; // at most half full: every entry number may hold a slot
    hashes = new int[entryCapacity];
    keyTexts = new int[entryCapacity];
    seqTexts = new int[entryCapacity];
    textAt = new long[entryCapacity];
    fileHashes = new long[entryCapacity];
    positions = new long[entryCapacity];
  }

  public int size() {
    return live;
  }

  /** The row of key, or null when the map does not hold it. */
  public KeyIndex.Stored get(String key) {
    if (key == null) {
      return holdsNullKey ? nullKeyRow : null;
    }
    int entry = entryOf(key);
    return entry < 0 ? null : new KeyIndex.Stored(seqOf(entry), fileHashes[entry], positions[entry]);
  }

  /** Holds key's row as given (seq may be null); whether it held the key before. */
  public boolean put(String key, String seq, long fileHash, long position) {
    boolean held = remove(key);
    if (key == null) {
      holdsNullKey = true;
      nullKeyRow = new KeyIndex.Stored(seq, fileHash, position);
      live++;
      return held;
    }
    if (entries == hashes.length) { // the slots, twice the entries, stay at most half full
      rebuild(live + 1);
    }
    int entry = entries++;
    hashes[entry] = key.hashCode();
    keyTexts[entry] = textCode(key);
    seqTexts[entry] = seq == null ? NO_SEQ : textCode(seq);
    textAt[entry] = store(key, seq);
    fileHashes[entry] = fileHash;
    positions[entry] = position;
    int slot = firstSlot(hashes[entry]);
    while (slots[slot] != FREE && slots[slot] != REMOVED) { // the key is not held: a removed slot will do
      slot = (slot + 1) & (slots.length - 1);
    }
    slots[slot] = entry + 1;
    live++;
    return held;
  }

  /** Removes key; whether the map held it. */
  public boolean remove(String key) {
    if (key == null) {
      live -= holdsNullKey ? 1 : 0;
      boolean held = holdsNullKey;
      holdsNullKey = false;
      nullKeyRow = null;
      return held;
    }
    int slot = slotOf(key);
    if (slot < 0) {
      return false;
    }
    keyTexts[slots[slot] - 1] = DEAD;
    slots[slot] = REMOVED;
    live--;
    return true;
  }

  private int entryOf(String key) {
    int slot = slotOf(key);
    return slot < 0 ? -1 : slots[slot] - 1;
  }

  private int slotOf(String key) {
    int hash = key.hashCode();
    int mask = slots.length - 1;
    for (int slot = firstSlot(hash); ; slot = (slot + 1) & mask) {
      int held = slots[slot];
      if (held == FREE) {
        return -1;
      }
      if (held != REMOVED && hashes[held - 1] == hash && textEquals(held - 1, key)) {
        return slot;
      }
    }
  }

  private int firstSlot(int hash) {
    int mixed = hash * 0x9E3779B9; // String.hashCode's low bits alone cluster on similar keys
    return (mixed ^ (mixed >>> 16)) & (slots.length - 1);
  }

  private static int slotsFor(int entryCapacity) {
    long wanted = Math.max(16L, Long.highestOneBit(2L * entryCapacity - 1) << 1);
    if (wanted > 1 << 30) {
      throw new IllegalStateException("a key index of " + entryCapacity + " keys is more than one map holds");
    }
    return (int) wanted;
  }

  /** Copies the live entries into arrays with room for half as many again as keys. */
  private void rebuild(int keys) {
    KeyRows copy = new KeyRows((int) Math.min(1 << 29, keys + keys / 2L + 8));
    for (int entry = 0; entry < entries; entry++) {
      if (keyTexts[entry] != DEAD) {
        copy.copyOf(this, entry);
      }
    }
    slots = copy.slots;
    entries = copy.entries;
    live = copy.live + (holdsNullKey ? 1 : 0);
    hashes = copy.hashes;
    keyTexts = copy.keyTexts;
    seqTexts = copy.seqTexts;
    textAt = copy.textAt;
    fileHashes = copy.fileHashes;
    positions = copy.positions;
    pages = copy.pages;
    pageUsed = copy.pageUsed;
  }

  /** Entry from's copy, its key known not to be held here, into arrays known to have room. */
  private void copyOf(KeyRows from, int fromEntry) {
    int entry = entries++;
    hashes[entry] = from.hashes[fromEntry];
    keyTexts[entry] = from.keyTexts[fromEntry];
    seqTexts[entry] = from.seqTexts[fromEntry];
    int bytes = byteCount(keyTexts[entry]) + (seqTexts[entry] == NO_SEQ ? 0 : byteCount(seqTexts[entry]));
    textAt[entry] = room(bytes);
    System.arraycopy(from.pages[(int) (from.textAt[fromEntry] >>> 32)], (int) from.textAt[fromEntry],
        pages[(int) (textAt[entry] >>> 32)], (int) textAt[entry], bytes);
    fileHashes[entry] = from.fileHashes[fromEntry];
    positions[entry] = from.positions[fromEntry];
    int slot = firstSlot(hashes[entry]);
    while (slots[slot] != FREE) {
      slot = (slot + 1) & (slots.length - 1);
    }
    slots[slot] = entry + 1;
    live++;
  }

  private static int textCode(String text) {
    boolean wide = false;
    for (int index = 0; index < text.length() && !wide; index++) {
      wide = text.charAt(index) > 0xFF;
    }
    if (text.length() > (Integer.MAX_VALUE >> 2)) {
      throw new IllegalStateException("a key or seq of " + text.length() + " characters is too long for a key index");
    }
    return text.length() << 1 | (wide ? 1 : 0);
  }

  private static int byteCount(int code) {
    return (code >>> 1) * ((code & 1) + 1);
  }

  /** Writes key's and seq's characters one after the other in a page; where they start. */
  private long store(String key, String seq) {
    int keyBytes = byteCount(textCode(key));
    long at = room(keyBytes + (seq == null ? 0 : byteCount(textCode(seq))));
    byte[] page = pages[(int) (at >>> 32)];
    write(page, (int) at, key);
    if (seq != null) {
      write(page, (int) at + keyBytes, seq);
    }
    return at;
  }

  /** Where the next bytes bytes go (page << 32 | offset), a new page begun when the last lacks room. */
  private long room(int bytes) {
    if (pages.length == 0 || pageUsed + bytes > pages[pages.length - 1].length) {
      pages = Arrays.copyOf(pages, pages.length + 1);
      pages[pages.length - 1] = new byte[Math.max(PAGE_BYTES, bytes)];
      pageUsed = 0;
    }
    long at = (long) (pages.length - 1) << 32 | pageUsed;
    pageUsed += bytes;
    return at;
  }

  private static void write(byte[] page, int offset, String text) {
    boolean wide = (textCode(text) & 1) == 1;
    for (int index = 0; index < text.length(); index++) {
      char character = text.charAt(index);
      if (wide) {
        page[offset + 2 * index] = (byte) (character >>> 8);
        page[offset + 2 * index + 1] = (byte) character;
      } else {
        page[offset + index] = (byte) character;
      }
    }
  }

  private boolean textEquals(int entry, String key) {
    int code = keyTexts[entry];
    if (code >>> 1 != key.length() || code != textCode(key)) {
      return false;
    }
    byte[] page = pages[(int) (textAt[entry] >>> 32)];
    int offset = (int) textAt[entry];
    for (int index = 0; index < key.length(); index++) {
      if (character(page, offset, code, index) != key.charAt(index)) {
        return false;
      }
    }
    return true;
  }

  private String seqOf(int entry) {
    int code = seqTexts[entry];
    return code == NO_SEQ ? null : text(entry, code, byteCount(keyTexts[entry]));
  }

  private String text(int entry, int code, int skip) {
    byte[] page = pages[(int) (textAt[entry] >>> 32)];
    int offset = (int) textAt[entry] + skip;
    int length = code >>> 1;
    char[] characters = new char[length];
    for (int index = 0; index < length; index++) {
      characters[index] = character(page, offset, code, index);
    }
    return new String(characters);
  }

  /** The index-th character of a text of code stored at offset of page. */
  private static char character(byte[] page, int offset, int code, int index) {
    return (code & 1) == 1
        ? (char) ((page[offset + 2 * index] & 0xFF) << 8 | (page[offset + 2 * index + 1] & 0xFF))
        : (char) (page[offset + index] & 0xFF);
  }
}
