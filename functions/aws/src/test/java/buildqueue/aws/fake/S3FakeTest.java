package buildqueue.aws.fake;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.ChecksumAlgorithm;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.NoSuchBucketException;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

/**
 * The fake answers the real SDK v2 client as S3 does, one test per limit and error it enforces: a
 * conditional write refused with 412, the 5 GiB single PUT, the 1,024-byte key, a checksum that
 * does not match, 1,000 keys a page and a batch, continuation tokens, an unknown key or bucket, and
 * presigned GETs (fetched by a plain HTTP client) that expire and may not ask for more than seven
 * days.
 */
class S3FakeTest {
  private static final String BUCKET = "artifacts";

  private S3Fake fake;
  private S3Client s3;
  private final HttpClient http = HttpClient.newHttpClient();

  @BeforeEach
  void start() {
    fake = S3Fake.start().createBucket(BUCKET);
    s3 = fake.client();
  }

  @AfterEach
  void stop() {
    s3.close();
    fake.close();
  }

  private void put(String key, String body) {
    s3.putObject(
        r -> r.bucket(BUCKET).key(key).ifNoneMatch("*").checksumAlgorithm(ChecksumAlgorithm.SHA256),
        RequestBody.fromString(body));
  }

  @Test
  void a_put_object_is_read_back_byte_identical_and_keeps_the_sha256_the_sdk_sent()
      throws Exception {
    byte[] bytes = new byte[300_000];
    new java.util.Random(7).nextBytes(bytes);
    var response =
        s3.putObject(
            r ->
                r.bucket(BUCKET)
                    .key("jobs/1/a b+c/ü.bin")
                    .ifNoneMatch("*")
                    .checksumAlgorithm(ChecksumAlgorithm.SHA256),
            RequestBody.fromBytes(bytes));

    String sha256 =
        Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-256").digest(bytes));
    assertThat(response.checksumSHA256()).isEqualTo(sha256);
    assertThat(s3.getObjectAsBytes(r -> r.bucket(BUCKET).key("jobs/1/a b+c/ü.bin")).asByteArray())
        .isEqualTo(bytes);
    assertThat(fake.keys(BUCKET)).containsExactly("jobs/1/a b+c/ü.bin");
  }

