package buildqueue.api;

import buildqueue.artifacts.ArtifactStore;
import buildqueue.artifacts.ArtifactStore.AttemptKey;
import buildqueue.artifacts.ArtifactStore.Download;
import buildqueue.core.JobQueries;
import buildqueue.core.JobQueries.JobArtifacts;
import buildqueue.core.JobQueries.PublishedArtifact;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code GET /jobs/{id}/artifacts} and {@code GET /jobs/{id}/artifacts/{name}}: what a job
 * published (docs/architecture.md, Artifacts), for its owner and admins ("not found" for anyone
 * else, as for the job). A download is the file itself locally, or a redirect to a presigned URL
 * (S3) that is valid for {@link #LINK_VALIDITY}.
 */
record ArtifactRoutes(JobQueries queries, ArtifactStore store) implements Route.Resource {
  /** How long a download link stays valid. */
  static final Duration LINK_VALIDITY = Duration.ofMinutes(15);

  @Override
  public List<Route> routes() {
    return List.of(
        new Route("GET", "/jobs/{id}/artifacts", Route.Access.USER, Set.of(), this::list),
        new Route(
            "GET", "/jobs/{id}/artifacts/{name}", Route.Access.USER, Set.of(), this::download));
  }

  private JobArtifacts visible(Call call) {
    long id = call.jobId();
    return queries
        .artifacts(id)
        .filter(a -> call.maySee(a.userId()))
        .orElseThrow(() -> JobAnswers.notFound(id));
  }

  private ApiResponse list(Call call) {
    JobArtifacts job = visible(call);
    ObjectNode body = ApiJson.object();
    body.put("jobId", job.jobId());
    body.put("status", job.status().sql());
    ArrayNode list = body.putArray("artifacts");
    for (PublishedArtifact a : job.artifacts()) {
      list.addObject()
          .put("name", a.name())
          .put("bytes", a.bytes())
          .put("sha256", a.sha256())
          .put("url", link(job.jobId(), a.name()));
    }
    return ApiJson.response(200, body);
  }

  /** The download's path: the name is one segment, its '/' percent-encoded. */
  static String link(long jobId, String name) {
    return "/jobs/"
        + jobId
        + "/artifacts/"
        + URLEncoder.encode(name, StandardCharsets.UTF_8).replace("+", "%20");
  }

  private ApiResponse download(Call call) {
    JobArtifacts job = visible(call);
    String name = call.params().get("name");
    PublishedArtifact artifact =
        job.artifacts().stream()
            .filter(a -> a.name().equals(name))
            .findFirst()
            .orElseThrow(
                () ->
                    ApiProblem.notFound(
                        "Job "
                            + job.jobId()
                            + " has no artifact \""
                            + JsonBodies.printable(name)
                            + "\". List them with GET /jobs/"
                            + job.jobId()
                            + "/artifacts."));
    AttemptKey attempt = new AttemptKey(job.jobId(), artifact.attempt(), artifact.workerId());
    Download download;
    try {
      download = store.download(attempt, artifact.name(), LINK_VALIDITY);
    } catch (NoSuchFileException e) {
      throw ApiProblem.notFound(
          "Job "
              + job.jobId()
              + "'s artifact \""
              + JsonBodies.printable(name)
              + "\" is no longer stored (removed with the job's retention).");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("Cache-Control", "no-store");
    headers.put("X-Content-Type-Options", "nosniff");
    headers.put("Buildqueue-Artifact-Sha256", artifact.sha256());
    if (download instanceof Download.Redirect r) {
      headers.put("Location", r.url().toString());
      return new ApiResponse(302, headers, new byte[0]);
    }
    Download.LocalFile file = (Download.LocalFile) download;
    headers.put("Content-Type", "application/octet-stream");
    headers.put(
        "Content-Disposition",
        "attachment; filename*=UTF-8''"
            + URLEncoder.encode(baseName(artifact.name()), StandardCharsets.UTF_8)
                .replace("+", "%20"));
    return ApiResponse.ofFile(200, headers, file.file());
  }

  private static String baseName(String name) {
    return name.substring(name.lastIndexOf('/') + 1);
  }
}
