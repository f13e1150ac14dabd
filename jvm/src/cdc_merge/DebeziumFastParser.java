// Why one file of about 750 lines: one streaming pass over the line, whose states must stay together to match the Python parser exactly.
package cdc_merge;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * The landing job's fast path for the common Debezium line: a bare envelope (no schema) with a
 * configured key, from the MySQL, MariaDB or PostgreSQL connector, or without source.connector
 * (as Flink CDC writes it), whose events the landing orders by their line.
 *
 * <p>Also Debezium's transaction END record (the captures end each transaction with one), as the
 * transaction's end marker of python_jobs/formats/transactions.py.
 *
 * <p>It returns exactly what python_jobs/formats/debezium.py returns for such a line (table_name, key,
 * action, raw_data, before_data, seq, source_ts_ms, tx_id, tx_order, tx_events), with the row images cut out of the line as
 * exact text (UTF-8 bytes, never decoded). For any other line, or anything it is not sure about,
 * it returns null and the Python parser decides, so every rejection reason still comes from one
 * place. tests/test_jvm_parser.py checks both parsers agree on fixtures and fuzzed lines.
 *
 * <p>Also the PostgreSQL capture's record lines (a wal2json record wrapped with its transaction's
 * metadata), which CapturedWal2jsonParser parses, where the landing reads every format ("auto").
 *
 * <p>Built with the landing config's keys as JSON, "schema.table" to its key columns (e.g.
 * {"inventory.customers":["id"]}), registered by python_jobs/landing/io/jvm_functions.py register_jvm_parser, called as
 * {@code f(cast(line_text as binary))}; it returns JVM_PARSED_EVENT_SCHEMA of python_jobs/landing/schemas.py.
 */
public final class DebeziumFastParser implements UDF1<byte[], Row> {
  private static final long serialVersionUID = 1L;
  // A member name twice in one object, at any depth: Python rejects the line (records.py), so
  // this parser must not land it.
  private static final JsonFactory FACTORY =
      new JsonFactory().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
  private static final long MAX_MS = 1_000_000_000_000_000L; // positive_ms: before year 30000
  private static final char[] HEX = "0123456789abcdef".toCharArray();
  // transactions.py: the markers' table_name and key; records.line_ordered_seq(1), which the landing completes with the line's place.
  private static final String TX_MARKER_TABLE = "_cdc_merge.transactions";
  private static final String TABLE_KEY = "[]";
  private static final String LINE_ORDERED_SEQ = "00000000000000000000.00000000000000000000.0000000000.1";

  private final HashMap<String, List<String>> keyColumns;
  // Whether the landing's format ("auto") reads record lines: with "debezium" Python rejects them.
  private final boolean takesRecordLines;
  // Every key column of every table: read from both row images while they are walked, so the
  // image the key comes from (known only once op and source are read) is not parsed again.
  private final HashSet<String> keyNames = new HashSet<>();

  public DebeziumFastParser(String keyColumnsJson) throws IOException {
    this(keyColumnsJson, true);
  }

  public DebeziumFastParser(String keyColumnsJson, boolean takesRecordLines) throws IOException {
    this.keyColumns = parseKeyColumns(keyColumnsJson);
    this.takesRecordLines = takesRecordLines;
    for (List<String> columns : keyColumns.values()) {
      keyNames.addAll(columns);
    }
  }

  @Override
  public Row call(byte[] line) {
    if (line == null) {
      return null;
    }
    try {
      if (CapturedWal2jsonParser.isRecordLine(line)) {
        return takesRecordLines ? CapturedWal2jsonParser.parse(line, keyColumns) : null;
      }
      return parse(line, keyColumns, keyNames);
    } catch (IOException | RuntimeException unsure) {
      // Invalid JSON, Jackson limits, or anything unexpected: the Python parser says why.
      return null;
    }
  }

  // The members of 'source' that decide the table name and seq: their index in sourceMembers()' array.
  private static final int CONNECTOR = 0;
  private static final int DB = 1;
  private static final int SCHEMA = 2;
  private static final int TABLE = 3;
  private static final int FILE = 4;
  private static final int POS = 5;
  private static final int ROW = 6;
  private static final int LSN = 7;
  private static final int SNAPSHOT = 8;
  private static final int TS_MS = 9;
  private static final int COMMIT_LSN = 10;
  private static final int SOURCE_MEMBERS = 11;

