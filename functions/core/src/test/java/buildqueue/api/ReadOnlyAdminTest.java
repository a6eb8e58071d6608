package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.core.JobStatus;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.Rows;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The read-only admin scope ({@link Caller#READ_ONLY_ADMIN_SCOPE}): walks every operation of
 * openapi.json, so an operation added later is covered without a line here. A mutating one answers
 * the read-only caller 403 and writes nothing; a read answers it exactly as it answers an admin.
 */
@ExtendWith(PostgresExtension.class)
class ReadOnlyAdminTest {
  private static final Caller READER = Caller.readOnlyAdmin("support");
  private static final Set<String> READS = Set.of("GET", "HEAD");

  /** An operation of the document, with its path parameters filled in. */
  private record Operation(String method, String template) {
    String target(long jobId) {
      return template.replace("{id}", Long.toString(jobId)).replaceAll("\\{[^}]+}", "alice");
    }
  }

  private static List<Operation> documented() {
    List<Operation> ops = new ArrayList<>();
    JsonNode paths = OpenApiContract.shipped().document().get("paths");
    paths
        .fields()
        .forEachRemaining(
            path ->
                path.getValue()
                    .fieldNames()
                    .forEachRemaining(
                        method -> {
                          if (Set.of("get", "head", "post", "put", "patch", "delete")
                              .contains(method)) {
                            ops.add(new Operation(method.toUpperCase(), path.getKey()));
                          }
                        }));
    return ops;
  }

  @Test
  void every_mutating_operation_answers_a_read_only_admin_403_and_writes_nothing(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig(), true)) {
      f.submit(ALICE, "noop", "{}");
      long queued = f.submit(ALICE, "noop", "{}");
      long failed = Rows.job().user("alice").status(JobStatus.FAILED).insert(tdb.jdbc());
      Map<String, Long> before = f.rowCounts();
      List<Operation> writes =
          documented().stream().filter(o -> !READS.contains(o.method())).toList();
      assertThat(writes)
          .as("the walk reaches the operations that change things")
          .extracting(o -> o.method() + " " + o.template())
          .contains(
              "POST /jobs", "POST /jobs/{id}/cancel", "POST /jobs/cancel", "PUT /users/{userId}");

      // The API as the local server serves it: its local-only routes (a Spot reclaim) included.
      CheckedApi local =
          new CheckedApi(
              new HttpApi(f.h.queue, f.queries, f.h.handlers)
                  .withSpotReclaims(
                      worker -> {
                        throw new AssertionError("a read-only admin reached a reclaim");
                      }));
      for (Operation op : writes) {
        for (long id : new long[] {queued, failed}) {
          String target = op.target(id);
          ApiResponse r =
              local.handle(
                  ApiRequest.of(
                      op.method(),
                      target,
                      Map.of("Content-Type", "application/json"),
                      "{\"kind\": \"noop\", \"userId\": \"alice\", \"dedicatedWorker\": true}"
                          .getBytes(java.nio.charset.StandardCharsets.UTF_8),
                      READER));
          JsonNode problem = assertProblem(r, 403, target);
          assertThat(problem.get("detail").asText())
              .as(op.toString())
              .contains("read-only", Caller.READ_ONLY_ADMIN_SCOPE, "nothing was written");
        }
      }
      assertThat(f.rowCounts()).isEqualTo(before);
      assertThat(f.h.status(queued)).isEqualTo("queued");
      assertThat(f.h.job(queued).bool("cancel_requested")).isFalse();
    }
  }

  @Test
  void every_read_answers_a_read_only_admin_as_it_answers_an_admin(TestDatabase tdb) {
    try (ApiFixture f = new ApiFixture(tdb, QueueHarness.testConfig(), true)) {
      f.submit(ALICE, "noop", "{}");
      long queued = f.submit(ALICE, "noop", "{}");
      f.submit(ApiFixture.BOB, "noop", "{}");
      List<Operation> reads =
          documented().stream().filter(o -> READS.contains(o.method())).toList();
      assertThat(reads)
          .extracting(o -> o.method() + " " + o.template())
          .contains("GET /jobs", "GET /jobs/{id}", "GET /lanes");

      for (Operation op : reads) {
        String target = op.target(queued);
        ApiResponse asAdmin = f.call(op.method(), target, Map.of(), new byte[0], ADMIN);
        ApiResponse asReader = f.call(op.method(), target, Map.of(), new byte[0], READER);
        assertThat(asReader.status()).as(op.toString()).isEqualTo(asAdmin.status());
        assertThat(asReader.bodyText()).as(op.toString()).isEqualTo(asAdmin.bodyText());
      }
      assertThat(ApiFixture.json(f.get("/jobs", READER)).get("jobs"))
          .as("every user's jobs, as an admin sees them")
          .hasSize(3);
    }
  }

  @Test
  void a_read_only_scope_makes_a_read_only_admin_and_the_admin_scope_beside_it_a_full_admin() {
    assertThat(Caller.of("s", List.of(Caller.READ_ONLY_ADMIN_SCOPE)))
        .isEqualTo(new Caller("s", true, true));
    assertThat(Caller.of("s", List.of("openid " + Caller.READ_ONLY_ADMIN_SCOPE + " email")))
        .isEqualTo(new Caller("s", true, true));
    assertThat(Caller.of("s", List.of(Caller.READ_ONLY_ADMIN_SCOPE, Caller.ADMIN_SCOPE)))
        .isEqualTo(new Caller("s", true, false));
    assertThat(Caller.of("s", List.of("buildqueue/admin.reader", "buildqueue/admin.")))
        .isEqualTo(new Caller("s", false, false));
    assertThat(Caller.of("s", null)).isEqualTo(new Caller("s", false, false));
  }
}
