package buildqueue.aws.db;

import buildqueue.BuildQueueException;
import buildqueue.db.Database;
import buildqueue.db.Params;
import buildqueue.db.Row;
import buildqueue.db.WorkerRole;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.security.SecureRandom;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import software.amazon.awssdk.services.secretsmanager.SecretsManagerClient;
import software.amazon.awssdk.services.secretsmanager.model.DescribeSecretResponse;
import software.amazon.awssdk.services.secretsmanager.model.ResourceNotFoundException;

/**
 * Rotates the worker role's secret by Secrets Manager's protocol for a rotation function (four
 * steps, each invoked with the secret and the new version's {@code ClientRequestToken}, each safe
 * to run again, as Secrets Manager retries a failed one):
 *
 * <ol>
 *   <li>{@link Step#CREATE_SECRET}: a new random password, in a copy of the current JSON, as the
 *       token's version labelled {@code AWSPENDING}; nothing if that version already has a value.
 *   <li>{@link Step#SET_SECRET}: the role's password becomes the pending one, through the master
 *       credentials ({@link WorkerRole#allowLogin}).
 *   <li>{@link Step#TEST_SECRET}: the pending version names the worker role and holds a password,
 *       and the role may log in. The Data API takes a secret, not a version, so nothing here can
 *       log in with the pending password before it is current; the login itself is proven by the
 *       tests.
 *   <li>{@link Step#FINISH_SECRET}: {@code AWSCURRENT} moves to the token (Secrets Manager moves
 *       {@code AWSPREVIOUS}), the role's password is set from it once more, and {@code AWSPENDING}
 *       is taken off.
 * </ol>
 *
 * Setting the password again after the move closes a race with a deploy: the Migrate function sets
 * the role from {@code AWSCURRENT} and reads it again afterwards, so whichever runs last, the role
 * ends on the secret's current password. Between {@code setSecret} and {@code finishSecret} (a few
 * seconds) the role has the new password and {@code AWSCURRENT} the old: a worker's statement that
 * needs a new database connection then fails to log in (one user, one password: PostgreSQL keeps no
 * second). Passwords are never logged or put in a message.
 */
public final class WorkerSecretRotation {
  public static final String CURRENT = "AWSCURRENT";
  public static final String PENDING = "AWSPENDING";

  /**
   * As the stack's GenerateSecretString: 32 printable ASCII characters without those that break
   * connection strings or shells. Made here rather than by GetRandomPassword, which takes no
   * resource and so would need an IAM statement on every resource.
   */
  static final int PASSWORD_LENGTH = 32;

  static final String EXCLUDED = "\"@/\\'";
  private static final SecureRandom RANDOM = new SecureRandom();

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CAN_LOG_IN = "select rolcanlogin from pg_roles where rolname = :name";

  /** The steps, by the names Secrets Manager sends. */
  public enum Step {
    CREATE_SECRET("createSecret"),
    SET_SECRET("setSecret"),
    TEST_SECRET("testSecret"),
    FINISH_SECRET("finishSecret");

    private final String wireName;

    Step(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }

    public static Step of(String name) {
      for (Step s : values()) {
        if (s.wireName.equals(name)) {
          return s;
        }
      }
      throw new BuildQueueException(
          "unknown rotation step \""
              + name
              + "\": Secrets Manager sends createSecret, setSecret, testSecret or finishSecret");
    }
  }

  private final SecretsManagerClient secrets;
  private final Supplier<Database> admin;
  private final String secretArn;

  /**
   * @param admin the database as the master user (who may set the role's password)
   * @param secretArn the worker role's secret: the only one this rotates
   */
  public WorkerSecretRotation(
      SecretsManagerClient secrets, Supplier<Database> admin, String secretArn) {
    this.secrets = secrets;
    this.admin = admin;
    this.secretArn = secretArn;
  }

  /** Runs one step for the version {@code token} of {@code secretId}; returns what it did. */
  public String run(Step step, String secretId, String token) {
    if (!secretArn.equals(secretId)) {
      throw new BuildQueueException(
          "this function rotates the worker role's secret " + secretArn + " only, not " + secretId);
    }
    if (token == null || token.isBlank()) {
      throw new BuildQueueException("the rotation event has no ClientRequestToken");
    }
    List<String> stages = stagesOf(token);
    if (stages.contains(CURRENT)) {
      if (step == Step.FINISH_SECRET) {
        return finishedAlready(token, stages);
      }
      return "version " + token + " is already AWSCURRENT: nothing to do";
    }
    if (!stages.contains(PENDING)) {
      throw new BuildQueueException(
          "version "
              + token
              + " of "
              + secretArn
              + " is not AWSPENDING (its labels: "
              + stages
              + "); start a new rotation");
    }
    return switch (step) {
      case CREATE_SECRET -> create(token);
      case SET_SECRET -> set(token);
      case TEST_SECRET -> test(token);
      case FINISH_SECRET -> finish(token);
    };
  }