  private static int sourceMember(String name) {
    switch (name) {
      case "connector":
        return CONNECTOR;
      case "db":
        return DB;
      case "schema":
        return SCHEMA;
      case "table":
        return TABLE;
      case "file":
        return FILE;
      case "pos":
        return POS;
      case "row":
        return ROW;
      case "lsn":
        return LSN;
      case "snapshot":
        return SNAPSHOT;
      case "ts_ms":
        return TS_MS;
      case "commit_lsn":
        return COMMIT_LSN;
      default:
        return -1;
    }
  }

  /** The envelope members this parser reads: bit i of 'seen' marks member i. */
  private static int envelopeMember(String name) {
    switch (name) {
      case "op":
        return 0;
      case "source":
        return 1;
      case "before":
        return 2;
      case "after":
        return 3;
      case "ts_ms":
        return 4;
      case "transaction":
        return 5;
      default:
        return -1;
    }
  }

  private static final Set<String> TRANSACTION_MEMBERS = new HashSet<>(Arrays.asList("id", "total_order"));
  private static final Set<String> DATA_COLLECTION_MEMBERS = new HashSet<>(Arrays.asList("data_collection", "event_count"));

  /**
   * A scalar member value as Python's json module would see it: strings with their text, integers
   * as a long (or, too big for one, as text), objects and arrays as their type only.
   */
  private static final class Value {
    final JsonToken token;
    final String text;
    final long number;
    final boolean fitsLong;

    Value(JsonToken token, String text, long number, boolean fitsLong) {
      this.token = token;
      this.text = text;
      this.number = number;
      this.fitsLong = fitsLong;
    }

    boolean isNull() {
      return token == JsonToken.VALUE_NULL;
    }

    boolean isString() {
      return token == JsonToken.VALUE_STRING;
    }

    /** A JSON integer as a long, or null when it is not one or does not fit. */
    Long integer() {
      return token == JsonToken.VALUE_NUMBER_INT && fitsLong ? number : null;
    }

    /** A string's text, or an integer's digits as Python's str(int) prints them. */
    String text() {
      return token == JsonToken.VALUE_NUMBER_INT && fitsLong ? Long.toString(number) : text;
    }
  }

