package cdc_merge.iceberg;

import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The named crash points of python_jobs/crash_points.py that are reached inside the JVM: told to
 * die at one ({@code CDC_MERGE_CRASH_AT=<point>[@N]} in the environment the JVM started with), the
 * JVM kills the process that started it (dbt, cdc-run) and then itself, as a lost machine would.
 */
final class CrashPoints {
  static final String CRASH_AT = "CDC_MERGE_CRASH_AT";
  private static final Map<String, Integer> REACHED = new HashMap<>();

  private CrashPoints() {}

  /** Dies here when told to; otherwise nothing. */
  static void crashPoint(String point) {
    if (armed(point, System.getenv(CRASH_AT))) {
      die(point);
    }
  }

  /** Whether wanted ({@code name} or {@code name@N}) asks to die at this visit of point (counts the visit). */
  static synchronized boolean armed(String point, String wanted) {
    if (wanted == null || wanted.isEmpty()) {
      return false;
    }
    int at = wanted.indexOf('@');
    String name = at < 0 ? wanted : wanted.substring(0, at);
    if (!name.equals(point)) {
      return false;
    }
    int nth = at < 0 ? 1 : Integer.parseInt(wanted.substring(at + 1));
    int visits = REACHED.getOrDefault(point, 0) + 1;
    REACHED.put(point, visits);
    return visits == nth;
  }

  private static void die(String point) {
    System.out.println("cdc_merge: crash point " + point + " reached; killing the process (" + CRASH_AT + ")");
    System.out.flush();
    try {
      // ProcessHandle (Java 9) by reflection: the jar is built for Java 8's API.
      Class<?> handles = Class.forName("java.lang.ProcessHandle");
      Object current = handles.getMethod("current").invoke(null);
      Optional<?> parent = (Optional<?>) handles.getMethod("parent").invoke(current);
      if (parent.isPresent()) {
        Method destroyForcibly = handles.getMethod("destroyForcibly");
        destroyForcibly.invoke(parent.get());
      }
    } catch (ReflectiveOperationException | RuntimeException error) {
      System.err.println("cdc_merge: could not kill the parent process: " + error);
    }
    Runtime.getRuntime().halt(137);
  }
}
