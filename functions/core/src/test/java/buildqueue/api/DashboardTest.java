package buildqueue.api;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The dashboard page as served: static, token-free, locked down by its CSP, selectors as
 * documented.
 */
@ExtendWith(PostgresExtension.class)
class DashboardTest {

  @Test
  void the_page_is_served_without_a_token_and_carries_no_data(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb)) {
      f.submit(ApiFixture.ALICE, "noop", "{\"secret\": \"s3cr3t\"}");

      ApiResponse r = f.get("/", null);

      assertThat(r.status()).isEqualTo(200);
      assertThat(r.header("Content-Type")).hasValue("text/html; charset=utf-8");
      assertThat(r.bodyText()).doesNotContain("alice").doesNotContain("s3cr3t");
      assertThat(r.bodyText()).isEqualTo(f.get("/?anything=1", ApiFixture.ADMIN).bodyText());
    }
  }

  @Test
  void the_csp_allows_exactly_the_pages_own_inline_script_and_style() throws Exception {
    ApiResponse r = Dashboard.page();
    String html = r.bodyText();
    String csp = r.header("Content-Security-Policy").orElseThrow();

    assertThat(csp)
        .contains("default-src 'none'")
        .contains("connect-src 'self'")
        .contains("frame-ancestors 'none'")
        .doesNotContain("unsafe-inline")
        .doesNotContain("unsafe-eval");
    assertThat(csp).contains("script-src '" + sha256(between(html, "<script>", "</script>")) + "'");
    assertThat(csp).contains("style-src '" + sha256(between(html, "<style>", "</style>")) + "'");
    assertThat(r.header("X-Content-Type-Options")).hasValue("nosniff");
  }

  @Test
  void the_page_loads_nothing_from_elsewhere_and_never_writes_markup_from_data() {
    String html = Dashboard.page().bodyText();
    String script = between(html, "<script>", "</script>");

    assertThat(html).doesNotContainPattern("(src|href)=\"(https?:)?//");
    assertThat(script)
        .doesNotContain("innerHTML")
        .doesNotContain("outerHTML")
        .doesNotContain("insertAdjacentHTML")
        .doesNotContain("document.write")
        .doesNotContain("eval(");
  }

  @Test
  void every_api_call_of_the_page_carries_the_token() {
    String script = between(Dashboard.page().bodyText(), "<script>", "</script>");

    assertThat(count(script, "fetch(")).as("one place calls the API").isEqualTo(1);
    Matcher fetch =
        Pattern.compile(
                "fetch\\(path, \\{ headers: \\{ \"Authorization\": \"Bearer \" \\+ token\\(\\)")
            .matcher(script);
    assertThat(fetch.find()).as("that call sends Authorization: Bearer <token>").isTrue();
    assertThat(script)
        .contains("api(\"lanes?queuedLimit=50\")")
        .contains("api(\"jobs?limit=30\")")
        .contains("api(\"jobs?status=failed&limit=10\")");
  }

  @Test
  void every_id_the_header_comment_documents_is_in_the_page() {
    String html = Dashboard.page().bodyText();
    String comment = between(html, "Stable selectors", "-->");
    Set<String> ids = new LinkedHashSet<>();
    Matcher m = Pattern.compile("#([a-z][a-z-]+)").matcher(comment);
    while (m.find()) {
      ids.add(m.group(1));
    }

    assertThat(ids)
        .contains(
            "login",
            "token-input",
            "token-save",
            "lanes",
            "jobs",
            "failures",
            "history",
            "history-events",
            "history-log");
    for (String id : ids) {
      assertThat(html).as("element #" + id).contains("id=\"" + id + "\"");
    }
    for (String cls :
        new String[] {
          "lane",
          "slot",
          "worker",
          "lease",
          "job",
          "progress",
          "progress-text",
          "queued-job",
          "job-row",
          "failure",
          "event",
          "worker-status",
          "worker-task",
          "lane-queued"
        }) {
      assertThat(comment).as("documented ." + cls).contains("." + cls);
      assertThat(html).as("class " + cls + " used by the script").contains("\"" + cls + "\"");
    }
    for (String attribute :
        new String[] {
          "data-slot",
          "data-lane",
          "data-job-id",
          "data-worker-id",
          "data-status",
          "data-progress",
          "data-steps",
          "data-position",
          "data-lease-ends",
          "data-type",
          "data-queued"
        }) {
      assertThat(comment).as("documented " + attribute).contains(attribute);
      assertThat(between(html, "<script>", "</script>"))
          .as(attribute + " set by the script")
          .contains("\"" + attribute + "\"");
    }
  }

  private static String between(String s, String open, String close) {
    int start = s.indexOf(open);
    int end = s.indexOf(close, start);
    assertThat(start).as(open).isNotNegative();
    assertThat(end).as(close).isNotNegative();
    return s.substring(start + open.length(), end);
  }

  private static String sha256(String content) throws Exception {
    byte[] digest =
        MessageDigest.getInstance("SHA-256").digest(content.getBytes(StandardCharsets.UTF_8));
    return "sha256-" + Base64.getEncoder().encodeToString(digest);
  }

  private static int count(String s, String part) {
    int n = 0;
    for (int i = s.indexOf(part); i >= 0; i = s.indexOf(part, i + 1)) {
      n++;
    }
    return n;
  }
}
