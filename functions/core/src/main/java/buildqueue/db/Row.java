package buildqueue.db;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/** One result row, column label to normalised value (see {@link Database}). */
public final class Row {
  private final Map<String, Object> values;

  public Row(Map<String, Object> values) {
    this.values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
  }

  public Map<String, Object> asMap() {
    return values;
  }

  public boolean has(String column) {
    return values.containsKey(column);
  }

  public Object get(String column) {
    if (!values.containsKey(column)) {
      throw new IllegalArgumentException("no column " + column + " in " + values.keySet());
    }
    return values.get(column);
  }

  public String string(String column) {
    Object v = get(column);
    return v == null ? null : v.toString();
  }

  public Long longValue(String column) {
    return (Long) get(column);
  }

  public long longOr(String column, long fallback) {
    Long v = longValue(column);
    return v == null ? fallback : v;
  }

  public int intValue(String column) {
    return Math.toIntExact((Long) get(column));
  }

  public Boolean bool(String column) {
    return (Boolean) get(column);
  }

  public Instant instant(String column) {
    return (Instant) get(column);
  }

  public UUID uuid(String column) {
    return (UUID) get(column);
  }

  public Json json(String column) {
    return (Json) get(column);
  }

  @Override
  public String toString() {
    return values.toString();
  }
}
