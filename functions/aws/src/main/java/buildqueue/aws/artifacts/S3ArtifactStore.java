package buildqueue.aws.artifacts;

import buildqueue.artifacts.ArtifactStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.model.ChecksumAlgorithm;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

/**
 * The artifact store on S3 (docs/architecture.md, artifacts): an attempt's files are objects under
 * {@code <prefix>}{@code name} in one bucket, {@link ArtifactStore.AttemptKey#prefix()} being the
 * attempt's place.
 *
 * <ul>
 *   <li>{@link #put} is a conditional write ({@code If-None-Match: *}): S3 itself refuses a second
 *       object under the same key with 412, so a file is never overwritten, not even by a racing
 *       writer (docs/architecture.md §7). The SHA-256 is computed while the file streams to S3, and
 *       the SDK sends its own SHA-256 as the object's checksum, which S3 verifies on arrival and
 *       answers back: a put succeeds only if the two agree, so the digest the job publishes is that
 *       of the bytes S3 holds.
 *   <li>{@link #removeAttempt} lists the attempt's prefix (ListObjectsV2, 1,000 keys a page) and
 *       deletes each page with one DeleteObjects (at most 1,000 keys a request), quietly.
 *   <li>{@link #download} presigns a GET ({@link S3Presigner}, no call to S3): the client fetches
 *       the object from S3 directly for at most seven days, SigV4's bound. A URL presigned with a
 *       role's temporary credentials stops working when they expire, whatever its own expiry.
 * </ul>
 *
 * Limits S3 documents are checked before anything is sent, with a message naming them: 5 GiB in one
 * PUT, 1,024 bytes of key.
 */
public final class S3ArtifactStore implements ArtifactStore {
  /** S3's largest single PUT (API Reference, PutObject). */
  public static final long MAX_PUT_BYTES = 5L * 1024 * 1024 * 1024;

  /** S3's longest key, in bytes of UTF-8. */
  public static final int MAX_KEY_BYTES = 1024;

  /** Keys per ListObjectsV2 page and per DeleteObjects request: S3's most for both. */
  public static final int BATCH = 1000;

  /** A SigV4 presigned URL is valid for at most seven days. */
  public static final Duration MAX_LINK = Duration.ofDays(7);

  private final S3Client s3;
  private final S3Presigner presigner;
  private final String bucket;

  public S3ArtifactStore(S3Client s3, S3Presigner presigner, String bucket) {
    if (bucket == null || bucket.isBlank()) {
      throw new IllegalArgumentException("the artifacts bucket is required");
    }
    this.s3 = s3;
    this.presigner = presigner;
    this.bucket = bucket;
  }

  /** The store on {@code bucket} in {@code region}, with the task's or function's credentials. */
  public static S3ArtifactStore create(String region, String bucket) {
    return create(region, bucket, null, DefaultCredentialsProvider.builder().build());
  }

  /**
   * The store with its clients; {@code endpoint}, when not null, overrides S3's (a test's fake,
   * addressed path-style, as one host for every bucket).
   */
  public static S3ArtifactStore create(
      String region, String bucket, URI endpoint, AwsCredentialsProvider credentials) {
    S3Configuration.Builder config =
        S3Configuration.builder()
            // The URL-connection client cannot read an error answered to "Expect: 100-continue"
            // (the SDK sends it for bodies from 1 MiB): a refused conditional write would surface
            // as an I/O error instead of S3's 412. Without it a refused body is sent in full.
            .expectContinueEnabled(false)
            .pathStyleAccessEnabled(endpoint != null);
    S3ClientBuilder client =
        S3Client.builder()
            .region(Region.of(region))
            .credentialsProvider(credentials)
            .serviceConfiguration(config.build())
            .httpClient(
                UrlConnectionHttpClient.builder()
                    .connectionTimeout(Duration.ofSeconds(5))
                    .socketTimeout(Duration.ofSeconds(30))
                    .build());
    S3Presigner.Builder presign =
        S3Presigner.builder()
            .region(Region.of(region))
            .credentialsProvider(credentials)
            .serviceConfiguration(config.build());
    if (endpoint != null) {
      client.endpointOverride(endpoint);
      presign.endpointOverride(endpoint);
    }
    return new S3ArtifactStore(client.build(), presign.build(), bucket);
  }

  public String bucket() {
    return bucket;
  }

