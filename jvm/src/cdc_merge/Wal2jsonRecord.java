package cdc_merge;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The members of a wal2json format-version 2 row change that make its event, as
 * python_jobs/formats/wal2json.py parse_members reads them: action (I, U or D), lsn, schema,
 * table, the column lists as Wal2jsonImages, and the names its "pk" announces. read returns null
 * wherever Python could reject the record or read it otherwise; the members it only checks (xid,
 * timestamp, which captured_wal2json.py replaces by the line's) are checked as Python checks them.
 */
final class Wal2jsonRecord {
  String action;
  Long lsn; // unsigned: wal2json positions use all 64 bits
  String schema;
  String table;
  // null where the record has none (or null)
  Wal2jsonImage columns;
  Wal2jsonImage identity;
  // The names of the record's "pk" list, null without one; pkNamesValid is false when one is not a name.
  List<String> pk;
  boolean pkNamesValid = true;

  private Wal2jsonRecord() {}

  /** The record object the parser stands on (its START_OBJECT), or null (above). */
  static Wal2jsonRecord read(JsonParser parser) throws IOException {
    Wal2jsonRecord record = new Wal2jsonRecord();
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String name = parser.getCurrentName();
      JsonToken token = parser.nextToken();
      switch (name) {
        case "action":
          String action = token == JsonToken.VALUE_STRING ? parser.getText() : "";
          if (!(action.equals("I") || action.equals("U") || action.equals("D"))) {
            return null; // other actions the capture writes as Debezium events
          }
          record.action = action;
          break;
        case "lsn":
          record.lsn = token == JsonToken.VALUE_STRING ? lsn(parser.getText()) : null;
          if (record.lsn == null) {
            return null;
          }
          break;
        case "schema":
        case "table":
          if (token != JsonToken.VALUE_STRING) {
            return null;
          }
          if (name.equals("schema")) {
            record.schema = parser.getText();
          } else {
            record.table = parser.getText();
          }
          break;
        case "xid":
          // transactions.transaction_id: an integer or a non-empty string.
          boolean transactionId = token == JsonToken.VALUE_NULL
              || (token == JsonToken.VALUE_NUMBER_INT && parser.getNumberType() != JsonParser.NumberType.BIG_INTEGER)
              || (token == JsonToken.VALUE_STRING && !parser.getText().isEmpty());
          if (!transactionId) {
            return null;
          }
          break;
        case "timestamp":
          // Read through datetime, which may fail near its years' limits on a time without a
          // zone: those are left to Python.
          if (token == JsonToken.START_OBJECT || token == JsonToken.START_ARRAY
              || (token == JsonToken.VALUE_STRING && (parser.getText().startsWith("0") || parser.getText().startsWith("9999")))) {
            return null;
          }
          break;
        case "columns":
        case "identity":
          Wal2jsonImage image = null;
          if (token == JsonToken.START_ARRAY) {
            image = Wal2jsonImage.read(parser);
            if (image == null) {
              return null;
            }
          } else if (token != JsonToken.VALUE_NULL) {
            return null;
          }
          if (name.equals("columns")) {
            record.columns = image;
          } else {
            record.identity = image;
          }
          break;
        case "pk":
          if (token == JsonToken.START_ARRAY) {
            if (!record.readPk(parser)) {
              return null;
            }
          } else if (token != JsonToken.VALUE_NULL) {
            return null;
          }
          break;
        default:
          // wal2json's other members (nextlsn, origin, ...) are not read; nested ones (Python's
          // recursion limit is not Jackson's) are left to Python.
          if (token == JsonToken.START_OBJECT || token == JsonToken.START_ARRAY) {
            return null;
          }
      }
    }
    return record;
  }

  /** The names of the pk list ([{"name":..,"type":..}]) the parser stands on; false for anything else. */
  private boolean readPk(JsonParser parser) throws IOException {
    pk = new ArrayList<>();
    while (parser.nextToken() != JsonToken.END_ARRAY) {
      if (parser.currentToken() != JsonToken.START_OBJECT) {
        return false;
      }
      String name = null;
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String member = parser.getCurrentName();
        JsonToken token = parser.nextToken();
        if (token == JsonToken.START_OBJECT || token == JsonToken.START_ARRAY) {
          return false;
        }
        if (member.equals("name") && token == JsonToken.VALUE_STRING) {
          name = parser.getText();
        }
      }
      // A missing, empty or non-string name: Python uses the configured keys only.
      pkNamesValid &= name != null && !name.isEmpty();
      pk.add(name);
    }
    return true;
  }

  /** wal2json.parse_lsn: "16/B374D848" as the 64-bit position (unsigned), or null for anything else. */
  static Long lsn(String text) {
    int slash = text.indexOf('/');
    int lowDigits = text.length() - slash - 1;
    if (slash < 1 || slash > 8 || lowDigits < 1 || lowDigits > 8) {
      return null;
    }
    long high = hex(text, 0, slash);
    long low = hex(text, slash + 1, text.length());
    return high < 0 || low < 0 ? null : (high << 32) + low;
  }

  /** The ASCII hex digits text[start, end) as a number, or -1. */
  private static long hex(String text, int start, int end) {
    long value = 0;
    for (int i = start; i < end; i++) {
      char c = text.charAt(i);
      int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (digit < 0) {
        return -1;
      }
      value = value * 16 + digit;
    }
    return value;
  }
}