  private static Row parse(byte[] line, Map<String, List<String>> keyColumns, Set<String> keyNames) throws IOException {
    int length = line.length;
    while (length > 0 && line[length - 1] == '\r') {
      length--;
    }
    int first = 0;
    while (first < length && isJsonWhitespace(line[first])) {
      first++;
    }
    if (first == length || line[first] != '{') {
      return null;
    }
    String op = null;
    Value[] source = null;
    Image before = null;
    Image after = null;
    JsonToken beforeToken = null;
    JsonToken afterToken = null;
    Value envelopeTsMs = null;
    String txId = null;
    Long txOrder = null;
    // Members of a transaction's END record; other members beside them leave the line to Python.
    String status = null;
    Value endId = null;
    Value eventCount = null;
    LinkedHashMap<String, Long> tables = null;
    boolean hasTables = false;
    boolean otherMembers = false;
    // A repeated envelope member is left to Python (its dict keeps the last one).
    int seen = 0;
    try (JsonParser parser = FACTORY.createParser(line, 0, length)) {
      if (parser.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String name = parser.getCurrentName();
        JsonToken token = parser.nextToken();
        int member = envelopeMember(name);
        if (member >= 0) {
          if ((seen & (1 << member)) != 0) {
            return null;
          }
          seen |= 1 << member;
        }
        switch (name) {
          case "op":
            if (token != JsonToken.VALUE_STRING) {
              return null;
            }
            op = parser.getText();
            break;
          case "source":
            if (token != JsonToken.START_OBJECT) {
              return null;
            }
            source = sourceMembers(parser);
            break;
          case "before":
            beforeToken = token;
            before = image(parser, token, keyNames);
            break;
          case "after":
            afterToken = token;
            after = image(parser, token, keyNames);
            break;
          case "ts_ms":
            envelopeTsMs = scalar(parser, token);
            break;
          case "transaction":
            // Debezium's transaction block (python_jobs/formats/transactions.py); anything odd is left to Python.
            if (token == JsonToken.VALUE_NULL) {
              break;
            }
            if (token != JsonToken.START_OBJECT) {
              return null;
            }
            Map<String, Value> transaction = members(parser, TRANSACTION_MEMBERS);
            Value id = transaction.get("id");
            if (id == null || !(id.isString() || id.integer() != null) || id.text().isEmpty()
                || hasLoneSurrogate(id.text())) {
              return null;
            }
            txId = id.text();
            Value order = transaction.get("total_order");
            if (order != null && !order.isNull()) {
              txOrder = order.integer();
              if (txOrder == null || txOrder < 0) {
                return null;
              }
            }
            break;
          case "status":
            if (token != JsonToken.VALUE_STRING) {
              return null;
            }
            status = parser.getText();
            break;
          case "id":
            endId = scalar(parser, token);
            break;
          case "event_count":
            eventCount = scalar(parser, token);
            break;
          case "data_collections":
            hasTables = token != JsonToken.VALUE_NULL;
            if (hasTables) {
              tables = token == JsonToken.START_ARRAY ? perTableCounts(parser) : null;
              if (tables == null) {
                return null;
              }
            }
            break;
          // Members of other formats' envelopes, or of Debezium's {schema, payload} one.
          case "payload":
          case "schema":
          case "op_type":
          case "isDdl":
          case "pkNames":
          case "database":
            return null;
          default:
            otherMembers = true;
            parser.skipChildren();
        }
      }
      if (parser.currentToken() != JsonToken.END_OBJECT || parser.nextToken() != null) {
        return null;
      }
    }
    if ("END".equals(status) && op == null) {
      // Only its own members (and ts_ms): with any other, Python may read the line as something else.
      boolean onlyEndMembers = !otherMembers && (seen & ~(1 << envelopeMember("ts_ms"))) == 0;
      return onlyEndMembers ? transactionEnd(endId, envelopeTsMs, eventCount, hasTables ? tables : null) : null;
    }
    String action = action(op);
    if (action == null || source == null) {
      return null;
    }
    String tableName = tableName(source);
    if (tableName == null) {
      return null;
    }
    List<String> columns = keyColumns.get(tableName);
    boolean delete = "d".equals(op);
    Image keyImage = delete ? before : after;
    JsonToken keyImageToken = delete ? beforeToken : afterToken;
    if (columns == null || columns.isEmpty() || keyImageToken != JsonToken.START_OBJECT) {
      return null;
    }
    if ((before != null && before.scaleValueObject) || (after != null && after.scaleValueObject)) {
      return null; // a schemaless VariableScaleDecimal: Python decodes it
    }
    String key = canonicalKey(keyImage.keyValues, columns);
    String seq = seq(source, op);
    if (key == null || seq == null) {
      return null;
    }
    if ("u".equals(op) && beforeToken == JsonToken.START_OBJECT) {
      // An update whose before image holds another key: Python writes it as a delete and an insert.
      String former = canonicalKey(before.keyValues, columns);
      if (former == null ? columns.stream().anyMatch(before.keyValues::containsKey) : !former.equals(key)) {
        return null;
      }
    }
    Long sourceTsMs = positiveMs(source[TS_MS]);
    if (sourceTsMs == null) {
      sourceTsMs = positiveMs(envelopeTsMs);
    }
    return RowFactory.create(
        tableName,
        key,
        action,
        afterToken == JsonToken.START_OBJECT ? Arrays.copyOfRange(line, after.start, after.end) : null,
        beforeToken == JsonToken.START_OBJECT ? Arrays.copyOfRange(line, before.start, before.end) : null,
        seq,
        sourceTsMs,
        txId,
        txOrder,
        null);
  }