  @Test
  void a_conditional_put_of_a_key_that_exists_is_412_precondition_failed_and_changes_nothing() {
    put("jobs/1/out.txt", "first");

    assertThatThrownBy(() -> put("jobs/1/out.txt", "second"))
        .isInstanceOfSatisfying(
            S3Exception.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(412);
              assertThat(e.awsErrorDetails().errorCode()).isEqualTo("PreconditionFailed");
              assertThat(e.requestId()).isNotBlank();
            });
    assertThat(new String(fake.object(BUCKET, "jobs/1/out.txt").bytes(), StandardCharsets.UTF_8))
        .isEqualTo("first");
  }

  @Test
  void of_many_racing_conditional_puts_of_one_key_exactly_one_wins_every_time() throws Exception {
    int threads = 8;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      for (int round = 0; round < 20; round++) {
        String key = "jobs/race/" + round;
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Boolean>> tries = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          String body = "writer " + t;
          tries.add(
              pool.submit(
                  () -> {
                    go.await();
                    try {
                      put(key, body);
                      return true;
                    } catch (S3Exception e) {
                      assertThat(e.statusCode()).isEqualTo(412);
                      return false;
                    }
                  }));
        }
        go.countDown();
        int won = 0;
        for (Future<Boolean> f : tries) {
          won += f.get() ? 1 : 0;
        }
        assertThat(won).as("round %d", round).isEqualTo(1);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void a_key_of_more_than_1024_utf8_bytes_is_key_too_long_and_1024_is_accepted() {
    String fits = "é".repeat(512); // 2 bytes each
    put(fits, "x");

    assertThatThrownBy(() -> put(fits + "a", "x"))
        .isInstanceOfSatisfying(
            S3Exception.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(400);
              assertThat(e.awsErrorDetails().errorCode()).isEqualTo("KeyTooLongError");
            });
    assertThat(fake.keys(BUCKET)).containsExactly(fits);
  }

  @Test
  void a_single_put_of_more_than_5_gib_is_entity_too_large() {
    // The fake decides on the declared length; the body the SDK then streams is never stored.
    long tooBig = S3Fake.MAX_PUT_BYTES + 1;
    RequestBody body =
        RequestBody.fromContentProvider(
            () ->
                new java.io.InputStream() {
                  long left = tooBig;

                  @Override
                  public int read() {
                    return left-- > 0 ? 0 : -1;
                  }

                  @Override
                  public int read(byte[] b, int off, int len) {
                    if (left <= 0) {
                      return -1;
                    }
                    int n = (int) Math.min(len, left);
                    java.util.Arrays.fill(b, off, off + n, (byte) 0);
                    left -= n;
                    return n;
                  }
                },
            tooBig,
            "application/octet-stream");
    try (S3Client plain = fake.clientWithoutChecksums()) {
      assertThatThrownBy(() -> plain.putObject(r -> r.bucket(BUCKET).key("big"), body))
          .isInstanceOfSatisfying(
              S3Exception.class,
              e -> {
                assertThat(e.statusCode()).isEqualTo(400);
                assertThat(e.awsErrorDetails().errorCode()).isEqualTo("EntityTooLarge");
              });
    }
    assertThat(fake.keys(BUCKET)).isEmpty();
  }

  @Test
  void a_checksum_that_does_not_match_the_bytes_is_bad_digest() {
    String wrong = Base64.getEncoder().encodeToString(new byte[32]);

    assertThatThrownBy(
            () ->
                s3.putObject(
                    r -> r.bucket(BUCKET).key("k").checksumSHA256(wrong),
                    RequestBody.fromString("content")))
        .isInstanceOfSatisfying(
            S3Exception.class,
            e -> assertThat(e.awsErrorDetails().errorCode()).isEqualTo("BadDigest"));
    assertThat(fake.keys(BUCKET)).isEmpty();
  }

  @Test
  void a_missing_key_is_no_such_key_and_an_unknown_bucket_is_no_such_bucket() {
    assertThatThrownBy(() -> s3.getObjectAsBytes(r -> r.bucket(BUCKET).key("nope")))
        .isInstanceOf(NoSuchKeyException.class)
        .hasMessageContaining("The specified key does not exist");
    assertThatThrownBy(() -> s3.listObjectsV2(r -> r.bucket("other")))
        .isInstanceOf(NoSuchBucketException.class);
    assertThatThrownBy(
            () -> s3.putObject(r -> r.bucket("other").key("k"), RequestBody.fromString("x")))
        .isInstanceOf(NoSuchBucketException.class);
  }

  @Test
  void a_listing_gives_at_most_1000_keys_a_page_and_its_continuation_tokens_walk_the_prefix() {
    for (int i = 0; i < 2_500; i++) {
      fake.seed(BUCKET, String.format("jobs/7/f %04d+ü", i), new byte[] {(byte) i});
    }
    fake.seed(BUCKET, "jobs/70/other", new byte[1]);
    fake.seed(BUCKET, "jobs/6/before", new byte[1]);

    List<String> keys = new ArrayList<>();
    List<Integer> pages = new ArrayList<>();
    String token = null;
    do {
      String t = token;
      ListObjectsV2Response page =
          s3.listObjectsV2(
              r -> r.bucket(BUCKET).prefix("jobs/7/").maxKeys(5_000).continuationToken(t));
      pages.add(page.keyCount());
      page.contents().forEach(o -> keys.add(o.key()));
      token = page.isTruncated() ? page.nextContinuationToken() : null;
    } while (token != null);

    assertThat(pages).containsExactly(1000, 1000, 500);
    assertThat(keys).hasSize(2_500).doesNotHaveDuplicates().allMatch(k -> k.startsWith("jobs/7/"));
    assertThat(keys.get(0)).isEqualTo("jobs/7/f 0000+ü");
  }

  @Test
  void a_continuation_token_the_fake_never_gave_is_invalid_argument() {
    assertThatThrownBy(() -> s3.listObjectsV2(r -> r.bucket(BUCKET).continuationToken("bm9wZQ")))
        .isInstanceOfSatisfying(
            S3Exception.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(400);
              assertThat(e.awsErrorDetails().errorCode()).isEqualTo("InvalidArgument");
            });
  }

  @Test
  void delete_objects_takes_at_most_1000_keys_and_more_is_malformed_xml() {
    for (int i = 0; i < 1_001; i++) {
      fake.seed(BUCKET, "k" + i, new byte[1]);
    }
    List<ObjectIdentifier> all =
        IntStream.range(0, 1_001)
            .mapToObj(i -> ObjectIdentifier.builder().key("k" + i).build())
            .toList();

    assertThatThrownBy(() -> s3.deleteObjects(r -> r.bucket(BUCKET).delete(d -> d.objects(all))))
        .isInstanceOfSatisfying(
            S3Exception.class,
            e -> {
              assertThat(e.statusCode()).isEqualTo(400);
              assertThat(e.awsErrorDetails().errorCode()).isEqualTo("MalformedXML");
            });
    assertThat(fake.keys(BUCKET)).hasSize(1_001);

    DeleteObjectsResponse deleted =
        s3.deleteObjects(r -> r.bucket(BUCKET).delete(d -> d.objects(all.subList(0, 1_000))));
    assertThat(deleted.deleted()).hasSize(1_000);
    assertThat(fake.keys(BUCKET)).containsExactly("k1000");
  }

  @Test
  void quiet_delete_objects_answers_no_deleted_keys_and_a_missing_key_counts_as_deleted() {
    fake.seed(BUCKET, "a", new byte[1]);

    DeleteObjectsResponse quiet =
        s3.deleteObjects(
            r ->
                r.bucket(BUCKET)
                    .delete(
                        d ->
                            d.quiet(true)
                                .objects(
                                    ObjectIdentifier.builder().key("a").build(),
                                    ObjectIdentifier.builder().key("never").build())));
    assertThat(quiet.deleted()).isEmpty();
    assertThat(quiet.errors()).isEmpty();
    assertThat(fake.keys(BUCKET)).isEmpty();

    DeleteObjectsResponse verbose =
        s3.deleteObjects(
            r ->
                r.bucket(BUCKET)
                    .delete(d -> d.objects(ObjectIdentifier.builder().key("never").build())));
    assertThat(verbose.deleted()).extracting(o -> o.key()).containsExactly("never");
  }

  @Test
  void delete_objects_without_content_md5_or_a_checksum_is_invalid_request() throws Exception {
    // The SDK always sends one (the operation requires it), so this request is written by hand.
    String xml = "<Delete><Object><Key>a</Key></Object></Delete>";
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(fake.endpoint() + "/" + BUCKET + "?delete"))
                .header("Authorization", "AWS4-HMAC-SHA256 Credential=" + S3Fake.ACCESS_KEY + "/x")
                .POST(HttpRequest.BodyPublishers.ofString(xml))
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("<Code>InvalidRequest</Code>", "Content-MD5");
  }

  @Test
  void a_request_without_sigv4_credentials_is_access_denied() throws Exception {
    put("k", "x");
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(fake.endpoint() + "/" + BUCKET + "/k")).build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(r.statusCode()).isEqualTo(403);
    assertThat(r.body()).contains("<Code>AccessDenied</Code>");
  }

  @Test
  void a_presigned_get_is_fetched_by_a_plain_client_until_it_expires() throws Exception {
    put("jobs/1/report.txt", "the report");
    try (S3Presigner presigner = fake.presigner()) {
      URI url =
          presigner
              .presignGetObject(
                  p ->
                      p.signatureDuration(Duration.ofMinutes(10))
                          .getObjectRequest(g -> g.bucket(BUCKET).key("jobs/1/report.txt")))
              .url()
              .toURI();

      HttpResponse<String> fresh =
          http.send(HttpRequest.newBuilder(url).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(fresh.statusCode()).isEqualTo(200);
      assertThat(fresh.body()).isEqualTo("the report");

      fake.advanceClock(Duration.ofMinutes(10).plusSeconds(1));
      HttpResponse<String> expired =
          http.send(HttpRequest.newBuilder(url).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(expired.statusCode()).isEqualTo(403);
      assertThat(expired.body()).contains("<Code>AccessDenied</Code>", "Request has expired");
    }
  }

  @Test
  void a_presigned_url_altered_after_signing_is_signature_does_not_match() throws Exception {
    put("jobs/1/a.txt", "a");
    put("jobs/1/b.txt", "b");
    try (S3Presigner presigner = fake.presigner()) {
      String url =
          presigner
              .presignGetObject(
                  p ->
                      p.signatureDuration(Duration.ofMinutes(1))
                          .getObjectRequest(g -> g.bucket(BUCKET).key("jobs/1/a.txt")))
              .url()
              .toString();

      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(URI.create(url.replace("a.txt", "b.txt"))).build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(403);
      assertThat(r.body()).contains("<Code>SignatureDoesNotMatch</Code>");
    }
  }

  @Test
  void a_presigned_url_valid_for_more_than_seven_days_is_refused() throws Exception {
    put("jobs/1/a.txt", "a");
    try (S3Presigner presigner = fake.presigner()) {
      // The SDK refuses to sign one itself; S3 refuses one whatever signed it.
      assertThatThrownBy(
              () ->
                  presigner.presignGetObject(
                      p ->
                          p.signatureDuration(Duration.ofDays(7).plusSeconds(1))
                              .getObjectRequest(g -> g.bucket(BUCKET).key("jobs/1/a.txt"))))
          .isInstanceOf(IllegalArgumentException.class);
      String url =
          presigner
              .presignGetObject(
                  p ->
                      p.signatureDuration(Duration.ofDays(7))
                          .getObjectRequest(g -> g.bucket(BUCKET).key("jobs/1/a.txt")))
              .url()
              .toString();
      assertThat(
              http.send(
                      HttpRequest.newBuilder(URI.create(url)).build(),
                      HttpResponse.BodyHandlers.ofString())
                  .statusCode())
          .isEqualTo(200);

      HttpResponse<String> r =
          http.send(
              HttpRequest.newBuilder(
                      URI.create(url.replace("X-Amz-Expires=604800", "X-Amz-Expires=604801")))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(400);
      assertThat(r.body())
          .contains(
              "<Code>AuthorizationQueryParametersError</Code>",
              "X-Amz-Expires must be less than a week");
    }
  }
}
