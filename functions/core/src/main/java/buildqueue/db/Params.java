package buildqueue.db;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * Named statement parameters. Allowed value types: {@link String}, {@link Long}, {@link Integer},
 * {@link Boolean}, {@link Instant}, {@link UUID}, {@link Json} and {@code null}. A parameter that
 * may be null should carry a cast in the SQL ({@code :now::timestamptz}) so that PostgreSQL knows
 * its type whichever adapter sends it.
 */
public final class Params {
  private static final Params NONE = new Params(Map.of());

  private final Map<String, Object> values;

  private Params(Map<String, Object> values) {
    this.values = values;
  }

  public static Params none() {
    return NONE;
  }

  public static Params of(String name, Object value) {
    return new Params(Map.of()).and(name, value);
  }

  public static Params of(String n1, Object v1, String n2, Object v2) {
    return of(n1, v1).and(n2, v2);
  }

  public static Params of(String n1, Object v1, String n2, Object v2, String n3, Object v3) {
    return of(n1, v1).and(n2, v2).and(n3, v3);
  }

  /** A copy with one more parameter; a name given twice is a bug and throws. */
  public Params and(String name, Object value) {
    checkType(name, value);
    if (values.containsKey(name)) {
      throw new IllegalArgumentException("parameter :" + name + " given twice");
    }
    Map<String, Object> copy = new LinkedHashMap<>(values);
    copy.put(name, value);
    return new Params(Collections.unmodifiableMap(copy));
  }

  public boolean has(String name) {
    return values.containsKey(name);
  }

  public Object get(String name) {
    if (!values.containsKey(name)) {
      throw new IllegalArgumentException("no value for parameter :" + name);
    }
    return values.get(name);
  }

  public Map<String, Object> asMap() {
    return values;
  }

  private static void checkType(String name, Object value) {
    if (value == null
        || value instanceof String
        || value instanceof Long
        || value instanceof Integer
        || value instanceof Boolean
        || value instanceof Instant
        || value instanceof UUID
        || value instanceof Json) {
      return;
    }
    throw new IllegalArgumentException(
        "parameter :" + name + " has unsupported type " + value.getClass().getName());
  }

  @Override
  public String toString() {
    return values.keySet().toString();
  }
}