  /**
   * Debezium's END record as _transaction_end in debezium.py: the marker with the transaction's id,
   * commit time, event count and per-table counts ({"tables": {...}} as json.dumps writes it); null
   * where Python would reject the record.
   */
  private static Row transactionEnd(Value id, Value tsMs, Value eventCount, Map<String, Long> tables) {
    if (id == null || !(id.isString() || id.integer() != null) || id.text().isEmpty() || hasLoneSurrogate(id.text())) {
      return null;
    }
    Long count = null;
    if (eventCount != null && !eventCount.isNull()) {
      count = eventCount.integer();
      if (count == null || count < 0) {
        return null;
      }
    }
    byte[] rawData = null;
    if (tables != null) {
      StringBuilder json = new StringBuilder("{\"tables\":{");
      boolean first = true;
      for (Map.Entry<String, Long> table : tables.entrySet()) {
        if (!first) {
          json.append(',');
        }
        first = false;
        appendJsonString(json, table.getKey());
        json.append(':').append(table.getValue());
      }
      rawData = json.append("}}").toString().getBytes(StandardCharsets.UTF_8);
    }
    return RowFactory.create(
        TX_MARKER_TABLE, TABLE_KEY, "tx_end", rawData, null, LINE_ORDERED_SEQ, positiveMs(tsMs), id.text(), null, count);
  }

  /**
   * Debezium's data_collections ([{data_collection, event_count}]) as per_table_counts in
   * transactions.py reads it: a repeated table keeps its first place and its last count. Null for
   * anything Python rejects, or a count too big for a long.
   */
  private static LinkedHashMap<String, Long> perTableCounts(JsonParser parser) throws IOException {
    LinkedHashMap<String, Long> counts = new LinkedHashMap<>();
    while (parser.nextToken() != JsonToken.END_ARRAY) {
      if (parser.currentToken() != JsonToken.START_OBJECT) {
        return null;
      }
      Map<String, Value> entry = members(parser, DATA_COLLECTION_MEMBERS);
      Value name = entry.get("data_collection");
      Value count = entry.get("event_count");
      Long events = count == null ? null : count.integer();
      if (name == null || !name.isString() || hasLoneSurrogate(name.text) || events == null || events < 0) {
        return null;
      }
      counts.put(name.text, events);
    }
    return counts;
  }

  private static boolean isJsonWhitespace(byte c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }

  /**
   * A row image: [start, end) in bytes of the object, the values of its key-column members, and
   * whether a member is an object of exactly 'scale' and 'value' (a schemaless VariableScaleDecimal,
   * which Python decodes: debezium_types.is_variable_scale_decimal).
   */
  private static final class Image {
    final int start;
    final int end;
    final Map<String, Value> keyValues;
    final boolean scaleValueObject;

    Image(int start, int end, Map<String, Value> keyValues, boolean scaleValueObject) {
      this.start = start;
      this.end = end;
      this.keyValues = keyValues;
      this.scaleValueObject = scaleValueObject;
    }
  }

