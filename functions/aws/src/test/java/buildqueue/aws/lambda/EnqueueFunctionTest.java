package buildqueue.aws.lambda;

import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.api.ApiRequest;
import buildqueue.aws.AwsSettings.Component;
import buildqueue.aws.testing.ApiFunctionCalls;
import buildqueue.aws.testing.QueueWorld;
import buildqueue.aws.testing.SampleEvents;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.TestDatabase;
import com.amazonaws.services.lambda.runtime.events.APIGatewayV2HTTPEvent;
import com.amazonaws.services.lambda.runtime.events.APIGatewayV2HTTPResponse;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@ExtendWith(PostgresExtension.class)
class EnqueueFunctionTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * The sample API Gateway event, with another method, path, body or claims where a test needs
   * them.
   */
  private static ObjectNode sample() {
    return SampleEvents.tree("api-gateway-post-jobs.json");
  }

  private static ObjectNode route(ObjectNode e, String method, String path, String query) {
    e.put("rawPath", path).put("rawQueryString", query).put("routeKey", method + " " + path);
    ObjectNode http = (ObjectNode) e.get("requestContext").get("http");
    http.put("method", method).put("path", path);
    if (method.equals("GET")) {
      e.remove("body");
      e.put("isBase64Encoded", false);
    }
    return e;
  }

  private static ObjectNode claims(ObjectNode e) {
    return (ObjectNode) e.get("requestContext").get("authorizer").get("jwt").get("claims");
  }

  private static APIGatewayV2HTTPResponse invoke(QueueWorld w, ObjectNode event) {
    return ApiFunctionCalls.invoke(w.services, event);
  }

  private static JsonNode body(APIGatewayV2HTTPResponse r) throws Exception {
    return JSON.readTree(r.getBody());
  }

  @Test
  void the_function_reads_an_event_as_the_runtime_binds_it() {
    ObjectNode base64 = sample();
    base64
        .put(
            "body",
            Base64.getEncoder()
                .encodeToString(base64.get("body").asText().getBytes(StandardCharsets.UTF_8)))
        .put("isBase64Encoded", true);
    ObjectNode scp = sample();
    claims(scp).put("scp", "[buildqueue/admin]");
    for (ObjectNode e :
        java.util.List.of(sample(), route(sample(), "GET", "/jobs/7", "a=1&b=2"), base64, scp)) {
      ApiRequest ours =
          EnqueueFunction.toApiRequest(EnqueueFunction.readEvent(SampleEvents.bytes(e)));
      ApiRequest runtime =
          EnqueueFunction.toApiRequest(
              SampleEvents.asLambdaEvent(SampleEvents.bytes(e), APIGatewayV2HTTPEvent.class));

      assertThat(ours.method()).isEqualTo(runtime.method());
      assertThat(ours.path()).isEqualTo(runtime.path());
      assertThat(ours.query()).isEqualTo(runtime.query());
      assertThat(ours.headers()).isEqualTo(runtime.headers());
      assertThat(ours.body()).isEqualTo(runtime.body());
      assertThat(ours.caller()).isEqualTo(runtime.caller());
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void a_post_with_jwt_claims_enqueues_for_the_sub_and_dispatches(String adapter, TestDatabase tdb)
      throws Exception {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.ENQUEUE)) {
      APIGatewayV2HTTPResponse r = invoke(w, sample());

      assertThat(r.getStatusCode()).isEqualTo(201);
      assertThat(r.getHeaders()).containsEntry("Content-Type", "application/json");
      JsonNode job = body(r);
      assertThat(job.get("userId").asText()).isEqualTo("user-7f3a");
      assertThat(job.get("kind").asText()).isEqualTo("demo");
      assertThat(job.get("payload").get("steps").asInt()).isEqualTo(3);
      assertThat(r.getHeaders()).containsEntry("Location", "/jobs/" + job.get("id").asLong());
      assertThat(w.job(job.get("id").asLong()).string("status")).isEqualTo("dispatched");
      assertThat(w.platform.launches()).hasSize(1);
    }
  }

  @Test
  void the_same_idempotency_key_answers_the_existing_job(TestDatabase tdb) throws Exception {
    try (QueueWorld w = new QueueWorld(tdb, Component.ENQUEUE)) {
      long first = body(invoke(w, sample())).get("id").asLong();

      APIGatewayV2HTTPResponse again = invoke(w, sample());

      assertThat(again.getStatusCode()).isEqualTo(200);
      assertThat(body(again).get("id").asLong()).isEqualTo(first);
      assertThat(tdb.jdbc().query("select id from build_job")).hasSize(1);
    }
  }

  @ParameterizedTest(name = "on {0}")
  @ValueSource(strings = {"jdbc", "dataapi"})
  void the_jobs_events_are_published_after_the_request(String adapter, TestDatabase tdb)
      throws Exception {
    try (QueueWorld w = new QueueWorld(adapter, tdb, Component.ENQUEUE)) {
      long id = body(invoke(w, sample())).get("id").asLong();

      assertThat(w.unpublishedEvents()).isZero();
      assertThat(w.eventBridge.accepted())
          .allSatisfy(
              e -> {
                assertThat(e.source()).isEqualTo("buildqueue");
                assertThat(e.detailType()).isEqualTo("Build Job State Change");
                assertThat(e.eventBusName()).isEqualTo("buildqueue-test-bus");
                assertThat(e.detail().get("jobId").asLong()).isEqualTo(id);
                assertThat(e.detail().get("userId").asText()).isEqualTo("user-7f3a");
              })
          .extracting(e -> e.detail().get("type").asText())
          .containsExactly("enqueued", "dispatched");
      JsonNode line = w.metrics.last("enqueue");
      assertThat(line.get("Launches").asLong()).isEqualTo(1);
      assertThat(line.get("requestId").asText()).isEqualTo("Bq3x7hZ5joEEMxw=");
    }
  }

  @Test
  void a_plain_text_body_is_read_as_it_is(TestDatabase tdb) throws Exception {
    try (QueueWorld w = new QueueWorld(tdb, Component.ENQUEUE)) {
      ObjectNode e = sample();
      e.put("isBase64Encoded", false).put("body", "{\"kind\": \"demo\"}");

      APIGatewayV2HTTPResponse r = invoke(w, e);

      assertThat(r.getStatusCode()).isEqualTo(201);
      assertThat(r.getIsBase64Encoded()).isFalse();
    }
  }

  @Test
  void the_admin_scope_comes_from_the_scope_or_scp_claim_or_the_authorizer_scopes(
      TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(tdb, Component.ENQUEUE)) {
      ObjectNode plain = route(sample(), "GET", "/lanes", "");
      ObjectNode scope = route(sample(), "GET", "/lanes", "");
      claims(scope).put("scope", "openid buildqueue/jobs buildqueue/admin");
      ObjectNode scp = route(sample(), "GET", "/lanes", "");
      claims(scp).remove("scope");
      claims(scp).put("scp", "[buildqueue/jobs buildqueue/admin]");
      ObjectNode authorizerScopes = route(sample(), "GET", "/lanes", "");
      ((ObjectNode) authorizerScopes.get("requestContext").get("authorizer").get("jwt"))
          .putArray("scopes")
          .add("buildqueue/admin");

      assertThat(invoke(w, plain).getStatusCode()).isEqualTo(403);
      assertThat(invoke(w, scope).getStatusCode()).isEqualTo(200);
      assertThat(invoke(w, scp).getStatusCode()).isEqualTo(200);
      assertThat(invoke(w, authorizerScopes).getStatusCode()).isEqualTo(200);
    }
  }

  @Test
  void a_verified_token_without_exp_or_lasting_over_30_days_names_no_caller_and_says_why() {
    ObjectNode noExp = sample();
    claims(noExp).remove("exp");
    ObjectNode aYear = sample();
    claims(aYear).put("exp", Long.toString(claims(aYear).get("iat").asLong() + 366L * 86400));
    ObjectNode oneHour = sample();
    for (Object[] c :
        new Object[][] {
          {noExp, "The token has no exp claim"}, {aYear, "longer than the 30 days"}, {oneHour, null}
        }) {
      ApiRequest r =
          EnqueueFunction.toApiRequest(
              EnqueueFunction.readEvent(SampleEvents.bytes((ObjectNode) c[0])));
      if (c[1] == null) {
        assertThat(r.caller()).isNotNull();
        assertThat(r.tokenRefusal()).isNull();
      } else {
        assertThat(r.caller()).isNull();
        assertThat(r.tokenRefusal()).contains((String) c[1]);
      }
    }
  }

  @Test
  void a_token_without_exp_gets_401_saying_so(TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(tdb, Component.ENQUEUE)) {
      ObjectNode e = route(sample(), "GET", "/jobs", "");
      claims(e).remove("exp");
      APIGatewayV2HTTPResponse r = invoke(w, e);
      assertThat(r.getStatusCode()).isEqualTo(401);
      assertThat(r.getBody()).contains("no exp claim");
    }
  }

  @Test
  void head_answers_as_get_without_a_body(TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(tdb, Component.ENQUEUE)) {
      ObjectNode health = route(sample(), "HEAD", "/health", "");
      ((ObjectNode) health.get("requestContext")).remove("authorizer");
      APIGatewayV2HTTPResponse up = invoke(w, health);
      APIGatewayV2HTTPResponse jobs = invoke(w, route(sample(), "HEAD", "/jobs", ""));
      assertThat(up.getStatusCode()).isEqualTo(200);
      assertThat(jobs.getStatusCode()).isEqualTo(200);
      assertThat(jobs.getHeaders()).containsEntry("Content-Type", "application/json");
      assertThat(up.getBody()).isEmpty();
      assertThat(jobs.getBody()).isEmpty();
    }
  }

  @Test
  void the_read_only_admin_scope_from_the_jwt_reads_what_an_admin_reads_and_submits_nothing(
      TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(tdb, Component.ENQUEUE)) {
      ObjectNode lanes = route(sample(), "GET", "/lanes", "");
      claims(lanes).put("scope", "openid buildqueue/admin.read");
      ObjectNode submit = sample();
      claims(submit).remove("scope");
      claims(submit).put("scp", "[buildqueue/admin.read]");
      long jobsBefore = count(tdb, "build_job");

      APIGatewayV2HTTPResponse read = invoke(w, lanes);
      APIGatewayV2HTTPResponse refused = invoke(w, submit);

      assertThat(read.getStatusCode()).isEqualTo(200);
      assertThat(refused.getStatusCode()).isEqualTo(403);
      assertThat(refused.getBody()).contains("read-only", "buildqueue/admin.read");
      assertThat(count(tdb, "build_job")).isEqualTo(jobsBefore);
    }
  }

  private static long count(TestDatabase tdb, String table) {
    return tdb.jdbc()
        .query("select count(*) as n from " + table, buildqueue.db.Params.none())
        .get(0)
        .longValue("n");
  }

  @Test
  void a_route_without_an_authorizer_has_no_caller(TestDatabase tdb) {
    try (QueueWorld w = new QueueWorld(tdb, Component.ENQUEUE)) {
      ObjectNode health = route(sample(), "GET", "/health", "");
      ((ObjectNode) health.get("requestContext")).remove("authorizer");
      ObjectNode jobs = route(sample(), "GET", "/jobs", "status=queued");
      ((ObjectNode) jobs.get("requestContext")).remove("authorizer");

      APIGatewayV2HTTPResponse up = invoke(w, health);
      APIGatewayV2HTTPResponse refused = invoke(w, jobs);

      assertThat(up.getStatusCode()).isEqualTo(200);
      assertThat(up.getBody()).contains("\"up\"");
      assertThat(refused.getStatusCode()).isEqualTo(401);
      assertThat(refused.getHeaders()).containsEntry("Content-Type", "application/problem+json");
    }
  }

  @Test
  void malformed_json_gets_a_problem_and_writes_nothing(TestDatabase tdb) throws Exception {
    try (QueueWorld w = new QueueWorld(tdb, Component.ENQUEUE)) {
      ObjectNode e = sample();
      e.put(
          "body",
          Base64.getEncoder().encodeToString("{\"kind\": ".getBytes(StandardCharsets.UTF_8)));

      APIGatewayV2HTTPResponse r = invoke(w, e);

      assertThat(r.getStatusCode()).isEqualTo(400);
      assertThat(r.getHeaders()).containsEntry("Content-Type", "application/problem+json");
      assertThat(body(r).get("detail").asText()).isNotBlank();
      assertThat(tdb.jdbc().query("select id from build_job")).isEmpty();
      assertThat(w.eventBridge.received()).isEmpty();
    }
  }

  @Test
  void the_query_string_reaches_the_api(TestDatabase tdb) throws Exception {
    try (QueueWorld w = new QueueWorld(tdb, Component.ENQUEUE)) {
      invoke(w, sample());
      APIGatewayV2HTTPResponse succeeded =
          invoke(w, route(sample(), "GET", "/jobs", "status=succeeded"));
      APIGatewayV2HTTPResponse dispatched =
          invoke(w, route(sample(), "GET", "/jobs", "status=dispatched"));

      assertThat(body(succeeded).get("jobs")).isEmpty();
      assertThat(body(dispatched).get("jobs")).hasSize(1);
    }
  }
}
