package buildqueue.aws.artifacts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import buildqueue.artifacts.ArtifactStore.AttemptKey;
import buildqueue.artifacts.ArtifactStore.Download;
import buildqueue.artifacts.ArtifactStore.StoredArtifact;
import buildqueue.aws.fake.S3Fake;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The artifact store's contract on S3, through the production clients (the same configuration as
 * {@link S3ArtifactStore#create(String, String)}, pointed at {@link S3Fake}): put once, remove an
 * attempt in batches of 1,000, a presigned download a plain HTTP client fetches until it expires.
 */
class S3ArtifactStoreTest {
  private static final String BUCKET = "buildqueue-artifacts";
  private static final AttemptKey ATTEMPT = new AttemptKey(12, 1, 3);

  @TempDir Path dir;
  private S3Fake fake;
  private S3ArtifactStore store;
  private final HttpClient http = HttpClient.newHttpClient();

  @BeforeEach
  void start() {
    fake = S3Fake.start().createBucket(BUCKET);
    store = S3ArtifactStore.create(S3Fake.REGION, BUCKET, fake.endpoint(), S3Fake.credentials());
  }

  @AfterEach
  void stop() {
    fake.close();
  }

  private Path file(String name, int bytes, long seed) throws IOException {
    byte[] content = new byte[bytes];
    new Random(seed).nextBytes(content);
    Path f = dir.resolve(name);
    Files.createDirectories(f.getParent());
    return Files.write(f, content);
  }

  private static String sha256(Path f) throws Exception {
    return HexFormat.of()
        .formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(f)));
  }

  @Test
  void a_put_stores_the_file_under_the_attempts_prefix_with_its_size_and_sha256() throws Exception {
    Path f = file("reports/out.bin", 2 * 1024 * 1024 + 17, 1);

    StoredArtifact stored = store.put(ATTEMPT, "reports/out.bin", f);

    assertThat(stored).isEqualTo(new StoredArtifact("reports/out.bin", Files.size(f), sha256(f)));
    S3Fake.StoredObject object = fake.object(BUCKET, "jobs/12/attempt-1-worker-3/reports/out.bin");
    assertThat(object.bytes()).isEqualTo(Files.readAllBytes(f));
    assertThat(object.sha256Hex()).isEqualTo(stored.sha256());
  }

  @Test
  void a_second_put_of_the_same_name_is_refused_and_the_first_file_stays() throws Exception {
    Path first = file("a.txt", 100, 1);
    Path second = file("b.txt", 100, 2);
    store.put(ATTEMPT, "out.txt", first);

    assertThatThrownBy(() -> store.put(ATTEMPT, "out.txt", second))
        .isInstanceOf(FileAlreadyExistsException.class)
        .hasMessageContaining("job 12")
        .hasMessageContaining("already stored");
    assertThat(fake.object(BUCKET, "jobs/12/attempt-1-worker-3/out.txt").bytes())
        .isEqualTo(Files.readAllBytes(first));
  }

  @Test
  void of_many_workers_putting_one_name_at_once_exactly_one_stores_it_every_time()
      throws Exception {
    int threads = 8;
    List<Path> files = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      files.add(file("w" + t, 10_000, t));
    }
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 0; round < 10; round++) {
        String name = "race-" + round;
        CountDownLatch go = new CountDownLatch(1);
        List<Future<StoredArtifact>> puts = new ArrayList<>();
        for (Path f : files) {
          puts.add(
              pool.submit(
                  () -> {
                    go.await();
                    try {
                      return store.put(ATTEMPT, name, f);
                    } catch (FileAlreadyExistsException refused) {
                      return null;
                    }
                  }));
        }
        go.countDown();
        List<StoredArtifact> won = new ArrayList<>();
        for (Future<StoredArtifact> p : puts) {
          if (p.get() != null) {
            won.add(p.get());
          }
        }
        assertThat(won).as("round %d", round).hasSize(1);
        assertThat(fake.object(BUCKET, ATTEMPT.prefix() + name).sha256Hex())
            .isEqualTo(won.get(0).sha256());
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void a_put_s3_slows_down_twice_is_retried_and_publishes_the_digest_of_the_bytes_stored()
      throws Exception {
    Path f = file("retried.bin", 200_000, 5);
    fake.slowDownNext(2);

    StoredArtifact stored = store.put(ATTEMPT, "retried.bin", f);

    assertThat(fake.requests()).hasSize(3).allMatch(r -> r.method().equals("PUT"));
    assertThat(stored.sha256()).isEqualTo(sha256(f));
    assertThat(fake.object(BUCKET, ATTEMPT.prefix() + "retried.bin").sha256Hex())
        .isEqualTo(stored.sha256());
  }

  @Test
  void a_put_s3_keeps_slowing_down_fails_naming_the_artifact_and_the_job() throws Exception {
    Path f = file("never.bin", 1_000, 6);
    fake.slowDownNext(100);

    assertThatThrownBy(() -> store.put(ATTEMPT, "never.bin", f))
        .isInstanceOf(IOException.class)
        .isNotInstanceOf(FileAlreadyExistsException.class)
        .hasMessageContaining("\"never.bin\" of job 12")
        .hasMessageContaining("SlowDown");
    assertThat(fake.keys(BUCKET)).isEmpty();
  }

  @Test
  void a_file_larger_than_one_put_takes_is_refused_before_anything_is_sent() throws Exception {
    Path big = dir.resolve("big");
    try (RandomAccessFile sparse = new RandomAccessFile(big.toFile(), "rw")) {
      sparse.setLength(S3ArtifactStore.MAX_PUT_BYTES + 1);
    }

    assertThatThrownBy(() -> store.put(ATTEMPT, "big", big))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("5 GiB");
    assertThat(fake.requests()).isEmpty();
  }

  @Test
  void a_name_whose_key_exceeds_1024_bytes_is_refused_before_anything_is_sent() throws Exception {
    Path f = file("x", 1, 1);
    String name = "n".repeat(S3ArtifactStore.MAX_KEY_BYTES - ATTEMPT.prefix().length() + 1);

    assertThatThrownBy(() -> store.put(ATTEMPT, name, f))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("1024");
    assertThat(fake.requests()).isEmpty();
    store.put(ATTEMPT, name.substring(1), f);
    assertThat(fake.keys(BUCKET)).hasSize(1);
  }

  @Test
  void removing_an_attempt_deletes_its_1500_files_in_batches_of_1000_and_nothing_else()
      throws Exception {
    for (int i = 0; i < 1_500; i++) {
      fake.seed(BUCKET, ATTEMPT.prefix() + "f" + i, new byte[] {1});
    }
    // Neighbours whose keys start alike: another worker (3 and 30), the next attempt, another job.
    List<String> others =
        List.of(
            new AttemptKey(12, 1, 30).prefix() + "f",
            new AttemptKey(12, 2, 3).prefix() + "f",
            new AttemptKey(120, 1, 3).prefix() + "f");
    others.forEach(k -> fake.seed(BUCKET, k, new byte[] {1}));

    store.removeAttempt(ATTEMPT);

    assertThat(fake.keys(BUCKET)).containsExactlyInAnyOrderElementsOf(others);
    assertThat(fake.requests())
        .extracting(r -> r.method() + (r.query().contains("list-type") ? " list" : " delete"))
        .containsExactly("GET list", "POST delete", "GET list", "POST delete");

    store.removeAttempt(ATTEMPT); // idempotent: one listing, nothing to delete
    assertThat(fake.requests()).hasSize(5);
    assertThat(fake.keys(BUCKET)).hasSize(3);
  }

  @Test
  void a_download_is_a_presigned_url_a_plain_client_fetches_byte_identical_until_it_expires()
      throws Exception {
    Path f = file("site/index.html", 50_000, 9);
    store.put(ATTEMPT, "site/index.html", f);

    Download download = store.download(ATTEMPT, "site/index.html", Duration.ofMinutes(15));

    assertThat(download).isInstanceOf(Download.Redirect.class);
    URI url = ((Download.Redirect) download).url();
    assertThat(url.getRawQuery()).contains("X-Amz-Expires=900");
    HttpResponse<byte[]> fetched =
        http.send(HttpRequest.newBuilder(url).build(), HttpResponse.BodyHandlers.ofByteArray());
    assertThat(fetched.statusCode()).isEqualTo(200);
    assertThat(fetched.body()).isEqualTo(Files.readAllBytes(f));

    fake.advanceClock(Duration.ofMinutes(15).plusSeconds(1));
    HttpResponse<String> expired =
        http.send(HttpRequest.newBuilder(url).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(expired.statusCode()).isEqualTo(403);
    assertThat(expired.body()).contains("Request has expired");
  }

  @Test
  void a_download_link_for_longer_than_seven_days_or_for_no_time_is_refused() {
    assertThatThrownBy(() -> store.download(ATTEMPT, "a", Duration.ofDays(7).plusSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("7 days");
    assertThatThrownBy(() -> store.download(ATTEMPT, "a", Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