  private List<String> stagesOf(String token) {
    DescribeSecretResponse d = secrets.describeSecret(r -> r.secretId(secretArn));
    if (!Boolean.TRUE.equals(d.rotationEnabled())) {
      throw new BuildQueueException("secret " + secretArn + " is not enabled for rotation");
    }
    Map<String, List<String>> versions = d.versionIdsToStages();
    if (!versions.containsKey(token)) {
      throw new BuildQueueException(
          "version " + token + " of " + secretArn + " has no label for rotation");
    }
    return versions.get(token);
  }

  private String create(String token) {
    ObjectNode current =
        json(
            secrets
                .getSecretValue(r -> r.secretId(secretArn).versionStage(CURRENT))
                .secretString());
    try {
      secrets.getSecretValue(r -> r.secretId(secretArn).versionId(token).versionStage(PENDING));
      return "version " + token + " already holds the pending password";
    } catch (ResourceNotFoundException notYet) {
      current.put("password", newPassword());
      String pending = current.toString();
      secrets.putSecretValue(
          r ->
              r.secretId(secretArn)
                  .clientRequestToken(token)
                  .secretString(pending)
                  .versionStages(PENDING));
      return "version " + token + " created with a new password, labelled AWSPENDING";
    }
  }

  private String set(String token) {
    WorkerRole.allowLogin(admin.get(), password(token, PENDING));
    return "the worker role's password is now version " + token + "'s";
  }

  private String test(String token) {
    password(token, PENDING);
    List<Row> role = admin.get().query(CAN_LOG_IN, Params.of("name", WorkerRole.NAME));
    if (role.isEmpty() || !Boolean.TRUE.equals(role.get(0).bool("rolcanlogin"))) {
      throw new BuildQueueException(
          "the worker role "
              + WorkerRole.NAME
              + " cannot log in; deploy the stack"
              + " (its migration makes the role) before rotating its secret");
    }
    return "version " + token + " names the worker role, which may log in";
  }

  private String finish(String token) {
    String current = versionLabelled(CURRENT);
    secrets.updateSecretVersionStage(
        r ->
            r.secretId(secretArn)
                .versionStage(CURRENT)
                .moveToVersionId(token)
                .removeFromVersionId(current));
    return finishedAlready(token, List.of(CURRENT, PENDING));
  }

  /** The token is AWSCURRENT: the role gets its password (again), and AWSPENDING comes off. */
  private String finishedAlready(String token, List<String> stages) {
    WorkerRole.allowLogin(admin.get(), password(token, null));
    if (stages.contains(PENDING)) {
      secrets.updateSecretVersionStage(
          r -> r.secretId(secretArn).versionStage(PENDING).removeFromVersionId(token));
    }
    return "version " + token + " is AWSCURRENT and the worker role's password";
  }

  static String newPassword() {
    StringBuilder alphabet = new StringBuilder();
    for (char c = '!'; c <= '~'; c++) {
      if (EXCLUDED.indexOf(c) < 0) {
        alphabet.append(c);
      }
    }
    StringBuilder password = new StringBuilder(PASSWORD_LENGTH);
    for (int i = 0; i < PASSWORD_LENGTH; i++) {
      password.append(alphabet.charAt(RANDOM.nextInt(alphabet.length())));
    }
    return password.toString();
  }

  private String versionLabelled(String stage) {
    DescribeSecretResponse d = secrets.describeSecret(r -> r.secretId(secretArn));
    return d.versionIdsToStages().entrySet().stream()
        .filter(e -> e.getValue().contains(stage))
        .map(Map.Entry::getKey)
        .findFirst()
        .orElse(null);
  }

  /** The password of version {@code token} (which must carry {@code stage}, if given). */
  private String password(String token, String stage) {
    String text =
        secrets
            .getSecretValue(
                r -> {
                  r.secretId(secretArn).versionId(token);
                  if (stage != null) {
                    r.versionStage(stage);
                  }
                })
            .secretString();
    ObjectNode value = json(text);
    if (!WorkerRole.NAME.equals(value.path("username").asText())) {
      throw new BuildQueueException(
          "version "
              + token
              + " of "
              + secretArn
              + " does not name the worker role "
              + WorkerRole.NAME
              + " as its \"username\"");
    }
    JsonNode password = value.get("password");
    if (password == null || !password.isTextual() || password.asText().isEmpty()) {
      throw new BuildQueueException(
          "version " + token + " of " + secretArn + " has no \"password\" field");
    }
    return password.asText();
  }

  private ObjectNode json(String text) {
    try {
      JsonNode node = text == null ? null : JSON.readTree(text);
      if (node instanceof ObjectNode object) {
        return object;
      }
    } catch (IOException e) {
      // The text is not echoed: it is the secret.
    }
    throw new BuildQueueException("a version of " + secretArn + " is not a JSON object");
  }
}
