package buildqueue.api;

import static buildqueue.api.ApiFixture.ADMIN;
import static buildqueue.api.ApiFixture.ALICE;
import static buildqueue.api.ApiFixture.BOB;
import static buildqueue.api.ApiFixture.json;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.artifacts.ArtifactStore;
import buildqueue.artifacts.DirectoryArtifactStore;
import buildqueue.core.JobQueries;
import buildqueue.testing.PostgresExtension;
import buildqueue.testing.QueueHarness;
import buildqueue.testing.TestDatabase;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code GET /jobs/{id}/artifacts} and {@code GET /jobs/{id}/artifacts/{name}}, every answer held
 * to openapi.json ({@link CheckedApi}): a job of the harness's {@code artifacts} kind publishes
 * three files through a real worker loop and a directory store.
 */
@ExtendWith(PostgresExtension.class)
class ArtifactRoutesTest {

  private static CheckedApi api(QueueHarness h, ArtifactStore store) {
    return new CheckedApi(
        new HttpApi(h.queue, new JobQueries(h.db, h.config, h.clock), h.handlers, store));
  }

  private static long published(QueueHarness h, CheckedApi api) {
    ApiResponse r =
        api.handle(
            ApiRequest.json(
                "POST", "/jobs", "{\"kind\": \"artifacts\", \"payload\": {\"files\": 3}}", ALICE));
    assertThat(r.status()).as(r.bodyText()).isEqualTo(201);
    long id = json(r).get("id").asLong();
    h.awaitStatus(id, "succeeded");
    return id;
  }

  @Test
  void the_owner_lists_and_downloads_them_and_another_user_gets_404(
      TestDatabase tdb, @TempDir Path dir) throws IOException {
    DirectoryArtifactStore store = new DirectoryArtifactStore(dir);
    try (QueueHarness h = QueueHarness.open(tdb)) {
      h.platform.useArtifacts(store);
      CheckedApi api = api(h, store);
      long id = published(h, api);

      ApiResponse list = api.handle(ApiRequest.of("GET", "/jobs/" + id + "/artifacts", ALICE));
      assertThat(list.status()).isEqualTo(200);
      JsonNode files = json(list).get("artifacts");
      assertThat(files).hasSize(3);
      JsonNode first = files.get(0);
      assertThat(first.get("name").asText()).isEqualTo("file-1.txt");
      assertThat(first.get("url").asText()).isEqualTo("/jobs/" + id + "/artifacts/file-1.txt");

      ApiResponse file = api.handle(ApiRequest.of("GET", first.get("url").asText(), ALICE));
      assertThat(file.status()).isEqualTo(200);
      assertThat(Files.readString(file.bodyFile())).isEqualTo("job " + id + " file 1");
      assertThat(file.header("Buildqueue-Artifact-Sha256")).hasValue(first.get("sha256").asText());

      assertThat(api.handle(ApiRequest.of("GET", "/jobs/" + id + "/artifacts", BOB)).status())
          .isEqualTo(404);
      assertThat(api.handle(ApiRequest.of("GET", first.get("url").asText(), BOB)).status())
          .isEqualTo(404);
      assertThat(api.handle(ApiRequest.of("GET", "/jobs/" + id + "/artifacts", ADMIN)).status())
          .isEqualTo(200);
      ApiResponse unknown =
          api.handle(ApiRequest.of("GET", "/jobs/" + id + "/artifacts/nope.txt", ALICE));
      assertThat(unknown.status()).isEqualTo(404);
      assertThat(unknown.bodyText()).contains("has no artifact \\\"nope.txt\\\"");
      assertThat(
              api.handle(ApiRequest.of("GET", "/jobs/" + id + "/artifacts/..%2F..%2Fx", ALICE))
                  .status())
          .isEqualTo(404);
    }
  }

  @Test
  void a_job_without_artifacts_lists_none(TestDatabase tdb) {
    try (QueueHarness h = QueueHarness.open(tdb)) {
      CheckedApi api = api(h, buildqueue.artifacts.NoArtifactStore.NONE);
      ApiResponse r = api.handle(ApiRequest.json("POST", "/jobs", "{\"kind\": \"noop\"}", ALICE));
      long id = json(r).get("id").asLong();
      h.awaitStatus(id, "succeeded");

      JsonNode listed = json(api.handle(ApiRequest.of("GET", "/jobs/" + id + "/artifacts", ALICE)));
      assertThat(listed.get("artifacts")).isEmpty();
      assertThat(listed.get("status").asText()).isEqualTo("succeeded");
    }
  }

  /** A store that answers presigned URLs (as S3's does) makes the download a redirect. */
  @Test
  void a_store_that_presigns_answers_302_with_the_url(TestDatabase tdb, @TempDir Path dir) {
    DirectoryArtifactStore local = new DirectoryArtifactStore(dir);
    ArtifactStore presigning =
        new ArtifactStore() {
          @Override
          public StoredArtifact put(AttemptKey attempt, String name, Path file) throws IOException {
            return local.put(attempt, name, file);
          }

          @Override
          public void removeAttempt(AttemptKey attempt) throws IOException {
            local.removeAttempt(attempt);
          }

          @Override
          public Download download(AttemptKey attempt, String name, Duration validFor) {
            return new Download.Redirect(
                URI.create(
                    "https://bucket.example/"
                        + attempt.prefix()
                        + name
                        + "?X-Amz-Expires="
                        + validFor.toSeconds()));
          }
        };
    try (QueueHarness h = QueueHarness.open(tdb)) {
      h.platform.useArtifacts(presigning);
      CheckedApi api = api(h, presigning);
      long id = published(h, api);

      ApiResponse r =
          api.handle(ApiRequest.of("GET", "/jobs/" + id + "/artifacts/file-2.txt", ALICE));

      assertThat(r.status()).isEqualTo(302);
      assertThat(r.header("Location").orElseThrow())
          .startsWith("https://bucket.example/jobs/" + id + "/attempt-1-worker-")
          .endsWith("/file-2.txt?X-Amz-Expires=900");
    }
  }
}
