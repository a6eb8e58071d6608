package buildqueue.aws.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.db.DatabaseException;
import buildqueue.db.Json;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.rdsdata.model.ColumnMetadata;
import software.amazon.awssdk.services.rdsdata.model.Field;
import software.amazon.awssdk.services.rdsdata.model.SqlParameter;
import software.amazon.awssdk.services.rdsdata.model.TypeHint;

/** The field mapping on its own, for the shapes the fake never produces. */
class DataApiValuesTest {

  private static ColumnMetadata column(String typeName) {
    return ColumnMetadata.builder().name("c").label("c").typeName(typeName).build();
  }

  @Test
  void timestamps_are_read_as_utc_with_any_number_of_fraction_digits() {
    assertThat(DataApiValues.parseTimestamp("2026-12-01 10:00:00"))
        .isEqualTo(Instant.parse("2026-12-01T10:00:00Z"));
    assertThat(DataApiValues.parseTimestamp("2026-12-01 10:00:00.0"))
        .isEqualTo(Instant.parse("2026-12-01T10:00:00Z"));
    assertThat(DataApiValues.parseTimestamp("2026-12-01 10:00:00.5"))
        .isEqualTo(Instant.parse("2026-12-01T10:00:00.5Z"));
    assertThat(DataApiValues.parseTimestamp("2026-12-01 10:00:00.123456"))
        .isEqualTo(Instant.parse("2026-12-01T10:00:00.123456Z"));
    assertThat(DataApiValues.parseTimestamp("2026-12-01 10:00:00.123456789"))
        .isEqualTo(Instant.parse("2026-12-01T10:00:00.123456789Z"));
  }

  @Test
  void instants_are_written_in_the_documented_timestamp_format() {
    assertThat(DataApiValues.formatTimestamp(Instant.parse("2026-12-01T10:00:00Z")))
        .isEqualTo("2026-12-01 10:00:00.000");
    assertThat(DataApiValues.formatTimestamp(Instant.parse("2026-12-01T10:00:00.123999Z")))
        .isEqualTo("2026-12-01 10:00:00.123");
    assertThat(DataApiValues.formatTimestamp(Instant.parse("1969-12-31T23:59:59.999999Z")))
        .isEqualTo("1969-12-31 23:59:59.999");
  }

  @Test
  void each_java_type_becomes_its_field_and_type_hint() {
    UUID id = UUID.fromString("6f1d2c8e-2b7a-4e55-9d0c-3a1f0b9e7c21");
    assertThat(DataApiValues.parameter("a", null).value()).isEqualTo(Field.fromIsNull(true));
    assertThat(DataApiValues.parameter("a", "s").value()).isEqualTo(Field.fromStringValue("s"));
    assertThat(DataApiValues.parameter("a", 7).value()).isEqualTo(Field.fromLongValue(7L));
    assertThat(DataApiValues.parameter("a", 7L).value()).isEqualTo(Field.fromLongValue(7L));
    assertThat(DataApiValues.parameter("a", true).value()).isEqualTo(Field.fromBooleanValue(true));
    SqlParameter at = DataApiValues.parameter("a", Instant.parse("2026-12-01T10:00:00.5Z"));
    assertThat(at.value()).isEqualTo(Field.fromStringValue("2026-12-01 10:00:00.500"));
    assertThat(at.typeHint()).isEqualTo(TypeHint.TIMESTAMP);
    SqlParameter uuid = DataApiValues.parameter("a", id);
    assertThat(uuid.value()).isEqualTo(Field.fromStringValue(id.toString()));
    assertThat(uuid.typeHint()).isEqualTo(TypeHint.UUID);
    SqlParameter json = DataApiValues.parameter("a", new Json("{}"));
    assertThat(json.value()).isEqualTo(Field.fromStringValue("{}"));
    assertThat(json.typeHint()).isEqualTo(TypeHint.JSON);
    assertThat(DataApiValues.parameter("a", "s").typeHint()).isNull();
  }

  @Test
  void integers_sent_as_strings_are_still_longs() {
    assertThat(DataApiValues.read(Field.fromStringValue("9223372036854775807"), column("int8")))
        .isEqualTo(Long.MAX_VALUE);
  }

  @Test
  void an_unknown_type_is_read_as_its_text() {
    assertThat(DataApiValues.read(Field.fromStringValue("01:00:00"), column("interval")))
        .isEqualTo("01:00:00");
    assertThat(
            DataApiValues.read(
                Field.fromStringValue("x"), ColumnMetadata.builder().name("c").build()))
        .isEqualTo("x");
  }

  @Test
  void an_unreadable_value_names_its_column() {
    assertThatThrownBy(
            () -> DataApiValues.read(Field.fromStringValue("infinity"), column("timestamptz")))
        .isInstanceOf(DatabaseException.class)
        .hasMessageContaining("column c (timestamptz)");
  }
}
