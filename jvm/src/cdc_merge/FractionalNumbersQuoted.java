package cdc_merge;

import org.apache.spark.sql.api.java.UDF1;

/**
 * The row images of a batch for a Databend raw table, in the JVM: every JSON number with a
 * fraction or an exponent, and every integer beyond 64 bits, becomes a string
 * ({@code {"amount":12.50}} -> {@code {"amount":"12.50"}}).
 *
 * <p>Databend's VARIANT keeps integers of 64 bits (int64, uint64) exactly but stores other numbers
 * as float64; as strings they stay exact. It gives exactly what python_jobs/landing/transforms.py fractional_numbers_quoted gives
 * (the same tokens: JSON strings, copied, and numbers {@code -?\d+(\.\d+)?([eE][+-]?\d+)?}), which
 * the landing used over every event in a Python UDF; tests/test_jvm_parser.py compares the two.
 * Registered by python_jobs/landing/io/jvm_functions.py register_jvm_number_quoter.
 */
public final class FractionalNumbersQuoted implements UDF1<String, String> {
  private static final long serialVersionUID = 1L;

  @Override
  public String call(String text) {
    if (text == null) {
      return null;
    }
    int length = text.length();
    StringBuilder out = null; // allocated at the first number to quote
    int copied = 0;
    int i = 0;
    while (i < length) {
      char c = text.charAt(i);
      if (c == '"') {
        int end = stringEnd(text, i);
        i = end < 0 ? i + 1 : end; // an unterminated quote is copied like any other character
      } else if (isDigit(c) || (c == '-' && i + 1 < length && isDigit(text.charAt(i + 1)))) {
        int start = i;
        i = digitsEnd(text, c == '-' ? i + 1 : i);
        boolean fractional = false;
        if (i + 1 < length && text.charAt(i) == '.' && isDigit(text.charAt(i + 1))) {
          i = digitsEnd(text, i + 1);
          fractional = true;
        }
        if (i < length && (text.charAt(i) == 'e' || text.charAt(i) == 'E')) {
          int digits = i + 1 < length && (text.charAt(i + 1) == '+' || text.charAt(i + 1) == '-') ? i + 2 : i + 1;
          if (digits < length && isDigit(text.charAt(digits))) {
            i = digitsEnd(text, digits);
            fractional = true;
          }
        }
        if (fractional || beyond64Bits(text, start, i)) {
          if (out == null) {
            out = new StringBuilder(length + 16);
          }
          out.append(text, copied, start).append('"').append(text, start, i).append('"');
          copied = i;
        }
      } else {
        i++;
      }
    }
    if (out == null) {
      return text;
    }
    return out.append(text, copied, length).toString();
  }

  /** Whether the integer text[start, end) is below int64's least or above uint64's greatest value. */
  private static boolean beyond64Bits(String text, int start, int end) {
    int digits = text.charAt(start) == '-' ? end - start - 1 : end - start;
    if (digits != 19 && digits != 20) {
      return digits > 20;
    }
    java.math.BigInteger value = new java.math.BigInteger(text.substring(start, end));
    return value.compareTo(INT64_MIN) < 0 || value.compareTo(UINT64_MAX) > 0;
  }

  private static final java.math.BigInteger INT64_MIN = java.math.BigInteger.valueOf(Long.MIN_VALUE);
  private static final java.math.BigInteger UINT64_MAX = java.math.BigInteger.ONE.shiftLeft(64).subtract(java.math.BigInteger.ONE);

  /** The index after the closing quote of the JSON string opening at start, or -1 if it is never closed. */
  private static int stringEnd(String text, int start) {
    int i = start + 1;
    while (i < text.length()) {
      char c = text.charAt(i);
      if (c == '"') {
        return i + 1;
      }
      if (c == '\\') {
        // Escapes any one character but a line break, as \\. in the Python pattern; else no string here.
        if (i + 1 >= text.length() || text.charAt(i + 1) == '\n') {
          return -1;
        }
        i += 2;
      } else {
        i++;
      }
    }
    return -1;
  }

  private static int digitsEnd(String text, int i) {
    while (i < text.length() && isDigit(text.charAt(i))) {
      i++;
    }
    return i;
  }

  /** Python's \d on str: any Unicode decimal digit. */
  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9' || (c > 127 && Character.getType(c) == Character.DECIMAL_DIGIT_NUMBER);
  }
}
