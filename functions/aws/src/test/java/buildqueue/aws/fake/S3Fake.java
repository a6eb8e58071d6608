package buildqueue.aws.fake;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.NavigableMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

/**
 * Amazon S3 at the wire, as far as the artifact store reaches it: the REST/XML protocol the SDK v2
 * {@code S3Client} speaks with path-style addressing against an endpoint override ({@code
 * /<bucket>/<key>}), and presigned GETs a plain HTTP client fetches.
 *
 * <ul>
 *   <li>{@code PutObject} ({@code PUT /b/k}): {@code If-None-Match: *} is a conditional write, 412
 *       {@code PreconditionFailed} when the key exists (S3 User Guide, "How to prevent object
 *       overwrites with conditional writes"), decided atomically, so of two racing writers one
 *       wins; one PUT holds at most 5 GiB, more is {@code EntityTooLarge}; a key is at most 1,024
 *       bytes of UTF-8, more is {@code KeyTooLongError} (S3 API Reference, "Error responses"); the
 *       body may be {@code aws-chunked} (signed or unsigned chunks, checksum in a trailer, as the
 *       SDK sends it) and its {@code Content-MD5} and {@code x-amz-checksum-*} (CRC32, CRC32C,
 *       SHA-1, SHA-256) must match the bytes, else {@code BadDigest}; no {@code Content-Length} is
 *       411 {@code MissingContentLength}.
 *   <li>{@code GetObject} ({@code GET /b/k}): the bytes, with the checksums stored for the object
 *       when the SDK asks ({@code x-amz-checksum-mode: ENABLED}); an unknown key is 404 {@code
 *       NoSuchKey}.
 *   <li>{@code ListObjectsV2} ({@code GET /b?list-type=2}): keys in UTF-8 binary order, by {@code
 *       prefix}, at most {@code max-keys} and never more than 1,000 a page, {@code
 *       continuation-token} and {@code start-after}, keys URL-encoded when the SDK asks ({@code
 *       encoding-type=url}, which it always does); a token the fake never gave is 400 {@code
 *       InvalidArgument}.
 *   <li>{@code DeleteObjects} ({@code POST /b?delete}): at most 1,000 keys, none or more is 400
 *       {@code MalformedXML} (API Reference, DeleteObjects: "up to 1,000 keys"); the request must
 *       carry {@code Content-MD5} or an {@code x-amz-checksum-*} header that matches the body, else
 *       400 {@code InvalidRequest}; quiet mode answers only errors; a key that does not exist is
 *       answered as deleted.
 *   <li>Presigned GETs ({@code X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=...}): the SigV4
 *       query signature is checked against the fake's credentials ({@code SignatureDoesNotMatch}
 *       403); {@code X-Amz-Expires} above 604,800 s (seven days) is 400 {@code
 *       AuthorizationQueryParametersError}; past {@code X-Amz-Date + X-Amz-Expires} on the fake's
 *       clock ({@link #advanceClock}) it is 403 {@code AccessDenied} "Request has expired" (API
 *       Reference, "Authenticating Requests: Using Query Parameters").
 * </ul>
 *
 * A bucket the fake does not hold is 404 {@code NoSuchBucket}; a request without SigV4 credentials
 * is 403 {@code AccessDenied}; any other operation is 501 {@code NotImplemented}, so a new call in
 * the code fails here first. Errors are S3's XML ({@code Error} with {@code Code}, {@code Message},
 * {@code RequestId}), {@code application/xml}, which the SDK maps to its exception types ({@code
 * NoSuchKeyException}, {@code NoSuchBucketException}, else {@code S3Exception} with the code).
 */
public final class S3Fake implements AutoCloseable {
  public static final String REGION = "eu-west-1";
  public static final String ACCESS_KEY = "AKIDS3FAKE";
  public static final String SECRET_KEY = "s3-fake-secret";

  /** S3's largest single PUT: 5 GiB (API Reference, PutObject; "EntityTooLarge"). */
  public static final long MAX_PUT_BYTES = 5L * 1024 * 1024 * 1024;

  /** The longest key: 1,024 bytes of UTF-8 (User Guide, "Naming Amazon S3 objects"). */
  public static final int MAX_KEY_BYTES = 1024;

  /** Keys per ListObjectsV2 page and per DeleteObjects request at most. */
  public static final int MAX_KEYS = 1000;

