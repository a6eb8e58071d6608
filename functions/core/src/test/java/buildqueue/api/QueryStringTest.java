package buildqueue.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class QueryStringTest {

  @Test
  void a_query_is_decoded_in_order_keeping_repeated_names() {
    Map<String, List<String>> q =
        QueryString.parse("status=queued&limit=5&status=running%2Cfailed&x=a+b&flag");

    assertThat(q)
        .containsExactly(
            Map.entry("status", List.of("queued", "running,failed")),
            Map.entry("limit", List.of("5")),
            Map.entry("x", List.of("a b")),
            Map.entry("flag", List.of("")));
  }

  @Test
  void an_empty_or_missing_query_has_no_parameters() {
    assertThat(QueryString.parse("")).isEmpty();
    assertThat(QueryString.parse(null)).isEmpty();
  }

  @Test
  void multi_byte_utf8_is_decoded() {
    assertThat(QueryString.parse("u=%C3%A9%F0%9F%98%80").get("u")).containsExactly("é😀");
    assertThat(QueryString.decodeSegment("a+b%20c")).isEqualTo("a+b c");
  }

  @Test
  void a_malformed_escape_or_bytes_that_are_not_utf8_are_refused() {
    assertThatThrownBy(() -> QueryString.parse("a=%"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("two hex digits");
    assertThatThrownBy(() -> QueryString.parse("a=%G1"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> QueryString.parse("a=%FF"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not UTF-8");
    assertThatThrownBy(() -> QueryString.decodeSegment("%ED%A0%80"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void request_headers_are_matched_whatever_their_case() {
    ApiRequest r =
        ApiRequest.of("GET", "/jobs", Map.of("content-TYPE", "application/json"), null, null);

    assertThat(r.header("Content-Type")).hasValue("application/json");
    assertThat(r.header("CONTENT-TYPE")).hasValue("application/json");
    assertThat(r.headers().get("content-type")).isEqualTo("application/json");
    assertThat(r.toString()).doesNotContain("application/json");
  }

  @Test
  void a_caller_is_admin_with_the_admin_scope_among_others() {
    assertThat(Caller.of("a", List.of("openid buildqueue/admin")).admin()).isTrue();
    assertThat(Caller.of("a", List.of("openid", "buildqueue/admin")).admin()).isTrue();
    assertThat(Caller.of("a", List.of("buildqueue/administrator")).admin()).isFalse();
    assertThat(Caller.of("a", null).admin()).isFalse();
  }
}
