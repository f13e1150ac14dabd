package cdc_merge;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * The landing's fast path for the PostgreSQL capture's record lines: a wal2json format-version 2
 * record as the server sent it, wrapped with its transaction's metadata
 * (python_jobs/capture/postgres_records.py record_lines):
 *
 * <pre>{"commit_lsn":38520000,"tx_id":"0:38520000","ts_ms":1795968088012,"tx_order":1,"wal2json":{"action":"I",...}}</pre>
 *
 * <p>It returns exactly what python_jobs/formats/captured_wal2json.py returns for such a line, in
 * JVM_PARSED_EVENT_SCHEMA, with the row images written as Python's json.dumps writes them
 * (Wal2jsonImage); null for anything else, as DebeziumFastParser, which calls it.
 * tests/test_jvm_captured_wal2json.py checks both parsers agree on hand-made and fuzzed lines.
 */
final class CapturedWal2jsonParser {
  // A member name twice in one object, at any depth: Python rejects the line (records.py).
  private static final JsonFactory FACTORY =
      new JsonFactory().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
  // How record_lines starts every line.
  private static final byte[] PREFIX = "{\"commit_lsn\":".getBytes(StandardCharsets.US_ASCII);
  private static final long MAX_MS = 1_000_000_000_000_000L; // records.positive_ms: before year 30000

  private CapturedWal2jsonParser() {}

  static boolean isRecordLine(byte[] line) {
    if (line.length < PREFIX.length) {
      return false;
    }
    for (int i = 0; i < PREFIX.length; i++) {
      if (line[i] != PREFIX[i]) {
        return false;
      }
    }
    return true;
  }

  static Row parse(byte[] line, Map<String, List<String>> keyColumns) throws IOException {
    Long commitLsn = null;
    String txId = null;
    Long txOrder = null;
    Long sourceTsMs = null;
    Wal2jsonRecord record = null;
    try (JsonParser parser = FACTORY.createParser(line)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      // Only the members record_lines writes: with any other, the line may be another format's.
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String name = parser.getCurrentName();
        JsonToken token = parser.nextToken();
        switch (name) {
          case "commit_lsn":
            commitLsn = longValue(parser, token);
            if (commitLsn == null || commitLsn < 0) {
              return null;
            }
            break;
          case "tx_id":
            // transactions.transaction_id: a string, or an integer as its digits.
            if (token == JsonToken.VALUE_STRING && !parser.getText().isEmpty()) {
              txId = parser.getText();
            } else if (longValue(parser, token) != null) {
              txId = Long.toString(parser.getLongValue());
            } else {
              return null;
            }
            break;
          case "ts_ms":
            if (token == JsonToken.VALUE_NUMBER_INT) {
              Long ms = longValue(parser, token);
              sourceTsMs = ms != null && ms > 0 && ms < MAX_MS ? ms : null;
            } else if (token == JsonToken.START_OBJECT || token == JsonToken.START_ARRAY) {
              return null;
            } // any other value: no commit time, as positive_ms reads it
            break;
          case "tx_order":
            if (token != JsonToken.VALUE_NULL) {
              txOrder = longValue(parser, token);
              if (txOrder == null || txOrder < 0) {
                return null; // a digit string Python reads too: left to it
              }
            }
            break;
          case "wal2json":
            record = token == JsonToken.START_OBJECT ? Wal2jsonRecord.read(parser) : null;
            if (record == null) {
              return null;
            }
            break;
          default:
            return null;
        }
      }
      if (parser.currentToken() != JsonToken.END_OBJECT || parser.nextToken() != null) {
        return null;
      }
    }
    if (commitLsn == null || txId == null || record == null) {
      return null;
    }
    return event(record, keyColumns, commitLsn, txId, txOrder, sourceTsMs);
  }

  /** The event of wal2json.py parse_members for the record, as captured_wal2json.py keeps it; null where Python does otherwise. */
  private static Row event(Wal2jsonRecord record, Map<String, List<String>> keyColumns, long commitLsn, String txId, Long txOrder,
      Long sourceTsMs) {
    if (record.action == null || record.lsn == null || record.schema == null || record.table == null) {
      return null;
    }
    String tableName = record.schema + "." + record.table;
    // records.key_columns_for: configured keys win, else the names the record's pk announces.
    List<String> keys = keyColumns.get(tableName);
    if (keys == null || keys.isEmpty()) {
      if (record.pk == null || record.pk.isEmpty() || !record.pkNamesValid) {
        return null;
      }
      keys = record.pk;
    }
    Wal2jsonImage after = record.columns == null ? new Wal2jsonImage() : record.columns;
    Wal2jsonImage identity = record.identity == null ? new Wal2jsonImage() : record.identity;
    String action;
    String key;
    String rawData = null;
    String beforeData = null;
    switch (record.action) {
      case "I":
        if (after.isEmpty()) {
          return null;
        }
        action = "insert";
        key = after.key(keys);
        rawData = after.json();
        break;
      case "D":
        if (identity.isEmpty()) {
          return null;
        }
        action = "delete";
        key = identity.key(keys);
        beforeData = identity.json();
        break;
      default: // "U"; an update keeps no image before (captured_wal2json.py)
        if (after.isEmpty()) {
          return null;
        }
        after.fillFrom(identity);
        action = "update";
        key = after.key(keys);
        if (key != null && identity.hasValues(keys) && !key.equals(identity.key(keys))) {
          return null; // a key change: Python rejects it as a record line
        }
        rawData = after.json();
    }
    if (key == null) {
      return null;
    }
    // records._require_encodable: an unpaired surrogate ("\ud800" in JSON) cannot be stored as text.
    for (String text : new String[] {tableName, key, rawData, beforeData, txId}) {
      if (text != null && DebeziumFastParser.hasLoneSurrogate(text)) {
        return null;
      }
    }
    return RowFactory.create(
        tableName,
        key,
        action,
        rawData == null ? null : rawData.getBytes(StandardCharsets.UTF_8),
        beforeData == null ? null : beforeData.getBytes(StandardCharsets.UTF_8),
        seq(commitLsn, record.lsn),
        sourceTsMs,
        txId,
        txOrder,
        null);
  }

  /** A JSON integer that fits a long, else null. */
  private static Long longValue(JsonParser parser, JsonToken token) throws IOException {
    if (token != JsonToken.VALUE_NUMBER_INT || parser.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
      return null;
    }
    return parser.getLongValue();
  }

  /** records.format_seq(commit_lsn, lsn, 0, 1): streamed, ordered by the commit, then the change. */
  private static String seq(long commitLsn, long lsn) {
    StringBuilder seq = new StringBuilder(54);
    pad(seq, Long.toString(commitLsn), 20).append('.');
    pad(seq, Long.toUnsignedString(lsn), 20).append(".0000000000.1");
    return seq.toString();
  }

  private static StringBuilder pad(StringBuilder out, String digits, int width) {
    for (int i = digits.length(); i < width; i++) {
      out.append('0');
    }
    return out.append(digits);
  }
}