  /** The longest a presigned URL may be valid with SigV4: seven days. */
  public static final long MAX_PRESIGNED_SECONDS = 604_800;

  private static final String XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/";
  private static final DateTimeFormatter AMZ_DATE =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);

  /** One stored object: its bytes and the checksums S3 keeps with it (base64, by algorithm). */
  public record StoredObject(
      byte[] bytes, String etag, Instant lastModified, Map<String, String> checksums) {
    public String sha256Hex() {
      return HexFormat.of().formatHex(digest("SHA-256", bytes));
    }
  }

  /** A request as received, for tests that count calls: its method, path and query. */
  public record Request(String method, String path, String query) {}

  private final HttpServer server;
  private final Map<String, NavigableMap<String, StoredObject>> buckets = new ConcurrentHashMap<>();
  private final List<Request> requests = new CopyOnWriteArrayList<>();
  private volatile Duration clockOffset = Duration.ZERO;
  private final java.util.concurrent.atomic.AtomicInteger failures =
      new java.util.concurrent.atomic.AtomicInteger();
  private volatile S3Error failure;

  /** An S3 error answer. */
  private static final class S3Error extends RuntimeException {
    final int status;
    final String code;
    final Map<String, String> extra;

    S3Error(int status, String code, String message, Map<String, String> extra) {
      super(message, null, false, false);
      this.status = status;
      this.code = code;
      this.extra = extra;
    }

    S3Error(int status, String code, String message) {
      this(status, code, message, Map.of());
    }
  }

  private S3Fake(HttpServer server) {
    this.server = server;
  }

  /** Starts the fake on a free loopback port. */
  public static S3Fake start() {
    // Without this the JDK's server waits ~40 ms for a delayed ACK on every answer (DataApiFake).
    System.setProperty("sun.net.httpserver.nodelay", "true");
    try {
      HttpServer server =
          HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      S3Fake fake = new S3Fake(server);
      server.createContext("/", fake::handle);
      server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
      server.start();
      return fake;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
  }

  /** Creates an empty bucket (the stack's template creates the real one). */
  public S3Fake createBucket(String name) {
    buckets.putIfAbsent(name, new ConcurrentSkipListMap<>(S3Fake::utf8Order));
    return this;
  }

  /**
   * Answers the next {@code n} requests with S3's 503 {@code SlowDown} ("Please reduce your request
   * rate.", API Reference "Error responses"), which S3 sends when a prefix takes more requests than
   * it scales to; the SDK retries it.
   */
  public void slowDownNext(int n) {
    failure = new S3Error(503, "SlowDown", "Please reduce your request rate.");
    failures.set(n);
  }

  /** Moves the fake's clock (presigned URLs expire by it). */
  public void advanceClock(Duration by) {
    clockOffset = clockOffset.plus(by);
  }

  /** The object under {@code key}, or null. */
  public StoredObject object(String bucket, String key) {
    NavigableMap<String, StoredObject> b = buckets.get(bucket);
    return b == null ? null : b.get(key);
  }

  /** Stores an object as an unconditional PutObject without checksums would (test data). */
  public void seed(String bucket, String key, byte[] bytes) {
    String etag = "\"" + HexFormat.of().formatHex(digest("MD5", bytes)) + "\"";
    buckets.get(bucket).put(key, new StoredObject(bytes.clone(), etag, now(), Map.of()));
  }

  /** Every key of the bucket, in S3's order. */
  public List<String> keys(String bucket) {
    return List.copyOf(buckets.get(bucket).keySet());
  }

  /** Every request received, in order. */
  public List<Request> requests() {
    return List.copyOf(requests);
  }

  /** The credentials the fake signs with: tests give them to the SDK. */
  public static StaticCredentialsProvider credentials() {
    return StaticCredentialsProvider.create(AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY));
  }

  /** Path-style addressing: the fake is one host for every bucket. */
  public static S3Configuration pathStyle() {
    return S3Configuration.builder().pathStyleAccessEnabled(true).build();
  }

  /** A real SDK client pointed at this fake, without retries so a test sees each call. */
  public S3Client client() {
    return clientBuilder().serviceConfiguration(pathStyle()).build();
  }

  /**
   * A client that sends a plain body: no checksum unless the operation requires one, no {@code
   * aws-chunked} encoding (a test of a declared length the fake refuses).
   */
  public S3Client clientWithoutChecksums() {
    return clientBuilder()
        .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
        .serviceConfiguration(
            S3Configuration.builder()
                .pathStyleAccessEnabled(true)
                .chunkedEncodingEnabled(false)
                .build())
        .build();
  }

  private S3ClientBuilder clientBuilder() {
    return S3Client.builder()
        .endpointOverride(endpoint())
        .region(Region.of(REGION))
        .credentialsProvider(credentials())
        .httpClient(UrlConnectionHttpClient.create())
        .overrideConfiguration(c -> c.retryStrategy(AwsRetryStrategy.doNotRetry()));
  }

  /** A real SDK presigner pointed at this fake. */
  public S3Presigner presigner() {
    return S3Presigner.builder()
        .endpointOverride(endpoint())
        .region(Region.of(REGION))
        .credentialsProvider(credentials())
        .serviceConfiguration(pathStyle())
        .build();
  }

  private Instant now() {
    return Instant.now().plus(clockOffset);
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      URI uri = exchange.getRequestURI();
      String rawPath = uri.getRawPath();
      String rawQuery = uri.getRawQuery() == null ? "" : uri.getRawQuery();
      requests.add(new Request(exchange.getRequestMethod(), rawPath, rawQuery));
      try {
        if (failures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
          throw failure;
        }
        route(exchange, rawPath, rawQuery);
      } catch (S3Error e) {
        drain(exchange);
        error(exchange, e, rawPath);
      }
    }
  }

  private void route(HttpExchange exchange, String rawPath, String rawQuery) throws IOException {
    Map<String, String> query = parseQuery(rawQuery);
    String path = rawPath.startsWith("/") ? rawPath.substring(1) : rawPath;
    int slash = path.indexOf('/');
    String bucket = decode(slash < 0 ? path : path.substring(0, slash));
    String key = slash < 0 ? "" : decode(path.substring(slash + 1));
    String method = exchange.getRequestMethod();
    if (query.containsKey("X-Amz-Algorithm")) {
      checkPresigned(exchange, rawPath, rawQuery, query);
    } else {
      checkSigned(exchange);
    }
    NavigableMap<String, StoredObject> objects = buckets.get(bucket);
    if (bucket.isEmpty() || objects == null) {
      throw new S3Error(
          404, "NoSuchBucket", "The specified bucket does not exist", Map.of("BucketName", bucket));
    }
    if (key.isEmpty()) {
      if (method.equals("GET") && "2".equals(query.get("list-type"))) {
        listObjectsV2(exchange, bucket, objects, query);
        return;
      }
      if (method.equals("POST") && query.containsKey("delete")) {
        deleteObjects(exchange, objects);
        return;
      }
    } else if (query.keySet().stream().noneMatch(S3Fake::isSubresource)) {
      if (method.equals("PUT")) {
        putObject(exchange, objects, key);
        return;
      }
      if (method.equals("GET")) {
        getObject(exchange, objects, key);
        return;
      }
    }
    throw new S3Error(
        501,
        "NotImplemented",
        "A header or query you provided implies functionality that is not implemented ("
            + method
            + " "
            + rawPath
            + "?"
            + rawQuery
            + ")");
  }

  /** Query parameters that name another operation on the object (tagging, acl, uploads...). */
  private static boolean isSubresource(String name) {
    return !name.equals("x-id") && !name.startsWith("X-Amz-") && !name.startsWith("x-amz-");
  }

  // ---- PutObject

  private void putObject(
      HttpExchange exchange, NavigableMap<String, StoredObject> objects, String key)
      throws IOException {
    Headers h = exchange.getRequestHeaders();
    if (key.getBytes(StandardCharsets.UTF_8).length > MAX_KEY_BYTES) {
      throw new S3Error(
          400,
          "KeyTooLongError",
          "Your key is too long",
          Map.of(
              "Size",
              String.valueOf(key.getBytes(StandardCharsets.UTF_8).length),
              "MaxSizeAllowed",
              String.valueOf(MAX_KEY_BYTES)));
    }
    String contentLength = h.getFirst("Content-Length");
    if (contentLength == null) {
      throw new S3Error(
          411, "MissingContentLength", "You must provide the Content-Length HTTP header.");
    }
    String decodedLength = h.getFirst("x-amz-decoded-content-length");
    long declared = Long.parseLong(decodedLength != null ? decodedLength : contentLength);
    if (declared > MAX_PUT_BYTES) {
      throw new S3Error(
          400,
          "EntityTooLarge",
          "Your proposed upload exceeds the maximum allowed size",
          Map.of(
              "ProposedSize",
              String.valueOf(declared),
              "MaxSizeAllowed",
              String.valueOf(MAX_PUT_BYTES)));
    }
    String ifNoneMatch = h.getFirst("If-None-Match");
    if (ifNoneMatch != null && !ifNoneMatch.trim().equals("*")) {
      // S3 takes only "*" on a write ("Expects the '*' (asterisk) character").
      throw new S3Error(
          501,
          "NotImplemented",
          "A header you provided implies functionality that is not implemented");
    }
    Body body = readBody(exchange);
    if (body.bytes.length != declared) {
      throw new S3Error(
          400,
          "IncompleteBody",
          "You did not provide the number of bytes specified by the Content-Length HTTP header");
    }
    Map<String, String> checksums = verifiedChecksums(h, body);
    String etag = "\"" + HexFormat.of().formatHex(digest("MD5", body.bytes)) + "\"";
    StoredObject stored = new StoredObject(body.bytes, etag, now(), checksums);
    if (ifNoneMatch != null) {
      if (objects.putIfAbsent(key, stored) != null) {
        throw new S3Error(
            412,
            "PreconditionFailed",
            "At least one of the pre-conditions you specified did not hold",
            Map.of("Condition", "If-None-Match"));
      }
    } else {
      objects.put(key, stored);
    }
    Headers out = exchange.getResponseHeaders();
    out.set("ETag", etag);
    out.set("x-amz-server-side-encryption", "AES256");
    checksums.forEach((alg, value) -> out.set("x-amz-checksum-" + alg, value));
    respond(exchange, 200, null, new byte[0]);
  }

  /** A request body, aws-chunked decoded, with the trailing headers it carried. */
  private record Body(byte[] bytes, Map<String, String> trailers) {}

  private static Body readBody(HttpExchange exchange) throws IOException {
    byte[] raw = exchange.getRequestBody().readAllBytes();
    Headers h = exchange.getRequestHeaders();
    String sha = h.getFirst("x-amz-content-sha256");
    String encoding = h.getFirst("Content-Encoding");
    boolean chunked =
        (sha != null && sha.startsWith("STREAMING-"))
            || (encoding != null && encoding.contains("aws-chunked"));
    return chunked ? unchunk(raw) : new Body(raw, Map.of());
  }

  /**
   * Decodes {@code aws-chunked}: {@code <hex size>[;chunk-signature=...]\r\n<bytes>\r\n}, a last
   * chunk of size 0, then trailing headers ({@code x-amz-checksum-crc32:...}) up to an empty line.
   */
  private static Body unchunk(byte[] raw) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Map<String, String> trailers = new LinkedHashMap<>();
    ByteArrayInputStream in = new ByteArrayInputStream(raw);
    while (true) {
      String line = line(in);
      if (line == null) {
        throw new S3Error(
            400, "IncompleteBody", "The aws-chunked body ended without its last chunk");
      }
      int semi = line.indexOf(';');
      long size;
      try {
        size = Long.parseLong((semi < 0 ? line : line.substring(0, semi)).trim(), 16);
      } catch (NumberFormatException e) {
        throw new S3Error(
            400,
            "InvalidChunkSizeError",
            "Only the last chunk is allowed to have a size less than 8192 bytes");
      }
      if (size == 0) {
        for (String t = line(in); t != null && !t.isEmpty(); t = line(in)) {
          int colon = t.indexOf(':');
          trailers.put(
              t.substring(0, colon).trim().toLowerCase(Locale.ROOT), t.substring(colon + 1).trim());
        }
        return new Body(out.toByteArray(), trailers);
      }
      byte[] chunk = new byte[(int) size];
      int n = in.readNBytes(chunk, 0, chunk.length);
      if (n != size) {
        throw new S3Error(400, "IncompleteBody", "A chunk was shorter than its size");
      }
      out.writeBytes(chunk);
      line(in); // the CRLF after the chunk's bytes
    }
  }

  private static String line(ByteArrayInputStream in) {
    StringBuilder s = new StringBuilder();
    int c;
    while ((c = in.read()) != -1) {
      if (c == '\n') {
        int last = s.length() - 1;
        return last >= 0 && s.charAt(last) == '\r' ? s.substring(0, last) : s.toString();
      }
      s.append((char) c);
    }
    return s.length() == 0 ? null : s.toString();
  }

  /**
   * The checksums the request carried (headers or trailers), each checked against the bytes; S3
   * keeps them with the object and answers them on a GET with checksum mode.
   */
  private static Map<String, String> verifiedChecksums(Headers h, Body body) {
    Map<String, String> sent = new LinkedHashMap<>();
    for (String alg : List.of("crc32", "crc32c", "sha1", "sha256", "crc64nvme")) {
      String name = "x-amz-checksum-" + alg;
      String value = h.getFirst(name) != null ? h.getFirst(name) : body.trailers.get(name);
      if (value != null) {
        sent.put(alg, value);
      }
    }
    String md5 = h.getFirst("Content-MD5");
    if (md5 != null && !md5.equals(base64(digest("MD5", body.bytes)))) {
      throw new S3Error(
          400, "BadDigest", "The Content-MD5 you specified did not match what we received.");
    }
    sent.forEach(
        (alg, value) -> {
          String computed = checksum(alg, body.bytes);
          if (computed != null && !computed.equals(value)) {
            throw new S3Error(
                400,
                "BadDigest",
                "The "
                    + alg.toUpperCase(Locale.ROOT)
                    + " you specified did not match the calculated checksum.");
          }
        });
    return sent;
  }

  /** The base64 checksum S3 computes for {@code alg}; null for one the JDK has no code for. */
  private static String checksum(String alg, byte[] bytes) {
    switch (alg) {
      case "crc32":
        return crc(new CRC32(), bytes);
      case "crc32c":
        return crc(new CRC32C(), bytes);
      case "sha1":
        return base64(digest("SHA-1", bytes));
      case "sha256":
        return base64(digest("SHA-256", bytes));
      default:
        return null; // CRC64NVME: kept as sent
    }
  }

  private static String crc(Checksum crc, byte[] bytes) {
    crc.update(bytes, 0, bytes.length);
    return base64(ByteBuffer.allocate(4).putInt((int) crc.getValue()).array());
  }

  // ---- GetObject

  private void getObject(
      HttpExchange exchange, NavigableMap<String, StoredObject> objects, String key)
      throws IOException {
    StoredObject o = objects.get(key);
    if (o == null) {
      throw new S3Error(404, "NoSuchKey", "The specified key does not exist.", Map.of("Key", key));
    }
    Headers out = exchange.getResponseHeaders();
    out.set("ETag", o.etag);
    out.set(
        "Last-Modified",
        DateTimeFormatter.RFC_1123_DATE_TIME.format(o.lastModified.atOffset(ZoneOffset.UTC)));
    out.set("x-amz-server-side-encryption", "AES256");
    if ("ENABLED".equals(exchange.getRequestHeaders().getFirst("x-amz-checksum-mode"))) {
      o.checksums.forEach((alg, value) -> out.set("x-amz-checksum-" + alg, value));
    }
    respond(exchange, 200, "application/octet-stream", o.bytes);
  }

  // ---- ListObjectsV2

  private void listObjectsV2(
      HttpExchange exchange,
      String bucket,
      NavigableMap<String, StoredObject> objects,
      Map<String, String> query)
      throws IOException {
    if (query.containsKey("delimiter")) {
      throw new S3Error(501, "NotImplemented", "The fake lists without a delimiter only");
    }
    String prefix = query.getOrDefault("prefix", "");
    int maxKeys;
    try {
      maxKeys = Integer.parseInt(query.getOrDefault("max-keys", String.valueOf(MAX_KEYS)));
    } catch (NumberFormatException e) {
      throw new S3Error(
          400, "InvalidArgument", "Provided max-keys not an integer or within integer range");
    }
    if (maxKeys < 0) {
      throw new S3Error(
          400, "InvalidArgument", "Argument maxKeys must be an integer between 0 and 2147483647");
    }
    // "Returns some or all (up to 1,000) of the objects in a bucket" (API Reference,
    // ListObjectsV2).
    int page = Math.min(maxKeys, MAX_KEYS);
    String after = query.getOrDefault("start-after", "");
    String token = query.get("continuation-token");
    if (token != null) {
      try {
        after = new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);
      } catch (IllegalArgumentException e) {
        throw new S3Error(400, "InvalidArgument", "The continuation token provided is incorrect");
      }
      if (!after.startsWith("k:")) {
        throw new S3Error(400, "InvalidArgument", "The continuation token provided is incorrect");
      }
      after = after.substring(2);
    }
    boolean urlEncoded = "url".equals(query.get("encoding-type"));
    List<Map.Entry<String, StoredObject>> listed = new ArrayList<>();
    boolean truncated = false;
    NavigableMap<String, StoredObject> from =
        utf8Order(after, prefix) < 0
            ? objects.tailMap(prefix, true)
            : objects.tailMap(after, false);
    for (Map.Entry<String, StoredObject> e : from.entrySet()) {
      if (!e.getKey().startsWith(prefix)) {
        if (utf8Order(e.getKey(), prefix) > 0) {
          break;
        }
        continue;
      }
      if (listed.size() == page) {
        truncated = true;
        break;
      }
      listed.add(e);
    }
    StringBuilder x = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    x.append("<ListBucketResult xmlns=\"").append(XMLNS).append("\">");
    tag(x, "Name", bucket);
    tag(x, "Prefix", urlEncoded ? urlEncode(prefix) : prefix);
    tag(x, "KeyCount", String.valueOf(listed.size()));
    tag(x, "MaxKeys", String.valueOf(maxKeys));
    tag(x, "IsTruncated", String.valueOf(truncated));
    if (urlEncoded) {
      tag(x, "EncodingType", "url");
    }
    if (token != null) {
      tag(x, "ContinuationToken", token);
    }
    if (truncated) {
      String last = listed.get(listed.size() - 1).getKey();
      tag(
          x,
          "NextContinuationToken",
          Base64.getUrlEncoder().encodeToString(("k:" + last).getBytes(StandardCharsets.UTF_8)));
    }
    for (Map.Entry<String, StoredObject> e : listed) {
      x.append("<Contents>");
      tag(x, "Key", urlEncoded ? urlEncode(e.getKey()) : e.getKey());
      tag(x, "LastModified", DateTimeFormatter.ISO_INSTANT.format(e.getValue().lastModified));
      tag(x, "ETag", e.getValue().etag);
      tag(x, "Size", String.valueOf(e.getValue().bytes.length));
      tag(x, "StorageClass", "STANDARD");
      x.append("</Contents>");
    }
    x.append("</ListBucketResult>");
    respond(exchange, 200, "application/xml", x.toString().getBytes(StandardCharsets.UTF_8));
  }

  // ---- DeleteObjects

  private void deleteObjects(HttpExchange exchange, NavigableMap<String, StoredObject> objects)
      throws IOException {
    Headers h = exchange.getRequestHeaders();
    Body body = readBody(exchange);
    boolean integrity =
        h.getFirst("Content-MD5") != null
            || h.keySet().stream()
                .anyMatch(n -> n.toLowerCase(Locale.ROOT).startsWith("x-amz-checksum-"))
            || body.trailers.keySet().stream().anyMatch(n -> n.startsWith("x-amz-checksum-"));
    if (!integrity) {
      // "The Content-MD5 or x-amz-sdk-checksum-algorithm header is required for Multi-Object
      // Delete requests" (API Reference, DeleteObjects).
      throw new S3Error(
          400, "InvalidRequest", "Missing required header for this request: Content-MD5");
    }
    verifiedChecksums(h, body);
    List<String> keys = new ArrayList<>();
    boolean quiet;
    try {
      DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
      f.setNamespaceAware(false);
      f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
      Document doc = f.newDocumentBuilder().parse(new ByteArrayInputStream(body.bytes));
      Element root = doc.getDocumentElement();
      if (!root.getTagName().equals("Delete")) {
        throw malformedXml();
      }
      NodeList q = root.getElementsByTagName("Quiet");
      quiet = q.getLength() > 0 && q.item(0).getTextContent().trim().equals("true");
      NodeList objs = root.getElementsByTagName("Object");
      for (int i = 0; i < objs.getLength(); i++) {
        NodeList k = ((Element) objs.item(i)).getElementsByTagName("Key");
        if (k.getLength() != 1) {
          throw malformedXml();
        }
        keys.add(k.item(0).getTextContent());
      }
    } catch (S3Error e) {
      throw e;
    } catch (Exception e) {
      throw malformedXml();
    }
    if (keys.isEmpty() || keys.size() > MAX_KEYS) {
      throw malformedXml();
    }
    StringBuilder x = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    x.append("<DeleteResult xmlns=\"").append(XMLNS).append("\">");
    for (String key : keys) {
      objects.remove(key);
      if (!quiet) {
        x.append("<Deleted>");
        tag(x, "Key", key);
        x.append("</Deleted>");
      }
    }
    x.append("</DeleteResult>");
    respond(exchange, 200, "application/xml", x.toString().getBytes(StandardCharsets.UTF_8));
  }

  private static S3Error malformedXml() {
    return new S3Error(
        400,
        "MalformedXML",
        "The XML you provided was not well-formed or did not validate against our published schema");
  }

  // ---- Authentication

  /** A header-signed request: SigV4 with the fake's access key (the SDK computed the signature). */
  private static void checkSigned(HttpExchange exchange) {
    String auth = exchange.getRequestHeaders().getFirst("Authorization");
    if (auth == null || !auth.startsWith("AWS4-HMAC-SHA256 Credential=" + ACCESS_KEY + "/")) {
      throw new S3Error(403, "AccessDenied", "Access Denied");
    }
  }

  /**
   * A presigned request (query-string SigV4): the expiry's bound, the signature recomputed from the
   * request as received, then the expiry against the fake's clock.
   */
  private void checkPresigned(
      HttpExchange exchange, String rawPath, String rawQuery, Map<String, String> query) {
    long expires;
    try {
      expires = Long.parseLong(query.getOrDefault("X-Amz-Expires", ""));
    } catch (NumberFormatException e) {
      throw new S3Error(
          400, "AuthorizationQueryParametersError", "X-Amz-Expires should be a number");
    }
    if (expires > MAX_PRESIGNED_SECONDS) {
      throw new S3Error(
          400,
          "AuthorizationQueryParametersError",
          "X-Amz-Expires must be less than a week (in seconds) that is; 604800");
    }
    if (expires < 0) {
      throw new S3Error(
          400, "AuthorizationQueryParametersError", "X-Amz-Expires must be non-negative");
    }
    String credential = query.getOrDefault("X-Amz-Credential", "");
    String[] scope = credential.split("/");
    if (scope.length != 5 || !scope[0].equals(ACCESS_KEY)) {
      throw new S3Error(
          403,
          "InvalidAccessKeyId",
          "The AWS Access Key Id you provided does not exist in our records.");
    }
    Instant signedAt;
    try {
      signedAt = Instant.from(AMZ_DATE.parse(query.getOrDefault("X-Amz-Date", "")));
    } catch (DateTimeParseException e) {
      throw new S3Error(
          400,
          "AuthorizationQueryParametersError",
          "X-Amz-Date must be in the ISO8601 Long Format");
    }
    String expected = signature(exchange, rawPath, rawQuery, query, scope);
    if (!expected.equals(query.get("X-Amz-Signature"))) {
      throw new S3Error(
          403,
          "SignatureDoesNotMatch",
          "The request signature we calculated does not match the signature you provided. Check your key and signing method.");
    }
    Instant expiresAt = signedAt.plusSeconds(expires);
    Instant now = now();
    if (now.isAfter(expiresAt)) {
      throw new S3Error(
          403,
          "AccessDenied",
          "Request has expired",
          Map.of(
              "X-Amz-Expires",
              String.valueOf(expires),
              "Expires",
              DateTimeFormatter.ISO_INSTANT.format(expiresAt),
              "ServerTime",
              DateTimeFormatter.ISO_INSTANT.format(now)));
    }
  }

  /**
   * SigV4's query signature of the request as received (API Reference, sigv4-query-string-auth).
   */
  private static String signature(
      HttpExchange exchange,
      String rawPath,
      String rawQuery,
      Map<String, String> query,
      String[] scope) {
    List<String> params = new ArrayList<>();
    for (String p : rawQuery.split("&")) {
      if (!p.isEmpty() && !p.startsWith("X-Amz-Signature=")) {
        params.add(p.contains("=") ? p : p + "=");
      }
    }
    params.sort(null);
    StringBuilder canonical = new StringBuilder();
    canonical.append(exchange.getRequestMethod()).append('\n');
    canonical.append(rawPath).append('\n');
    canonical.append(String.join("&", params)).append('\n');
    String signedHeaders = query.getOrDefault("X-Amz-SignedHeaders", "host");
    for (String name : signedHeaders.split(";")) {
      String value = exchange.getRequestHeaders().getFirst(name);
      canonical.append(name).append(':').append(value == null ? "" : value.trim()).append('\n');
    }
    canonical.append('\n').append(signedHeaders).append('\n').append("UNSIGNED-PAYLOAD");
    String stringToSign =
        "AWS4-HMAC-SHA256\n"
            + query.get("X-Amz-Date")
            + "\n"
            + String.join("/", scope[1], scope[2], scope[3], scope[4])
            + "\n"
            + HexFormat.of()
                .formatHex(
                    digest("SHA-256", canonical.toString().getBytes(StandardCharsets.UTF_8)));
    byte[] key = hmac(("AWS4" + SECRET_KEY).getBytes(StandardCharsets.UTF_8), scope[1]);
    key = hmac(key, scope[2]);
    key = hmac(key, scope[3]);
    key = hmac(key, scope[4]);
    return HexFormat.of().formatHex(hmac(key, stringToSign));
  }

  // ---- Plumbing

  private static void error(HttpExchange exchange, S3Error e, String resource) throws IOException {
    StringBuilder x = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error>");
    tag(x, "Code", e.code);
    tag(x, "Message", e.getMessage());
    e.extra.forEach((k, v) -> tag(x, k, v));
    tag(x, "Resource", resource);
    tag(x, "RequestId", requestId());
    tag(x, "HostId", "s3-fake");
    x.append("</Error>");
    respond(exchange, e.status, "application/xml", x.toString().getBytes(StandardCharsets.UTF_8));
  }

  private static void respond(HttpExchange exchange, int status, String contentType, byte[] body)
      throws IOException {
    Headers out = exchange.getResponseHeaders();
    if (contentType != null) {
      out.set("Content-Type", contentType);
    }
    out.set("x-amz-request-id", requestId());
    out.set("x-amz-id-2", "s3-fake");
    boolean head = exchange.getRequestMethod().equals("HEAD");
    exchange.sendResponseHeaders(status, head || body.length == 0 ? -1 : body.length);
    if (!head && body.length > 0) {
      try (OutputStream o = exchange.getResponseBody()) {
        o.write(body);
      }
    }
  }

  /** Reads what is left of a refused request's body, so the client can read the answer. */
  private static void drain(HttpExchange exchange) {
    try {
      exchange.getRequestBody().transferTo(OutputStream.nullOutputStream());
    } catch (IOException e) {
      // the client went away: nothing to answer
    }
  }

  private static String requestId() {
    return UUID.randomUUID().toString().replace("-", "").substring(0, 16).toUpperCase(Locale.ROOT);
  }

  private static void tag(StringBuilder x, String name, String value) {
    x.append('<')
        .append(name)
        .append('>')
        .append(escapeXml(value))
        .append("</")
        .append(name)
        .append('>');
  }

  private static String escapeXml(String s) {
    return s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("\"", "&quot;");
  }

  private static Map<String, String> parseQuery(String rawQuery) {
    Map<String, String> q = new LinkedHashMap<>();
    for (String p : rawQuery.split("&")) {
      if (p.isEmpty()) {
        continue;
      }
      int eq = p.indexOf('=');
      q.put(decode(eq < 0 ? p : p.substring(0, eq)), eq < 0 ? "" : decode(p.substring(eq + 1)));
    }
    return q;
  }

  /** Percent-decoding as S3 does it: a '+' in a path or query is a plus, never a space. */
  private static String decode(String s) {
    return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
  }

  private static String urlEncode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /** S3 lists keys in UTF-8 binary order. */
  private static int utf8Order(String a, String b) {
    return java.util.Arrays.compareUnsigned(
        a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
  }

  private static byte[] digest(String alg, byte[] bytes) {
    try {
      return MessageDigest.getInstance(alg).digest(bytes);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static byte[] hmac(byte[] key, String data) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String base64(byte[] bytes) {
    return Base64.getEncoder().encodeToString(bytes);
  }

  @Override
  public void close() {
    server.stop(0);
    ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdownNow();
  }
}
