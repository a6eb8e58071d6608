package buildqueue.local;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;

/**
 * How a client command reaches the API: the local server on {@code --port} with a token minted from
 * the secret in {@code --data-dir}, or a deployed API ({@code --api-url}) with a token from its
 * issuer.
 */
final class ApiConnection {
  /** The options every client command takes to find the API. */
  static final Set<String> FLAGS = Set.of("port", "data-dir", "api-url", "token");

  /** The bearer token for {@code --api-url} when {@code --token} is not given. */
  static final String API_TOKEN_ENV = "BUILDQUEUE_API_TOKEN";

  /** How long a token the CLI mints for itself is valid. */
  static final Duration CLI_TOKEN_TTL = Duration.ofMinutes(5);

  private ApiConnection() {}

  /** A client for {@code user} (an admin if {@code admin}) on the API the options name. */
  static ApiClient open(Cli cli, CommandLine cl, String user, boolean admin) {
    if (cl.has("api-url")) {
      return remote(cli, cl);
    }
    if (cl.has("token")) {
      throw new CommandLine.UsageException(
          "--token goes with --api-url; the local server's tokens come from --data-dir");
    }
    int port = cl.intValue("port", LocalSettings.DEFAULT_PORT, 1, 65535);
    return client(
        cli,
        URI.create("http://127.0.0.1:" + port + "/"),
        tokens(cl).mint(user, admin, CLI_TOKEN_TTL));
  }

  /**
   * A deployed API (the stack's ApiUrl output) with a token from its issuer: the token's subject is
   * the user.
   */
  private static ApiClient remote(Cli cli, CommandLine cl) {
    String url = cl.get("api-url", null);
    String token = cl.get("token", cli.env.get(API_TOKEN_ENV));
    if (token == null || token.isBlank()) {
      throw new CommandLine.UsageException(
          "--api-url needs a bearer token from the API's issuer: --token T, or " + API_TOKEN_ENV);
    }
    URI base;
    try {
      base = URI.create(url.endsWith("/") ? url : url + "/");
    } catch (IllegalArgumentException e) {
      throw new CommandLine.UsageException("--api-url is not a URL: " + url);
    }
    if (!"https".equals(base.getScheme()) && !"http".equals(base.getScheme())
        || base.getHost() == null) {
      throw new CommandLine.UsageException(
          "--api-url must be an http(s) URL such as the stack's ApiUrl, not " + url);
    }
    return client(cli, base, token);
  }

  /**
   * A client that asks again while the API is not ready ({@link ApiClient.NotReadyRetry}), saying
   * so on standard error.
   */
  private static ApiClient client(Cli cli, URI base, String token) {
    return new ApiClient(
        base,
        token,
        ApiClient.NotReadyRetry.STANDARD,
        d -> Thread.sleep(d.toMillis()),
        notice -> cli.err.println("buildqueue: " + notice));
  }

  /** The token issuer of the data directory {@code --data-dir} names. */
  static LocalTokens tokens(CommandLine cl) {
    return LocalTokens.open(
        Path.of(cl.get("data-dir", LocalSettings.DEFAULT_DATA_DIR.toString())).toAbsolutePath());
  }
}
