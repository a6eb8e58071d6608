package buildqueue.aws;

import static buildqueue.aws.AwsSettings.ASSIGN_PUBLIC_IP;
import static buildqueue.aws.AwsSettings.CHAIN_WINDOW_SECONDS;
import static buildqueue.aws.AwsSettings.CONTAINER_NAME;
import static buildqueue.aws.AwsSettings.ECS_CLUSTER;
import static buildqueue.aws.AwsSettings.MAX_QUEUED_JOBS;
import static buildqueue.aws.AwsSettings.SECURITY_GROUPS;
import static buildqueue.aws.AwsSettings.SHARED_ORDER;
import static buildqueue.aws.AwsSettings.SHARED_SLOTS;
import static buildqueue.aws.AwsSettings.SUBNETS;
import static buildqueue.aws.AwsSettings.TASK_DEFINITION;
import static buildqueue.aws.AwsSettings.WORKER_LIFETIME_MINUTES;

import buildqueue.BuildQueueException;
import buildqueue.aws.ecs.EcsSettings;
import buildqueue.core.Ledger;
import buildqueue.core.QueueConfig;
import buildqueue.worker.WorkerEnvironment;
import java.time.Duration;
import java.util.List;

/**
 * The queue functions' settings read from their variables: where workers launch (ECS) and how the
 * queue runs them ({@link QueueConfig}), each failure naming the variables it came from.
 */
final class QueueVariables {
  private QueueVariables() {}

  /** Where workers launch: the cluster, the task definition and the network. */
  static EcsSettings ecs(EnvironmentReader r) {
    String cluster = r.required(ECS_CLUSTER);
    String taskDefinition = r.required(TASK_DEFINITION);
    List<String> subnets = r.list(SUBNETS, true);
    List<String> securityGroups = r.list(SECURITY_GROUPS, false);
    boolean publicIp = r.bool(ASSIGN_PUBLIC_IP, false);
    String container = r.or(CONTAINER_NAME, "worker");
    try {
      return new EcsSettings(cluster, taskDefinition, subnets, securityGroups, publicIp, container);
    } catch (BuildQueueException e) {
      throw new BuildQueueException(
          e.getMessage()
              + " (from "
              + ECS_CLUSTER
              + ", "
              + TASK_DEFINITION
              + ", "
              + SUBNETS
              + ", "
              + SECURITY_GROUPS
              + ", "
              + CONTAINER_NAME
              + ")",
          e);
    }
  }

  /** How the queue runs: shared slots, worker lifetime, chain window, shared order, quota. */
  static QueueConfig queueConfig(EnvironmentReader r) {
    QueueConfig defaults = QueueConfig.defaults();
    int sharedSlots = (int) r.positiveLong(SHARED_SLOTS, defaults.sharedSlots());
    Duration lifetime =
        Duration.ofMinutes(
            r.positiveLong(WORKER_LIFETIME_MINUTES, defaults.workerLifetime().toMinutes()));
    Duration chainWindow =
        Duration.ofSeconds(
            r.nonNegativeLong(CHAIN_WINDOW_SECONDS, defaults.chainWindow().toSeconds()));
    QueueConfig.SharedOrder order =
        WorkerEnvironment.sharedOrder(r.optional(SHARED_ORDER).orElse(null), SHARED_ORDER);
    long maxQueued = r.positiveLong(MAX_QUEUED_JOBS, defaults.maxQueuedJobs());
    if (maxQueued > 1_000_000) {
      throw new BuildQueueException(
          MAX_QUEUED_JOBS + " must be from 1 to 1000000, was " + maxQueued);
    }
    QueueConfig config;
    try {
      config =
          defaults
              .withSharedSlots(sharedSlots)
              .withLease(lifetime, defaults.leaseSlack(), defaults.deadlineMargin())
              .withChainWindow(chainWindow)
              .withSharedOrder(order)
              .withMaxQueuedJobs((int) maxQueued)
              .toBuilder()
              .ledger(ledger(r, defaults.ledger()))
              .build();
    } catch (BuildQueueException e) {
      throw new BuildQueueException(
          "the queue settings ("
              + SHARED_SLOTS
              + ", "
              + WORKER_LIFETIME_MINUTES
              + ", "
              + CHAIN_WINDOW_SECONDS
              + ") do not fit together: "
              + e.getMessage(),
          e);
    }
    return withinTokenLifetime(config);
  }

  /**
   * The ledger's settings: the worker's size as the template gives its task definition, Fargate's
   * billing, prices and the default budget (docs/architecture.md §4.8).
   */
  static Ledger ledger(EnvironmentReader r, Ledger defaults) {
    long cpuUnits = r.positiveLong(AwsSettings.WORKER_CPU, defaults.vcpuMilli() * 1024L / 1000);
    long memory = r.positiveLong(AwsSettings.WORKER_MEMORY, defaults.memoryMb());
    if (cpuUnits > 16384 || memory > 122880) {
      throw new BuildQueueException(
          AwsSettings.WORKER_CPU
              + " and "
              + AwsSettings.WORKER_MEMORY
              + " must be a Fargate size (at most 16384 units and 122880 MiB), were "
              + cpuUnits
              + " and "
              + memory);
    }
    Long budget =
        r.optional(AwsSettings.BUDGET_VCPU_SECONDS)
            .map(v -> r.nonNegativeLong(AwsSettings.BUDGET_VCPU_SECONDS, 0))
            .orElse(defaults.defaultBudgetVcpuSeconds());
    return defaults
        .withWorkerSize((int) (cpuUnits * 1000 / 1024), (int) memory)
        .withPrices(
            r.optional(AwsSettings.PRICES_ON_DEMAND)
                .map(Ledger.Prices::parse)
                .orElse(defaults.onDemand()),
            r.optional(AwsSettings.PRICES_SPOT).map(Ledger.Prices::parse).orElse(defaults.spot()))
        .withBudget(budget, r.optional(AwsSettings.BUDGET_PERIOD).orElse(defaults.budgetPeriod()));
  }

  private static QueueConfig withinTokenLifetime(QueueConfig config) {
    if (config.lease().compareTo(AwsSettings.MAX_LEASE) > 0) {
      throw new BuildQueueException(
          WORKER_LIFETIME_MINUTES
              + " is "
              + config.workerLifetime().toMinutes()
              + ": with the lease's "
              + config.leaseSlack().toMinutes()
              + " minutes of slack a worker's lease may be at most "
              + AwsSettings.MAX_LEASE.toHours()
              + " hours ("
              + AwsSettings.MAX_LEASE.minus(config.leaseSlack()).toMinutes()
              + " minutes of lifetime), or a relaunch could outlive ECS's 24-hour client token and start a second task");
    }
    return config;
  }
}
