package buildqueue.aws.ecs;

import buildqueue.BuildQueueException;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Where and how workers run on ECS/Fargate, immutable and validated on construction: a bad value
 * fails at start-up with a message naming the field, not at the first launch.
 *
 * @param cluster the cluster's short name or ARN; RunTask, DescribeTasks and StopTask all address
 *     it, and only tasks of this cluster are checked ({@link #ownsTask(String)})
 * @param taskDefinition {@code family}, {@code family:revision} or the task definition ARN, passed
 *     to RunTask as given. A bare family (what the SAM template gives) runs its latest ACTIVE
 *     revision, so a deploy that registers a new revision and deregisters the old one never leaves
 *     the functions naming a revision ECS refuses. It carries the image, roles and the database
 *     settings: nothing secret goes into RunTask overrides, which events and DescribeTasks show
 * @param subnets 1 to 16 subnets for the task's network interface; several AZs make a capacity
 *     shortage less likely
 * @param securityGroups up to 5 security groups; empty uses the VPC's default group
 * @param assignPublicIp whether the task gets a public IP (needed in public subnets without a NAT
 *     to pull the image and reach AWS APIs)
 * @param containerName the worker container in the task definition, which receives the worker id
 *     and token as environment overrides
 */
public record EcsSettings(
    String cluster,
    String taskDefinition,
    List<String> subnets,
    List<String> securityGroups,
    boolean assignPublicIp,
    String containerName) {

  private static final int MAX_SUBNETS = 16;
  private static final int MAX_SECURITY_GROUPS = 5;
  private static final Pattern CLUSTER_NAME = Pattern.compile("[A-Za-z0-9_-]{1,255}");

  /**
   * ECS's rule for a family: up to 255 letters, digits, hyphens and underscores; a revision from 1.
   */
  private static final Pattern TASK_DEFINITION =
      Pattern.compile(
          "(arn:[a-z0-9-]+:ecs:[a-z0-9-]+:\\d{12}:task-definition/)?[A-Za-z0-9_-]{1,255}(:[1-9]\\d{0,9})?");

  private static final Pattern CLUSTER_ARN =
      Pattern.compile("arn:[a-z0-9-]+:ecs:[a-z0-9-]+:\\d{12}:cluster/([A-Za-z0-9_-]{1,255})");

  public EcsSettings {
    if (blank(cluster)) {
      throw invalid("cluster", "is required (the cluster's name or ARN)");
    }
    if (!CLUSTER_NAME.matcher(cluster).matches() && !CLUSTER_ARN.matcher(cluster).matches()) {
      throw invalid(
          "cluster",
          "must be a cluster name (letters, digits, - and _) or a cluster ARN, was '"
              + cluster
              + "'");
    }
    if (blank(taskDefinition)) {
      throw invalid("taskDefinition", "is required (family, family:revision or ARN)");
    }
    if (!TASK_DEFINITION.matcher(taskDefinition).matches()) {
      throw invalid(
          "taskDefinition",
          "must be a family (letters, digits, - and _), family:revision or a task"
              + " definition ARN, was '"
              + taskDefinition
              + "'");
    }
    subnets = copyOf("subnets", subnets);
    if (subnets.isEmpty() || subnets.size() > MAX_SUBNETS) {
      throw invalid("subnets", "must name 1 to " + MAX_SUBNETS + " subnets, was " + subnets.size());
    }
    securityGroups = copyOf("securityGroups", securityGroups);
    if (securityGroups.size() > MAX_SECURITY_GROUPS) {
      throw invalid(
          "securityGroups",
          "may name at most "
              + MAX_SECURITY_GROUPS
              + " security groups, was "
              + securityGroups.size());
    }
    if (blank(containerName)) {
      throw invalid("containerName", "is required (the worker container in the task definition)");
    }
  }

  /** The cluster's short name, whether it was configured by name or by ARN. */
  public String clusterName() {
    var arn = CLUSTER_ARN.matcher(cluster);
    return arn.matches() ? arn.group(1) : cluster;
  }

  /**
   * Whether a task ARN belongs to this cluster, so that DescribeTasks on this cluster can give
   * evidence for it. Old-format task ARNs (without the cluster name) and bare task ids are not
   * recognised: they never come from our RunTask calls.
   */
  public boolean ownsTask(String taskArn) {
    if (taskArn == null) {
      return false;
    }
    var configuredArn = CLUSTER_ARN.matcher(cluster);
    if (configuredArn.matches()) {
      return taskArn.startsWith(cluster.replace(":cluster/", ":task/") + "/");
    }
    String[] parts = taskArn.split(":", 6);
    return parts.length == 6
        && parts[0].equals("arn")
        && parts[2].equals("ecs")
        && parts[5].startsWith("task/" + cluster + "/")
        && parts[5].length() > ("task/" + cluster + "/").length();
  }

  private static List<String> copyOf(String field, List<String> values) {
    if (values == null) {
      throw invalid(field, "is required (use an empty list for none)");
    }
    for (int i = 0; i < values.size(); i++) {
      if (blank(values.get(i))) {
        throw invalid(field, "has a blank entry at position " + (i + 1));
      }
    }
    return List.copyOf(values);
  }

  private static boolean blank(String s) {
    return s == null || s.isBlank();
  }

  private static BuildQueueException invalid(String field, String problem) {
    return new BuildQueueException("ECS settings: " + field + " " + problem);
  }
}
