package buildqueue.worker;

import buildqueue.artifacts.ArtifactStore.Download;
import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;

/**
 * A parent's artifact copied for a follow-up's program: from the local store's file, or from the
 * presigned URL the S3 store gives. Readable by a job user other than the worker's (the attempt's
 * directory above it stays traverse-only).
 */
final class ParentDownloads {
  private static final HttpClient HTTP =
      HttpClient.newBuilder()
          .connectTimeout(Duration.ofSeconds(10))
          .followRedirects(HttpClient.Redirect.NEVER)
          .build();

  private ParentDownloads() {}

  static void fetch(Download download, Path into, Path target) throws IOException {
    Files.createDirectories(target.getParent());
    if (download instanceof Download.LocalFile f) {
      Files.copy(f.file(), target);
    } else {
      Download.Redirect r = (Download.Redirect) download;
      HttpResponse<InputStream> response;
      try {
        response =
            HTTP.send(
                HttpRequest.newBuilder(r.url()).timeout(Duration.ofMinutes(10)).GET().build(),
                HttpResponse.BodyHandlers.ofInputStream());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while fetching " + target.getFileName(), e);
      }
      try (InputStream in = response.body()) {
        if (response.statusCode() != 200) {
          throw new IOException(
              "the store answered HTTP " + response.statusCode() + " for " + target.getFileName());
        }
        Files.copy(in, target);
      }
    }
    Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rw-r--r--"));
    for (Path d = target.getParent(); d != null && d.startsWith(into); d = d.getParent()) {
      Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
  }
}
