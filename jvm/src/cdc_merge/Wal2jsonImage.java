package cdc_merge;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A wal2json format-version 2 column list ("columns" or "identity") as python_jobs/formats/wal2json.py
 * _image reads it: {name: value} in the list's order, each value converted as value_converter
 * converts it for its column's type, and written as _text writes it (json.dumps, ensure_ascii=False,
 * compact).
 *
 * <p>read returns null wherever Python could give anything else or reject the line: a value of a
 * float type (Python's float repr is not Java's), a timestamp with time zone its fast path does not
 * rewrite, a value its conversion would not take as it is (a string for an integer type, ...), an
 * object or array value, a repeated column name, an entry that is not {name, type, value}.
 */
final class Wal2jsonImage {
  /** A value as Python holds it once converted: an int (digits), a str, True, False or None. */
  enum Kind { DIGITS, STRING, TRUE, FALSE, NULL }

  static final class Value {
    final Kind kind;
    final String text;

    Value(Kind kind, String text) {
      this.kind = kind;
      this.text = text;
    }
  }

  private static final Value TRUE = new Value(Kind.TRUE, "true");
  private static final Value FALSE = new Value(Kind.FALSE, "false");
  private static final Value NULL = new Value(Kind.NULL, null);
  // wal2json.py _BEFORE_CHRIST: how the server writes a time before year 1.
  private static final String BEFORE_CHRIST = " BC";

  final LinkedHashMap<String, Value> columns = new LinkedHashMap<>();

  boolean isEmpty() {
    return columns.isEmpty();
  }