  /** The object the parser stands on as an Image; skips any other value (null). */
  private static Image image(JsonParser parser, JsonToken token, Set<String> keyNames) throws IOException {
    if (token != JsonToken.START_OBJECT) {
      parser.skipChildren();
      return null;
    }
    int start = (int) parser.getTokenLocation().getByteOffset();
    Map<String, Value> keyValues = new HashMap<>();
    boolean scaleValueObject = false;
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String name = parser.getCurrentName();
      JsonToken member = parser.nextToken();
      if (member == JsonToken.START_OBJECT) {
        scaleValueObject |= isScaleValueObject(parser);
        if (keyNames.contains(name)) {
          keyValues.put(name, new Value(member, null, 0, false));
        }
      } else if (keyNames.contains(name)) {
        keyValues.put(name, scalar(parser, member));
      } else {
        parser.skipChildren();
      }
    }
    int end = (int) parser.getTokenLocation().getByteOffset() + 1;
    return new Image(start, end, keyValues, scaleValueObject);
  }

  /** Reads the object the parser stands on: whether its members are exactly 'scale' and 'value'. */
  private static boolean isScaleValueObject(JsonParser parser) throws IOException {
    int count = 0;
    boolean scale = false;
    boolean value = false;
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String name = parser.getCurrentName();
      count++;
      scale |= "scale".equals(name);
      value |= "value".equals(name);
      parser.nextToken();
      parser.skipChildren();
    }
    return count == 2 && scale && value;
  }

  private static Value scalar(JsonParser parser, JsonToken token) throws IOException {
    switch (token) {
      case START_OBJECT:
      case START_ARRAY:
        parser.skipChildren();
        return new Value(token, null, 0, false);
      case VALUE_STRING:
        return new Value(token, parser.getText(), 0, false);
      case VALUE_NUMBER_INT:
        JsonParser.NumberType type = parser.getNumberType();
        if (type == JsonParser.NumberType.BIG_INTEGER) {
          return new Value(token, parser.getBigIntegerValue().toString(), 0, false);
        }
        return new Value(token, null, parser.getLongValue(), true);
      default:
        return new Value(token, null, 0, false);
    }
  }

  /** The wanted members of the object the parser stands on; a repeated name keeps the last value, as in Python. */
  private static Map<String, Value> members(JsonParser parser, Set<String> wanted) throws IOException {
    Map<String, Value> members = new HashMap<>();
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String name = parser.getCurrentName();
      JsonToken token = parser.nextToken();
      if (wanted.contains(name)) {
        members.put(name, scalar(parser, token));
      } else {
        parser.skipChildren();
      }
    }
    return members;
  }

  /** The source object's members by their index (CONNECTOR...); as members(), the last of a repeated name wins. */
  private static Value[] sourceMembers(JsonParser parser) throws IOException {
    Value[] members = new Value[SOURCE_MEMBERS];
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      int member = sourceMember(parser.getCurrentName());
      JsonToken token = parser.nextToken();
      if (member >= 0) {
        members[member] = scalar(parser, token);
      } else {
        parser.skipChildren();
      }
    }
    return members;
  }

  private static String action(String op) {
    if (op == null) {
      return null;
    }
    switch (op) {
      case "c":
        return "insert";
      case "u":
        return "update";
      case "d":
        return "delete";
      case "r":
        return "read";
      default:
        return null;
    }
  }

  /** schema.table (Postgres) or db.table (MySQL), as _table_name in debezium.py. */
  private static String tableName(Value[] source) {
    Value table = source[TABLE];
    if (table == null || !table.isString() || table.text.isEmpty() || hasLoneSurrogate(table.text)) {
      return null;
    }
    Value schema = source[SCHEMA];
    Value namespace;
    if (schema == null || schema.isNull() || (schema.isString() && schema.text.isEmpty())) {
      namespace = source[DB];
    } else {
      namespace = schema;
    }
    if (namespace == null || !namespace.isString() || namespace.text.isEmpty() || hasLoneSurrogate(namespace.text)) {
      return null;
    }
    return namespace.text + "." + table.text;
  }

  /** JSON array of the key values as text, as canonical_key in records.py writes it. */
  private static String canonicalKey(Map<String, Value> values, List<String> columns) {
    StringBuilder key = new StringBuilder(16 * columns.size()).append('[');
    for (int i = 0; i < columns.size(); i++) {
      Value value = values.get(columns.get(i));
      if (value == null) {
        return null;
      }
      String text;
      switch (value.token) {
        case VALUE_STRING:
        case VALUE_NUMBER_INT:
          text = value.text();
          break;
        case VALUE_TRUE:
          text = "true";
          break;
        case VALUE_FALSE:
          text = "false";
          break;
        default:
          return null; // null, a fraction (Python prints Decimal), an object or an array
      }
      if (hasLoneSurrogate(text)) {
        return null;
      }
      if (i > 0) {
        key.append(',');
      }
      appendJsonString(key, text);
    }
    return key.append(']').toString();
  }

  /** json.dumps(text, ensure_ascii=False). */
  static void appendJsonString(StringBuilder out, String text) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"':
          out.append("\\\"");
          break;
        case '\\':
          out.append("\\\\");
          break;
        case '\n':
          out.append("\\n");
          break;
        case '\r':
          out.append("\\r");
          break;
        case '\t':
          out.append("\\t");
          break;
        case '\b':
          out.append("\\b");
          break;
        case '\f':
          out.append("\\f");
          break;
        default:
          if (c < 0x20) {
            out.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 0xf]);
          } else {
            out.append(c);
          }
      }
    }
    out.append('"');
  }

  /** A UTF-16 surrogate without its pair ("\ud800" in JSON): no table can store it as text. */
  static boolean hasLoneSurrogate(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        return true;
      }
    }
    return false;
  }

  /** The fixed-width seq of docs/ordering.md, as _seq in debezium.py. */
  private static String seq(Value[] source, String op) {
    Value connector = source[CONNECTOR];
    if (connector != null && !connector.isNull() && !connector.isString()) {
      return null;
    }
    // No connector: all zeros, and the landing appends the line's place (records.line_ordered_seq).
    boolean noConnector = connector == null || connector.isNull();
    String connectorName = noConnector ? "" : connector.text;
    long major;
    long minor;
    long row;
    switch (connectorName) {
      case "mysql":
      case "mariadb":
        Long binlogNumber = binlogFileNumber(source[FILE]);
        Long pos = nonNegative(source[POS], null);
        Long rowInEvent = nonNegative(source[ROW], 0L);
        if (binlogNumber == null || pos == null || rowInEvent == null) {
          return null;
        }
        major = binlogNumber;
        minor = pos;
        row = rowInEvent;
        break;
      case "postgresql":
        Long lsn = nonNegative(source[LSN], null);
        if (lsn == null) {
          return null;
        }
        // The captures' commit_lsn orders first (docs/ordering.md).
        Value commit = source[COMMIT_LSN];
        if (commit != null && !commit.isNull()) {
          Long commitLsn = nonNegative(commit, null);
          if (commitLsn == null) {
            return null;
          }
          major = commitLsn;
          minor = lsn;
        } else {
          major = lsn;
          minor = 0;
        }
        row = 0;
        break;
      default:
        if (!noConnector) {
          return null;
        }
        major = 0;
        minor = 0;
        row = 0;
    }
    Value snapshot = source[SNAPSHOT];
    boolean notSnapshot;
    if (snapshot == null || snapshot.isNull() || snapshot.token == JsonToken.VALUE_FALSE) {
      notSnapshot = true;
    } else if (snapshot.token == JsonToken.VALUE_TRUE) {
      notSnapshot = false;
    } else if (snapshot.isString()) {
      notSnapshot = snapshot.text.equals("false");
    } else {
      return null;
    }
    if (row > 9_999_999_999L) {
      return null; // wider than its 10 digits: Python's format keeps every digit; left to it
    }
    // Without a connector the line's place orders snapshot rows too (debezium.py _seq).
    int phase = !noConnector && ("r".equals(op) || !notSnapshot) ? 0 : 1;
    char[] seq = new char[54];
    putPadded(seq, 0, major, 20);
    seq[20] = '.';
    putPadded(seq, 21, minor, 20);
    seq[41] = '.';
    putPadded(seq, 42, row, 10);
    seq[52] = '.';
    seq[53] = (char) ('0' + phase);
    return new String(seq);
  }

  /** The number at the end of a binlog file name (mysql-bin.000003 -> 3). */
  private static Long binlogFileNumber(Value file) {
    if (file == null || !file.isString()) {
      return null;
    }
    String name = file.text;
    int start = name.length();
    while (start > 0 && name.charAt(start - 1) >= '0' && name.charAt(start - 1) <= '9') {
      start--;
    }
    // Python's \d also matches other scripts' digits; such names are left to it.
    if (start == name.length() || (start > 0 && Character.isDigit(name.charAt(start - 1)))) {
      return null;
    }
    String digits = name.substring(start);
    return digits.length() <= 18 ? Long.valueOf(digits) : null;
  }

  /** non_negative_int in records.py; null when Python would reject (or the value needs > 63 bits). */
  private static Long nonNegative(Value value, Long absent) {
    if (value == null || value.isNull()) {
      return absent;
    }
    Long number = value.integer();
    return number != null && number >= 0 ? number : null;
  }

  /** positive_ms in records.py. */
  private static Long positiveMs(Value value) {
    Long number = value == null ? null : value.integer();
    return number != null && number > 0 && number < MAX_MS ? number : null;
  }

  /** The digits of value (0 <= value < 10^width) into out[at, at + width), zero-padded on the left. */
  private static void putPadded(char[] out, int at, long value, int width) {
    String digits = Long.toString(value);
    int start = at + width - digits.length();
    Arrays.fill(out, at, start, '0');
    digits.getChars(0, digits.length(), out, start);
  }

  private static HashMap<String, List<String>> parseKeyColumns(String json) throws IOException {
    HashMap<String, List<String>> parsed = new HashMap<>();
    try (JsonParser parser = FACTORY.createParser(json)) {
      parser.nextToken();
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String table = parser.getCurrentName();
        parser.nextToken();
        List<String> columns = new ArrayList<>();
        while (parser.nextToken() == JsonToken.VALUE_STRING) {
          columns.add(parser.getText());
        }
        parsed.put(table, columns);
      }
    }
    return parsed;
  }
}
