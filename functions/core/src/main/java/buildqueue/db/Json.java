package buildqueue.db;

import java.util.Objects;

/** A JSON document passed to or read from a {@code json}/{@code jsonb} column, as text. */
public record Json(String text) {
  public Json {
    Objects.requireNonNull(text, "text");
  }

  @Override
  public String toString() {
    return text;
  }
}
