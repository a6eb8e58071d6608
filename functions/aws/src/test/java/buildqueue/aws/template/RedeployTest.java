package buildqueue.aws.template;

import static buildqueue.aws.template.CfnTemplate.map;
import static org.assertj.core.api.Assertions.assertThat;

import buildqueue.aws.testing.SampleEvents;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A redeploy moves every function's {@code live} alias to a version with the new values. SAM's
 * AutoPublishAlias names a function's version after a hash of its code location and its Environment
 * <em>text</em> (aws/serverless-application-model #1640, #3820), so a new parameter value or a
 * replaced resource behind a {@code !Ref} keeps the version, and the alias stays on a version that
 * still has the old values. The template puts every value a deploy can change into each function's
 * VersionDescription, which is create-only: a change replaces the version, which publishes one from
 * the updated function, and the alias follows.
 *
 * <p>Each test translates the template with AWS's SAM translator before and after one kind of
 * change and plays both deploys on a small model of what CloudFormation and Lambda do with the
 * result ({@link Deploy}): a resource whose create-only properties change is replaced (a new
 * physical id, a new task definition revision, a newly published version); a version is a snapshot
 * of its function's configuration when it was published; an alias points where its FunctionVersion
 * resolves. After the second deploy each alias must point at a version whose configuration is the
 * function's current one.
 */
class RedeployTest {
  /** Values for the parameters without a default; the rest keep their defaults. */
  static final Map<String, String> FIRST_DEPLOY =
      Map.of(
          "JwtIssuer", "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf",
          "JwtAudience", "client-1",
          "WorkerImage", "111122223333.dkr.ecr.eu-west-1.amazonaws.com/buildqueue-worker:0.1.0",
          "VpcId", "vpc-0aaa1111",
          "SubnetIds", "subnet-0aaa1111,subnet-0bbb2222");

  /** One redeploy per kind of change, each changing what its name says and nothing else. */
  static final Map<String, Map<String, String>> CHANGES = changes();

  private static Map<String, Map<String, String>> changes() {
    Map<String, Map<String, String>> c = new LinkedHashMap<>();
    c.put(
        "worker image tag",
        Map.of(
            "WorkerImage", "111122223333.dkr.ecr.eu-west-1.amazonaws.com/buildqueue-worker:0.2.0"));
    c.put("worker CPU and memory", Map.of("WorkerCpu", "2048", "WorkerMemory", "4096"));
    c.put("shared slots", Map.of("SharedSlots", "5"));
    c.put("worker lifetime (and so the lease)", Map.of("WorkerLifetimeMinutes", "120"));
    c.put("chain window", Map.of("ChainWindowSeconds", "0"));
    c.put("shared order", Map.of("SharedOrder", "fifo"));
    c.put("queue quota", Map.of("MaxQueuedJobs", "50"));
    c.put("subnets", Map.of("SubnetIds", "subnet-0aaa1111,subnet-0ccc3333"));
    c.put("public IP", Map.of("WorkerPublicIp", "false"));
    c.put(
        "VPC (the security groups are replaced)",
        Map.of("VpcId", "vpc-0bbb2222", "SubnetIds", "subnet-0ddd4444,subnet-0eee5555"));
    c.put("database capacity", Map.of("DatabaseMaxCapacity", "8"));
    c.put("default capacity", Map.of("DefaultCapacity", "spot-then-on-demand"));
    c.put("log retention", Map.of("LogRetentionDays", "90"));
    c.put(
        "JWT issuer and audience",
        Map.of("JwtIssuer", "https://issuer.example.com", "JwtAudience", "client-2"));
    return c;
  }

  @TempDir Path dir;

  @Test
  void every_parameter_has_a_redeploy_case() {
    Set<String> changed = new TreeSet<>();
    CHANGES.values().forEach(m -> changed.addAll(m.keySet()));

    assertThat(changed)
        .containsExactlyInAnyOrderElementsOf(
            SamTranslation.repositoryTemplate().parameters().keySet());
  }

  @Test
  void the_translation_does_not_depend_on_parameter_values_so_only_cloudformation_resolves_them() {
    // CloudFormation gives the transform the stack's parameter values; SAM hashes Environment as
    // written, so every change of a value gives the same versions: only what CloudFormation
    // resolves (the VersionDescription) can tell the deploys apart.
    Map<String, String> everythingChanged = new HashMap<>(FIRST_DEPLOY);
    CHANGES.values().forEach(everythingChanged::putAll);
    Path template = SampleEvents.repoFile("template.yaml");

    assertThat(SamTranslation.translated(template, everythingChanged).root())
        .isEqualTo(SamTranslation.repositoryTemplate().root());
  }

  @Test
  void each_kind_of_parameter_change_moves_every_live_alias_to_a_version_with_the_new_values() {
    // One translation serves every deploy: it does not depend on the values (the test above).
    CfnTemplate translated = SamTranslation.repositoryTemplate();
    Deploy first = Deploy.of(translated, FIRST_DEPLOY, null);
    assertThat(first.staleAliases()).isEmpty();

    CHANGES.forEach(
        (change, values) -> {
          Map<String, String> params = new HashMap<>(FIRST_DEPLOY);
          params.putAll(values);

          Deploy second = Deploy.of(translated, params, first);

          assertThat(second.staleAliases())
              .as("after a redeploy that changes the %s", change)
              .isEmpty();
          for (String function : second.functionsWhoseConfigurationChanged()) {
            assertThat(second.aliasVersion(function))
                .as("%s's live version after changing the %s", function, change)
                .isGreaterThan(first.aliasVersion(function));
          }
        });
  }

  @Test
  void a_redeploy_with_new_code_moves_every_live_alias_to_the_new_code() throws IOException {
    CfnTemplate before = SamTranslation.repositoryTemplate();
    CfnTemplate after = withCode("code.jar", "another build");
    Deploy first = Deploy.of(before, FIRST_DEPLOY, null);

    Deploy second = Deploy.of(after, FIRST_DEPLOY, first);

    assertThat(second.staleAliases()).isEmpty();
    assertThat(second.functionsWhoseConfigurationChanged())
        .as("every function runs the new code")
        .containsExactlyInAnyOrderElementsOf(after.resourcesOfType("AWS::Lambda::Function"));
    second
        .functionsWhoseConfigurationChanged()
        .forEach(
            f -> assertThat(second.aliasVersion(f)).as(f).isGreaterThan(first.aliasVersion(f)));
  }

  @Test
  void without_the_version_descriptions_a_parameter_change_leaves_the_aliases_on_the_old_values()
      throws IOException {
    // Today's template before this change: SharedSlots 1 -> 5 gives the same version logical ids,
    // and the model finds every queue function's alias on a version with the old value.
    String text = Files.readString(SampleEvents.repoFile("template.yaml"));
    String stripped = text.replaceAll("(?m)^      VersionDescription: !Sub\\n(        .*\\n)+", "");
    assertThat(stripped).doesNotContain("VersionDescription");
    Path template = dir.resolve("template.yaml");
    Files.writeString(template, stripped);
    CfnTemplate translated = SamTranslation.translated(template, Map.of());
    Map<String, String> fiveSlots = new HashMap<>(FIRST_DEPLOY);
    fiveSlots.put("SharedSlots", "5");

    Deploy second = Deploy.of(translated, fiveSlots, Deploy.of(translated, FIRST_DEPLOY, null));

    assertThat(second.staleAliases())
        .hasSize(3)
        .allSatisfy(problem -> assertThat(problem).contains("BUILDQUEUE_SHARED_SLOTS"));
  }

  @Test
  void every_version_description_fits_lambdas_256_characters_with_the_longest_values_allowed() {
    CfnTemplate translated = SamTranslation.repositoryTemplate();
    Map<String, String> longest = new HashMap<>(FIRST_DEPLOY);
    longest.putAll(
        Map.of(
            "SharedSlots",
            "100",
            "WorkerLifetimeMinutes",
            "1375",
            "ChainWindowSeconds",
            "86400",
            "SharedOrder",
            "fifo",
            "MaxQueuedJobs",
            "1000000",
            "WorkerPublicIp",
            "false",
            "DefaultCapacity",
            "on-demand",
            "SubnetIds",
            String.join(",", java.util.Collections.nCopies(6, "subnet-0123456789abcdef0"))));
    Deploy deploy = Deploy.of(translated, longest, null);

    for (String version : translated.resourcesOfType("AWS::Lambda::Version")) {
      // The longest ids AWS gives: a five-digit revision, a 17-digit security group id.
      String description =
          String.valueOf(deploy.resolve(translated.properties(version).get("Description")))
              .replaceAll("rev \\d+", "rev 99999")
              .replaceAll("sg-stand-in\\d+", "sg-0123456789abcdef0");
      assertThat(description).as("%s's description", version).hasSizeLessThanOrEqualTo(256);
    }
    assertThat(String.valueOf(map(translated.parameters().get("SubnetIds")).get("Description")))
        .contains("six");
  }

  private CfnTemplate withCode(String jarName, String content) throws IOException {
    Path jar = dir.resolve(jarName);
    Files.writeString(jar, content);
    String text = Files.readString(SampleEvents.repoFile("template.yaml"));
    assertThat(text).contains("CodeUri: functions/aws/target/buildqueue-aws.jar");
    Path template = dir.resolve("template-" + jarName + ".yaml");
    Files.writeString(
        template,
        text.replace("CodeUri: functions/aws/target/buildqueue-aws.jar", "CodeUri: " + jar));
    return SamTranslation.translated(template, Map.of());
  }

  /**
   * One deploy of a translated template, played the way CloudFormation and Lambda play it: each
   * resource resolved, kept or replaced by its create-only properties, each new version a snapshot
   * of its function as it is then (or, as Lambda does, the latest version again if nothing
   * changed).
   */
  static final class Deploy {
    /**
     * Create-only properties of the resource types the template uses, from their CloudFormation
     * resource schemas (cfn-lint ships them: createOnlyProperties). A change to one replaces the
     * resource; a change to any other property updates it in place.
     */
    private static final Map<String, Set<String>> CREATE_ONLY =
        Map.ofEntries(
            Map.entry("AWS::ApiGatewayV2::Api", Set.of("ProtocolType")),
            Map.entry("AWS::ApiGatewayV2::Stage", Set.of("StageName", "ApiId")),
            Map.entry("AWS::EC2::SecurityGroup", Set.of("GroupDescription", "GroupName", "VpcId")),
            Map.entry("AWS::ECS::Cluster", Set.of("ClusterName")),
            Map.entry(
                "AWS::ECS::TaskDefinition",
                Set.of(
                    "Family",
                    "ContainerDefinitions",
                    "Cpu",
                    "EnableFaultInjection",
                    "ExecutionRoleArn",
                    "InferenceAccelerators",
                    "Memory",
                    "NetworkMode",
                    "PlacementConstraints",
                    "ProxyConfiguration",
                    "RequiresCompatibilities",
                    "RuntimePlatform",
                    "TaskRoleArn",
                    "Volumes",
                    "PidMode",
                    "IpcMode",
                    "EphemeralStorage")),
            Map.entry("AWS::Events::Rule", Set.of("Name")),
            Map.entry("AWS::IAM::Role", Set.of("Path", "RoleName")),
            Map.entry("AWS::Lambda::Alias", Set.of("Name", "FunctionName")),
            Map.entry("AWS::Lambda::EventInvokeConfig", Set.of("FunctionName", "Qualifier")),
            Map.entry(
                "AWS::Lambda::Function", Set.of("FunctionName", "PackageType", "TenancyConfig")),
            Map.entry(
                "AWS::Lambda::Permission",
                Set.of(
                    "FunctionName",
                    "FunctionUrlAuthType",
                    "InvokedViaFunctionUrl",
                    "SourceAccount",
                    "SourceArn",
                    "Principal",
                    "PrincipalOrgID",
                    "Action",
                    "EventSourceToken")),
            Map.entry(
                "AWS::Lambda::Version",
                Set.of(
                    "FunctionName",
                    "Description",
                    "CodeSha256",
                    "ProvisionedConcurrencyConfig",
                    "RuntimePolicy")),
            Map.entry("AWS::Logs::LogGroup", Set.of("LogGroupName")),
            Map.entry(
                "AWS::S3::Bucket", Set.of("BucketName", "BucketNamePrefix", "BucketNamespace")),
            Map.entry("AWS::S3::BucketPolicy", Set.of("Bucket")),
            Map.entry(
                "AWS::RDS::DBCluster",
                Set.of(
                    "AvailabilityZones",
                    "ClusterScalabilityType",
                    "DBClusterIdentifier",
                    "DBSubnetGroupName",
                    "DBSystemId",
                    "DatabaseName",
                    "EngineMode",
                    "KmsKeyId",
                    "PubliclyAccessible",
                    "RestoreToTime",
                    "RestoreType",
                    "SnapshotIdentifier",
                    "SourceDBClusterIdentifier",
                    "SourceDbClusterResourceId",
                    "SourceRegion",
                    "StorageEncrypted",
                    "UseLatestRestorableTime")),
            Map.entry(
                "AWS::RDS::DBInstance",
                Set.of(
                    "BackupTarget",
                    "CharacterSetName",
                    "CustomIAMInstanceProfile",
                    "DBClusterIdentifier",
                    "DBInstanceIdentifier",
                    "DBName",
                    "DBSubnetGroupName",
                    "DBSystemId",
                    "KmsKeyId",
                    "MasterUsername",
                    "NcharCharacterSetName",
                    "SourceRegion",
                    "StorageEncrypted",
                    "Timezone")),
            Map.entry("AWS::RDS::DBSubnetGroup", Set.of("DBSubnetGroupName")),
            Map.entry("AWS::SQS::Queue", Set.of("FifoQueue", "QueueName")),
            Map.entry("AWS::SQS::QueuePolicy", Set.of()),
            Map.entry("AWS::SecretsManager::RotationSchedule", Set.of("SecretId")),
            Map.entry("AWS::SecretsManager::Secret", Set.of("Name")),
            Map.entry("AWS::SecretsManager::SecretTargetAttachment", Set.of("SecretId")),
            Map.entry("Custom::SchemaMigration", Set.of("ServiceToken")));

    private final CfnTemplate template;
    private final Deploy previous;
    private final Map<String, Map<String, Object>> resolved = new HashMap<>();
    private final Map<String, String> physical = new HashMap<>();
    private final Set<String> replaced = new TreeSet<>();
    private final Set<String> resolving = new TreeSet<>();

    /**
     * Each function's published versions (version n at n - 1), as snapshots of its configuration.
     */
    private final Map<String, List<Map<String, Object>>> published = new HashMap<>();

    private final Map<String, Integer> versionNumber = new HashMap<>();
    private int revisions;
    private int generation;

    private Deploy(CfnTemplate template, Deploy previous) {
      this.template = template;
      this.previous = previous;
      if (previous != null) {
        previous.published.forEach((f, versions) -> published.put(f, new ArrayList<>(versions)));
        revisions = previous.revisions;
        generation = previous.generation;
      }
    }

    static Deploy of(CfnTemplate translated, Map<String, String> params, Deploy previous) {
      Deploy d = new Deploy(translated.withParameters(params), previous);
      d.template.resources().keySet().forEach(d::ensure);
      return d;
    }

    Object resolve(Object value) {
      return template.resolve(
          value,
          this::attribute,
          p -> {
            throw new AssertionError("no value for parameter " + p);
          });
    }

    /**
     * Aliases on a version whose configuration is not the function's current one, each with what
     * differs.
     */
    List<String> staleAliases() {
      List<String> problems = new ArrayList<>();
      for (String alias : template.resourcesOfType("AWS::Lambda::Alias")) {
        String function = functionOf(alias);
        Map<String, Object> live = published.get(function).get(aliasVersion(function) - 1);
        Map<String, Object> current = resolved.get(function);
        if (!live.equals(current)) {
          problems.add(
              alias
                  + " points at version "
                  + aliasVersion(function)
                  + " of "
                  + function
                  + ", whose configuration differs from the function's: "
                  + difference(live, current));
        }
      }
      return problems;
    }

    List<String> functionsWhoseConfigurationChanged() {
      return template.resourcesOfType("AWS::Lambda::Function").stream()
          .filter(
              f -> previous == null || !Objects.equals(previous.resolved.get(f), resolved.get(f)))
          .toList();
    }

    int aliasVersion(String function) {
      for (String alias : template.resourcesOfType("AWS::Lambda::Alias")) {
        if (functionOf(alias).equals(function)) {
          return Integer.parseInt(String.valueOf(resolved.get(alias).get("FunctionVersion")));
        }
      }
      throw new AssertionError(function + " has no alias");
    }

    private String functionOf(String aliasOrVersion) {
      return String.valueOf(
          map(template.properties(aliasOrVersion).get("FunctionName")).get("Ref"));
    }

    private void ensure(String id) {
      if (resolved.containsKey(id)) {
        return;
      }
      if (!resolving.add(id)) {
        throw new AssertionError("circular reference through " + id);
      }
      Map<String, Object> resource = template.resource(id);
      String type = String.valueOf(resource.get("Type"));
      Set<String> createOnly = CREATE_ONLY.get(type);
      if (createOnly == null) {
        throw new AssertionError(
            type
                + " is new in the template: add its create-only properties (its CloudFormation"
                + " resource schema's createOnlyProperties) to RedeployTest.Deploy.CREATE_ONLY");
      }
      Map<String, Object> props = map(resolve(resource.getOrDefault("Properties", Map.of())));
      Map<String, Object> before = previous == null ? null : previous.resolved.get(id);
      boolean replace =
          before == null
              || createOnly.stream().anyMatch(p -> !Objects.equals(before.get(p), props.get(p)));
      resolved.put(id, props);
      if (!replace) {
        physical.put(id, previous.physical.get(id));
        if (previous.versionNumber.containsKey(id)) {
          versionNumber.put(id, previous.versionNumber.get(id));
        }
      } else {
        replaced.add(id);
        physical.put(
            id,
            switch (type) {
              case "AWS::ECS::TaskDefinition" ->
                  "arn:aws:ecs:eu-west-1:111122223333:task-definition/"
                      + props.get("Family")
                      + ":"
                      + (++revisions);
              case "AWS::EC2::SecurityGroup" -> "sg-stand-in" + (++generation);
              case "AWS::Lambda::Version" -> publish(id);
              default -> id.toLowerCase(java.util.Locale.ROOT) + "-" + (++generation);
            });
      }
      resolving.remove(id);
    }

    /**
     * Lambda's PublishVersion: a snapshot of the function now, or its latest version if that is the
     * same.
     */
    private String publish(String version) {
      String function = functionOf(version);
      ensure(function);
      List<Map<String, Object>> versions =
          published.computeIfAbsent(function, f -> new ArrayList<>());
      Map<String, Object> now = resolved.get(function);
      if (versions.isEmpty() || !versions.get(versions.size() - 1).equals(now)) {
        versions.add(now);
      }
      versionNumber.put(version, versions.size());
      return physical.get(function) + ":" + versions.size();
    }

    private String attribute(String resource, String attribute) {
      if (attribute == null) {
        return switch (resource) {
          case "AWS::Region" -> "eu-west-1";
          case "AWS::Partition" -> "aws";
          case "AWS::AccountId" -> "111122223333";
          case "AWS::StackName" -> "buildqueue";
          case "AWS::URLSuffix" -> "amazonaws.com";
          default -> throw new AssertionError("no stand-in for " + resource);
        };
      }
      ensure(resource);
      if (attribute.equals("Version")) {
        return String.valueOf(versionNumber.get(resource));
      }
      String id = physical.get(resource);
      return attribute.equals("Ref") || attribute.startsWith("Ref.") ? id : id + "#" + attribute;
    }

    private static String difference(Map<String, Object> live, Map<String, Object> current) {
      List<String> out = new ArrayList<>();
      Set<String> keys = new TreeSet<>(live.keySet());
      keys.addAll(current.keySet());
      for (String k : keys) {
        Object a = live.get(k);
        Object b = current.get(k);
        if (Objects.equals(a, b)) {
          continue;
        }
        if (a instanceof Map<?, ?> ma && b instanceof Map<?, ?> mb) {
          out.add(k + ": " + difference(map(ma), map(mb)));
        } else {
          out.add(k + " " + a + " -> " + b);
        }
      }
      return String.join("; ", out);
    }
  }
}
