package buildqueue.aws.db;

import buildqueue.db.DatabaseException;
import buildqueue.db.Json;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoField;
import java.time.temporal.ChronoUnit;
import java.util.HexFormat;
import java.util.UUID;
import software.amazon.awssdk.services.rdsdata.model.ColumnMetadata;
import software.amazon.awssdk.services.rdsdata.model.Field;
import software.amazon.awssdk.services.rdsdata.model.SqlParameter;
import software.amazon.awssdk.services.rdsdata.model.TypeHint;

/**
 * Java values to Data API {@link Field}s and back, normalised as {@link buildqueue.db.Database}
 * promises (the same Java types {@code JdbcDatabase} returns).
 */
final class DataApiValues {
  /**
   * The documented TIMESTAMP hint format, {@code YYYY-MM-DD HH:MM:SS[.FFF]}: milliseconds, so finer
   * digits of an {@link Instant} are dropped. There is no timestamptz hint: the value is read as a
   * {@code timestamp} and turned into {@code timestamptz} in the session's time zone, which on
   * Aurora is UTC unless the cluster parameter group changes it (keep it UTC).
   */
  private static final DateTimeFormatter TIMESTAMP_OUT =
      DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSS").withZone(ZoneOffset.UTC);

  /** What the Data API returns for timestamp columns: no offset, 0 to 9 fraction digits, UTC. */
  private static final DateTimeFormatter TIMESTAMP_IN =
      new DateTimeFormatterBuilder()
          .appendPattern("uuuu-MM-dd HH:mm:ss")
          .optionalStart()
          .appendFraction(ChronoField.NANO_OF_SECOND, 0, 9, true)
          .optionalEnd()
          .toFormatter();

  private DataApiValues() {}

  static SqlParameter parameter(String name, Object value) {
    SqlParameter.Builder p = SqlParameter.builder().name(name);
    if (value == null) {
      p.value(Field.fromIsNull(true));
    } else if (value instanceof String s) {
      p.value(Field.fromStringValue(s));
    } else if (value instanceof Long l) {
      p.value(Field.fromLongValue(l));
    } else if (value instanceof Integer i) {
      p.value(Field.fromLongValue(i.longValue()));
    } else if (value instanceof Boolean b) {
      p.value(Field.fromBooleanValue(b));
    } else if (value instanceof Instant t) {
      p.value(Field.fromStringValue(formatTimestamp(t))).typeHint(TypeHint.TIMESTAMP);
    } else if (value instanceof UUID u) {
      p.value(Field.fromStringValue(u.toString())).typeHint(TypeHint.UUID);
    } else if (value instanceof Json j) {
      p.value(Field.fromStringValue(j.text())).typeHint(TypeHint.JSON);
    } else {
      // Params rejects other types when they are added; this guards a new type added there only.
      throw new IllegalArgumentException(
          "parameter :"
              + name
              + " has a type the Data API adapter cannot send: "
              + value.getClass().getName());
    }
    return p.build();
  }

  static String formatTimestamp(Instant t) {
    return TIMESTAMP_OUT.format(t.truncatedTo(ChronoUnit.MILLIS));
  }

  static Instant parseTimestamp(String s) {
    return LocalDateTime.parse(s, TIMESTAMP_IN).toInstant(ZoneOffset.UTC);
  }

  /** The Java value of one result field; the column's {@code typeName} says what a string holds. */
  static Object read(Field f, ColumnMetadata column) {
    String typeName = column.typeName() == null ? "" : column.typeName();
    try {
      return switch (f.type()) {
        case IS_NULL -> null;
        case LONG_VALUE -> f.longValue();
        case BOOLEAN_VALUE -> f.booleanValue();
        // JDBC hands out float4 as Float and float8 as Double; keep the two adapters alike.
        case DOUBLE_VALUE ->
            typeName.equals("float4") ? (Object) f.doubleValue().floatValue() : f.doubleValue();
        case STRING_VALUE -> fromString(f.stringValue(), typeName);
        // JDBC's getString of a bytea is its hex text form.
        case BLOB_VALUE -> "\\x" + HexFormat.of().formatHex(f.blobValue().asByteArray());
        case ARRAY_VALUE ->
            throw unsupported(column, "arrays (select array_to_json(...) or a text cast instead)");
        case UNKNOWN_TO_SDK_VERSION ->
            throw unsupported(column, "a value kind this SDK version does not know");
      };
    } catch (DateTimeParseException | IllegalArgumentException e) {
      throw new DatabaseException(
          "column "
              + label(column)
              + " ("
              + typeName
              + ") holds a value the adapter cannot read: "
              + e.getMessage(),
          e);
    }
  }

  private static Object fromString(String s, String typeName) {
    return switch (typeName) {
      case "timestamptz", "timestamp" -> parseTimestamp(s);
      case "uuid" -> UUID.fromString(s);
      case "json", "jsonb" -> new Json(s);
      // Returned as strings when longReturnType/decimalReturnType ask for it.
      case "int2", "int4", "int8", "oid", "serial", "bigserial", "smallserial" -> Long.parseLong(s);
      case "numeric" -> new BigDecimal(s);
      default -> s;
    };
  }

  static String label(ColumnMetadata c) {
    return c.label() != null && !c.label().isEmpty() ? c.label() : c.name();
  }

  private static DatabaseException unsupported(ColumnMetadata column, String what) {
    return new DatabaseException(
        "column "
            + label(column)
            + " ("
            + column.typeName()
            + "): the Data API adapter does not read "
            + what);
  }
}