  @Override
  public StoredArtifact put(AttemptKey attempt, String name, Path file) throws IOException {
    String key = key(attempt, name);
    long bytes = Files.size(file);
    if (bytes > MAX_PUT_BYTES) {
      throw new IOException(
          describe(attempt, name)
              + " is "
              + bytes
              + " bytes; S3 takes at most "
              + MAX_PUT_BYTES
              + " (5 GiB) in one PUT");
    }
    AtomicReference<MessageDigest> digest = new AtomicReference<>();
    // The SDK may open the file again (a retry): each stream hashes afresh, the last one sent wins.
    RequestBody body =
        RequestBody.fromContentProvider(
            () -> {
              MessageDigest sha256 = sha256();
              digest.set(sha256);
              return new DigestInputStream(open(file), sha256);
            },
            bytes,
            "application/octet-stream");
    PutObjectResponse response;
    try {
      response =
          s3.putObject(
              r ->
                  r.bucket(bucket)
                      .key(key)
                      .ifNoneMatch("*")
                      .checksumAlgorithm(ChecksumAlgorithm.SHA256),
              body);
    } catch (S3Exception e) {
      if (e.statusCode() == 412) {
        FileAlreadyExistsException exists =
            new FileAlreadyExistsException(
                "s3://" + bucket + "/" + key,
                null,
                describe(attempt, name) + " is already stored: an artifact is put once");
        exists.initCause(e);
        throw exists;
      }
      throw failed("PutObject", attempt, name, e);
    } catch (SdkException | UncheckedIOException e) {
      throw failed("PutObject", attempt, name, e);
    }
    byte[] sha256 = digest.get().digest();
    String stored = response.checksumSHA256();
    if (stored != null && !stored.equals(Base64.getEncoder().encodeToString(sha256))) {
      throw new IOException(
          describe(attempt, name)
              + ": S3 holds other bytes (SHA-256 "
              + stored
              + ") than were read from "
              + file
              + "; was the file changed while it was uploaded?");
    }
    return new StoredArtifact(name, bytes, HexFormat.of().formatHex(sha256));
  }

  @Override
  public void removeAttempt(AttemptKey attempt) throws IOException {
    String prefix = attempt.prefix();
    String token = null;
    try {
      do {
        String page = token;
        ListObjectsV2Response listed =
            s3.listObjectsV2(
                r -> r.bucket(bucket).prefix(prefix).maxKeys(BATCH).continuationToken(page));
        List<ObjectIdentifier> keys =
            listed.contents().stream()
                .map(S3Object::key)
                .map(k -> ObjectIdentifier.builder().key(k).build())
                .toList();
        if (!keys.isEmpty()) {
          DeleteObjectsResponse deleted =
              s3.deleteObjects(r -> r.bucket(bucket).delete(d -> d.quiet(true).objects(keys)));
          if (deleted.hasErrors() && !deleted.errors().isEmpty()) {
            var first = deleted.errors().get(0);
            throw new IOException(
                "removing the files of job "
                    + attempt.jobId()
                    + " attempt "
                    + attempt.attempt()
                    + ": S3 did not delete "
                    + deleted.errors().size()
                    + " of "
                    + keys.size()
                    + " objects, the first "
                    + first.key()
                    + " ("
                    + first.code()
                    + ": "
                    + first.message()
                    + "); removing again retries them");
          }
        }
        token = Boolean.TRUE.equals(listed.isTruncated()) ? listed.nextContinuationToken() : null;
      } while (token != null);
    } catch (SdkException e) {
      throw failed("removing", attempt, prefix, e);
    }
  }

  @Override
  public Download download(AttemptKey attempt, String name, Duration validFor) throws IOException {
    if (validFor.isNegative() || validFor.isZero() || validFor.compareTo(MAX_LINK) > 0) {
      throw new IllegalArgumentException(
          "a download link is valid for more than 0 s and at most 7 days (SigV4), was " + validFor);
    }
    String key = key(attempt, name);
    try {
      return new Download.Redirect(
          presigner
              .presignGetObject(
                  p ->
                      p.signatureDuration(validFor)
                          .getObjectRequest(g -> g.bucket(bucket).key(key)))
              .url()
              .toURI());
    } catch (SdkException | URISyntaxException e) {
      throw failed("presigning", attempt, name, e);
    }
  }

  private static String key(AttemptKey attempt, String name) throws IOException {
    if (name == null || name.isEmpty()) {
      throw new IOException("job " + attempt.jobId() + ": an artifact needs a name");
    }
    String key = attempt.prefix() + name;
    int length = key.getBytes(StandardCharsets.UTF_8).length;
    if (length > MAX_KEY_BYTES) {
      throw new IOException(
          describe(attempt, name)
              + ": its S3 key would be "
              + length
              + " bytes of UTF-8; S3 takes at most "
              + MAX_KEY_BYTES);
    }
    return key;
  }

  private static String describe(AttemptKey attempt, String name) {
    return "artifact \""
        + name
        + "\" of job "
        + attempt.jobId()
        + " (attempt "
        + attempt.attempt()
        + ", worker "
        + attempt.workerId()
        + ")";
  }

  private IOException failed(String what, AttemptKey attempt, String name, Exception e) {
    String code =
        e instanceof S3Exception s3e && s3e.awsErrorDetails() != null
            ? s3e.awsErrorDetails().errorCode() + ": "
            : "";
    return new IOException(
        what
            + " "
            + describe(attempt, name)
            + " in bucket "
            + bucket
            + " failed: "
            + code
            + e.getMessage(),
        e);
  }

  private static InputStream open(Path file) {
    try {
      return Files.newInputStream(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
