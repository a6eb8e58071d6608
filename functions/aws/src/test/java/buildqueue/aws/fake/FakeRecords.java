package buildqueue.aws.fake;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Types;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Base64;

/**
 * Result sets as the Data API returns them: each row a list of {@code Field}s chosen by the JDBC
 * column type, and {@code columnMetadata} from the JDBC metadata. Timestamps become strings without
 * offset in UTC (whole seconds have no fraction, others their significant digits); uuid, json,
 * jsonb, numeric, date and text are {@code stringValue}s.
 */
final class FakeRecords {
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
  private static final DateTimeFormatter SECONDS =
      DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss");

  private FakeRecords() {}

  /** The rows of {@code rs}, each counted against the Data API's size limits as it is read. */
  static ArrayNode records(ResultSet rs, ResultSizeLimits limits) throws SQLException {
    ResultSetMetaData md = rs.getMetaData();
    ArrayNode records = NODES.arrayNode();
    while (rs.next()) {
      limits.count(rs, md.getColumnCount());
      ArrayNode record = records.addArray();
      for (int i = 1; i <= md.getColumnCount(); i++) {
        record.add(field(rs, i, md.getColumnType(i), md.getColumnTypeName(i)));
      }
    }
    return records;
  }

  private static JsonNode field(ResultSet rs, int i, int type, String typeName)
      throws SQLException {
    ObjectNode f = NODES.objectNode();
    if (rs.getObject(i) == null) {
      return f.put("isNull", true);
    }
    switch (type) {
      case Types.BIT, Types.BOOLEAN -> f.put("booleanValue", rs.getBoolean(i));
      case Types.TINYINT, Types.SMALLINT, Types.INTEGER, Types.BIGINT ->
          f.put("longValue", rs.getLong(i));
      case Types.REAL, Types.FLOAT, Types.DOUBLE -> f.put("doubleValue", rs.getDouble(i));
      case Types.TIMESTAMP, Types.TIMESTAMP_WITH_TIMEZONE ->
          f.put("stringValue", timestamp(rs, i, typeName));
      case Types.BINARY, Types.VARBINARY, Types.LONGVARBINARY ->
          f.put("blobValue", Base64.getEncoder().encodeToString(rs.getBytes(i)));
      case Types.ARRAY -> f.set("arrayValue", array(rs.getArray(i)));
      default -> f.put("stringValue", rs.getString(i));
    }
    return f;
  }

  private static String timestamp(ResultSet rs, int i, String typeName) throws SQLException {
    LocalDateTime t =
        typeName.equals("timestamptz")
            ? rs.getObject(i, OffsetDateTime.class)
                .withOffsetSameInstant(ZoneOffset.UTC)
                .toLocalDateTime()
            : rs.getObject(i, LocalDateTime.class);
    String seconds = SECONDS.format(t);
    if (t.getNano() == 0) {
      return seconds;
    }
    return seconds + "." + String.format("%09d", t.getNano()).replaceAll("0+$", "");
  }

  private static ObjectNode array(Array array) throws SQLException {
    Object[] elements = (Object[]) array.getArray();
    ObjectNode value = NODES.objectNode();
    String member =
        elements.length == 0 || elements[0] instanceof String
            ? "stringValues"
            : elements[0] instanceof Number n && !(n instanceof Double || n instanceof Float)
                ? "longValues"
                : elements[0] instanceof Boolean
                    ? "booleanValues"
                    : elements[0] instanceof Number ? "doubleValues" : "stringValues";
    ArrayNode values = value.putArray(member);
    for (Object e : elements) {
      switch (member) {
        case "longValues" -> values.add(((Number) e).longValue());
        case "doubleValues" -> values.add(((Number) e).doubleValue());
        case "booleanValues" -> values.add((Boolean) e);
        default -> values.add(String.valueOf(e));
      }
    }
    return value;
  }

  static ArrayNode columnMetadata(ResultSetMetaData md) throws SQLException {
    ArrayNode columns = NODES.arrayNode();
    for (int i = 1; i <= md.getColumnCount(); i++) {
      columns
          .addObject()
          .put("name", md.getColumnName(i))
          .put("label", md.getColumnLabel(i))
          .put("typeName", md.getColumnTypeName(i))
          .put("type", md.getColumnType(i))
          .put("nullable", md.isNullable(i))
          .put("isSigned", md.isSigned(i))
          .put("isCaseSensitive", md.isCaseSensitive(i))
          .put("isCurrency", md.isCurrency(i))
          .put("isAutoIncrement", md.isAutoIncrement(i))
          .put("precision", md.getPrecision(i))
          .put("scale", md.getScale(i))
          .put("schemaName", md.getSchemaName(i))
          .put("tableName", md.getTableName(i))
          .put("arrayBaseColumnType", 0);
    }
    return columns;
  }
}
