package buildqueue.aws.db;

import java.net.URI;
import java.util.Map;
import java.util.Optional;

/**
 * Where the Data API adapter sends its statements. Immutable; {@link #validate()} names the first
 * field that is wrong.
 *
 * @param region the AWS region of the cluster, e.g. {@code eu-west-1}; required
 * @param endpointOverride another endpoint than the region's (tests point it at a local fake);
 *     empty in production
 * @param resourceArn the Aurora cluster's ARN; required
 * @param secretArn the ARN of the Secrets Manager secret holding the database credentials; required
 * @param database the database name; required (the Data API would otherwise use the secret's
 *     default database, which is easy to get wrong)
 */
public record DataApiSettings(
    String region,
    Optional<URI> endpointOverride,
    String resourceArn,
    String secretArn,
    String database) {

  /** Environment variables read by {@link #fromEnvironment}. */
  public static final String ENV_REGION = "AWS_REGION";

  public static final String ENV_CLUSTER_ARN = "DB_CLUSTER_ARN";
  public static final String ENV_SECRET_ARN = "DB_SECRET_ARN";
  public static final String ENV_DATABASE = "DB_NAME";

  /** Optional; for tests and local emulators only. */
  public static final String ENV_ENDPOINT = "DB_DATA_API_ENDPOINT";

  public DataApiSettings {
    endpointOverride = endpointOverride == null ? Optional.empty() : endpointOverride;
  }

  public static DataApiSettings of(
      String region, String resourceArn, String secretArn, String database) {
    return new DataApiSettings(region, Optional.empty(), resourceArn, secretArn, database);
  }

  public DataApiSettings withEndpointOverride(URI endpoint) {
    return new DataApiSettings(region, Optional.of(endpoint), resourceArn, secretArn, database);
  }

  public DataApiSettings withDatabase(String name) {
    return new DataApiSettings(region, endpointOverride, resourceArn, secretArn, name);
  }

  /** Settings from {@code AWS_REGION} (set by Lambda and ECS), {@code DB_CLUSTER_ARN}, etc. */
  public static DataApiSettings fromEnvironment(Map<String, String> env) {
    Optional<URI> endpoint =
        Optional.ofNullable(env.get(ENV_ENDPOINT)).filter(s -> !s.isBlank()).map(URI::create);
    return new DataApiSettings(
            env.get(ENV_REGION),
            endpoint,
            env.get(ENV_CLUSTER_ARN),
            env.get(ENV_SECRET_ARN),
            env.get(ENV_DATABASE))
        .validate();
  }

  /** Returns this when every field is usable, else throws naming the field. */
  public DataApiSettings validate() {
    require("region", region);
    require("resourceArn", resourceArn);
    require("secretArn", secretArn);
    require("database", database);
    if (!resourceArn.startsWith("arn:") || !resourceArn.contains(":cluster:")) {
      throw new IllegalArgumentException(
          "resourceArn must be an Aurora cluster ARN (arn:aws:rds:<region>:<account>:cluster:<name>), got "
              + resourceArn);
    }
    if (!secretArn.startsWith("arn:") || !secretArn.contains(":secret:")) {
      // Not echoed: a value put here by mistake may be the password itself.
      throw new IllegalArgumentException(
          "secretArn must be a Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>)");
    }
    return this;
  }

  private static void require(String field, String value) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException("Data API setting " + field + " is required");
    }
  }
}