  /** The column list the parser stands on (its START_ARRAY) as an image, or null (above). */
  static Wal2jsonImage read(JsonParser parser) throws IOException {
    Wal2jsonImage image = new Wal2jsonImage();
    while (parser.nextToken() != JsonToken.END_ARRAY) {
      if (parser.currentToken() != JsonToken.START_OBJECT) {
        return null;
      }
      String name = null;
      String type = ""; // a column without one keeps its value as sent
      Value value = NULL;
      JsonToken valueToken = null;
      String valueText = null;
      boolean bigInteger = false;
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String member = parser.getCurrentName();
        JsonToken token = parser.nextToken();
        if (token == JsonToken.START_OBJECT || token == JsonToken.START_ARRAY) {
          return null;
        }
        switch (member) {
          case "name":
            if (token != JsonToken.VALUE_STRING) {
              return null;
            }
            name = parser.getText();
            break;
          case "type":
            if (token != JsonToken.VALUE_STRING) {
              return null;
            }
            type = parser.getText();
            break;
          case "value":
            valueToken = token;
            valueText = token == JsonToken.VALUE_NULL || token == JsonToken.VALUE_TRUE || token == JsonToken.VALUE_FALSE
                ? null : parser.getText();
            bigInteger = token == JsonToken.VALUE_NUMBER_INT && parser.getNumberType() == JsonParser.NumberType.BIG_INTEGER;
            break;
          default:
            break; // wal2json's other column members (optional, ...): Python reads no further
        }
      }
      if (name == null || image.columns.containsKey(name)) {
        return null; // a repeated name keeps its first place and its last value in Python
      }
      if (valueToken != null && valueToken != JsonToken.VALUE_NULL) {
        value = converted(type, valueToken, valueText, bigInteger);
        if (value == null) {
          return null;
        }
      }
      image.columns.put(name, value);
    }
    return image;
  }

  /** value_converter(type)(value) in wal2json.py, the value as json.loads(parse_float=str, parse_int=str) reads it. */
  private static Value converted(String type, JsonToken token, String text, boolean bigInteger) {
    int paren = type.indexOf('(');
    String base = paren < 0 ? type : type.substring(0, paren);
    // Python strips the base type of its whitespace, which includes more than Java's: left to it.
    if (!base.isEmpty() && (mayBePythonSpace(base.charAt(0)) || mayBePythonSpace(base.charAt(base.length() - 1)))) {
      return null;
    }
    boolean number = token == JsonToken.VALUE_NUMBER_INT || token == JsonToken.VALUE_NUMBER_FLOAT;
    switch (base) {
      case "smallint":
      case "integer":
      case "bigint":
      case "oid":
        // int(text): a JSON integer's digits ("-0" becomes 0); huge ones (Python limits their digits) left to it.
        if (token != JsonToken.VALUE_NUMBER_INT || bigInteger) {
          return null;
        }
        return new Value(Kind.DIGITS, Long.toString(Long.parseLong(text)));
      case "real":
      case "double precision":
        return null; // a float's repr in Python is not Java's
      case "timestamp with time zone":
        String utc = token == JsonToken.VALUE_STRING ? utcFastPath(text) : null;
        return utc == null ? null : new Value(Kind.STRING, utc);
      case "timestamp without time zone":
        if (token == JsonToken.VALUE_STRING) {
          if (text.endsWith(BEFORE_CHRIST)) {
            return null; // Python nulls it
          }
          int space = text.indexOf(' ');
          return new Value(Kind.STRING, space < 0 ? text : text.substring(0, space) + 'T' + text.substring(space + 1));
        }
        return number ? new Value(Kind.STRING, text) : null; // a number's text has no space
      case "date":
      case "timestamp": // timestamp(n) with or without time zone
        if (token == JsonToken.VALUE_STRING && text.endsWith(BEFORE_CHRIST)) {
          return null; // Python nulls it
        }
        // fall through: as sent
      default:
        // _as_sent: numbers stay their exact text, as a JSON string.
        if (token == JsonToken.VALUE_STRING || number) {
          return new Value(Kind.STRING, text);
        }
        return token == JsonToken.VALUE_TRUE ? TRUE : token == JsonToken.VALUE_FALSE ? FALSE : null;
    }
  }

  /**
   * The fast path of _utc_timestamp in wal2json.py ("2026-01-02 03:04:05.5+00" to
   * "2026-01-02T03:04:05.500000Z"), or null where Python takes its datetime path.
   */
  static String utcFastPath(String value) {
    int length = value.length();
    for (int i = 0; i < length; i++) {
      if (Character.isSurrogate(value.charAt(i))) {
        return null; // Python counts code points, Java UTF-16 units
      }
    }
    if (!value.endsWith("+00") || length < 22 || value.charAt(10) != ' ' || value.charAt(4) != '-'
        || value.charAt(13) != ':' || value.charAt(0) == '0') {
      return null;
    }
    String clock = value.substring(11, length - 3);
    int dot = clock.indexOf('.');
    String seconds = dot < 0 ? clock : clock.substring(0, dot);
    String fraction = dot < 0 ? "" : clock.substring(dot + 1);
    if (seconds.length() != 8 || fraction.length() > 6) {
      return null;
    }
    for (int i = 0; i < fraction.length(); i++) {
      char c = fraction.charAt(i);
      if (c < '0' || c > '9') {
        return null; // Python's isdigit also takes other scripts' digits: left to it
      }
    }
    StringBuilder utc = new StringBuilder(27).append(value, 0, 10).append('T').append(seconds).append('.').append(fraction);
    for (int i = fraction.length(); i < 6; i++) {
      utc.append('0');
    }
    return utc.append('Z').toString();
  }

  /** Whether str.strip() may strip c (a superset of Python's whitespace). */
  private static boolean mayBePythonSpace(char c) {
    return c <= ' ' || (c >= 0x7f && c <= 0xa0) || Character.isSpaceChar(c) || Character.isWhitespace(c);
  }

  /** after.setdefault(name, value) for each column of other, as an update's unchanged TOAST values are filled. */
  void fillFrom(Wal2jsonImage other) {
    for (Map.Entry<String, Value> column : other.columns.entrySet()) {
      columns.putIfAbsent(column.getKey(), column.getValue());
    }
  }

  /** Whether every one of these columns has a value (not None), as wal2json.py checks an identity. */
  boolean hasValues(List<String> names) {
    for (String name : names) {
      Value value = columns.get(name);
      if (value == null || value.kind == Kind.NULL) {
        return false;
      }
    }
    return true;
  }

  /** records.canonical_key of these columns, or null where Python rejects (a key value missing or null). */
  String key(List<String> names) {
    StringBuilder key = new StringBuilder(16 * names.size()).append('[');
    for (int i = 0; i < names.size(); i++) {
      Value value = columns.get(names.get(i));
      if (value == null || value.kind == Kind.NULL) {
        return null;
      }
      if (i > 0) {
        key.append(',');
      }
      DebeziumFastParser.appendJsonString(key, value.text);
    }
    return key.append(']').toString();
  }

  /** json.dumps(image, ensure_ascii=False, separators=(",", ":")), as wal2json.py _text. */
  String json() {
    StringBuilder json = new StringBuilder(32 * columns.size()).append('{');
    boolean first = true;
    for (Map.Entry<String, Value> column : columns.entrySet()) {
      if (!first) {
        json.append(',');
      }
      first = false;
      DebeziumFastParser.appendJsonString(json, column.getKey());
      json.append(':');
      Value value = column.getValue();
      switch (value.kind) {
        case STRING:
          DebeziumFastParser.appendJsonString(json, value.text);
          break;
        case NULL:
          json.append("null");
          break;
        default:
          json.append(value.text);
      }
    }
    return json.append('}').toString();
  }
}
