package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.platform.SpotReclaims;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /workers/{id}/reclaim}: the local server's route (its effect on real worker processes
 * is functions/local's SpotReclaimEndToEndTest). Here: what it answers for each outcome, held to
 * openapi.json, and that the shared API, the one AWS runs, does not have it.
 */
class WorkerReclaimRouteTest extends ApiTest {
  private final List<Long> asked = new ArrayList<>();
  private CheckedApi local;

  @BeforeEach
  void localApi() {
    local =
        new CheckedApi(
            f.api
                .unchecked()
                .withSpotReclaims(
                    id -> {
                      asked.add(id);
                      if (id == 7) {
                        return new SpotReclaims.Outcome.Reclaimed(
                            7, "host:123:456", Duration.ofMillis(2500));
                      }
                      if (id == 8) {
                        return new SpotReclaims.Outcome.Refused(
                            8, "Worker 8 runs on on-demand: only Spot workers are reclaimed.");
                      }
                      return new SpotReclaims.Outcome.NoSuchWorker(id);
                    }));
  }

  private ApiResponse reclaim(String id, String body, Caller caller) {
    return local.handle(ApiRequest.json("POST", "/workers/" + id + "/reclaim", body, caller));
  }

  @Test
  void an_admin_reclaims_a_spot_worker_and_is_told_the_grace_before_sigkill() {
    ApiResponse r = reclaim("7", "{}", ADMIN);

    assertThat(r.status()).as(r.bodyText()).isEqualTo(202);
    JsonNode body = json(r);
    assertThat(body.get("workerId").asLong()).isEqualTo(7);
    assertThat(body.get("taskId").asText()).isEqualTo("host:123:456");
    assertThat(body.get("graceSeconds").asDouble()).isEqualTo(2.5);
    assertThat(asked).containsExactly(7L);
  }

  @Test
  void a_worker_that_cannot_be_reclaimed_is_a_conflict_that_says_why() {
    ApiResponse r = reclaim("8", "", ADMIN);

    assertThat(r.status()).isEqualTo(409);
    assertThat(json(r).get("detail").asText())
        .contains("runs on on-demand")
        .contains("Nothing was sent");
  }

  @Test
  void an_unknown_worker_or_a_path_that_names_none_is_not_found() {
    assertThat(reclaim("9", "{}", ADMIN).status()).isEqualTo(404);
    ApiResponse bad = reclaim("abc", "{}", ADMIN);
    assertThat(bad.status()).isEqualTo(404);
    assertThat(json(bad).get("detail").asText()).contains("worker ids are whole numbers");
    assertThat(asked).containsExactly(9L);
  }

  @Test
  void only_an_admin_with_write_access_may_reclaim_and_a_refusal_reclaims_nothing() {
    assertThat(reclaim("7", "{}", ALICE).status()).isEqualTo(403);
    assertThat(reclaim("7", "{}", Caller.readOnlyAdmin("auditor")).status()).isEqualTo(403);
    assertThat(reclaim("7", "{}", null).status()).isEqualTo(401);
    assertThat(reclaim("7", "{\"now\": true}", ADMIN).status()).isEqualTo(400);
    assertThat(asked).isEmpty();
  }

  @Test
  void the_shared_api_that_aws_runs_has_no_such_route() {
    ApiResponse r = f.post("/workers/7/reclaim", "{}", ADMIN);

    assertThat(r.status()).isEqualTo(404);
    assertThat(asked).isEmpty();
  }
}
