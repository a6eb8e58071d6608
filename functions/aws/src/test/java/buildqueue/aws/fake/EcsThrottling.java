package buildqueue.aws.fake;

import buildqueue.aws.fake.FakeEcs.Operation;
import buildqueue.platform.CallRates;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * ECS's request rates for one account and Region, as token buckets on the fake's clock. Each
 * request takes a token from its action's bucket; an empty bucket answers {@code
 * ThrottlingException} "Rate exceeded" (HTTP 400) and the request does nothing. A bucket refills
 * continuously at its sustained rate up to its burst size.
 *
 * <p>The rates, from the Amazon ECS API Reference, "Request throttling for the Amazon ECS API" (per
 * account, per Region), and the Amazon ECS Developer Guide, "AWS Fargate throttling quotas":
 *
 * <ul>
 *   <li>Cluster resource modify actions ({@code RunTask}, {@code StartTask}, {@code StopTask}, …):
 *       burst 100, sustained 40 a second, one bucket for all of them.
 *   <li>Cluster resource read actions ({@code DescribeTasks}, {@code ListTasks}, …): burst 100,
 *       sustained 20 a second.
 *   <li>Fargate additionally throttles {@code RunTask} calls: 20 a second, "burst and sustained".
 *   <li>Fargate task launches (each task a call starts, up to 10 a call): burst 100, sustained 20 a
 *       second (the On-Demand resource rate quota).
 * </ul>
 *
 * What AWS does not document, and the fake chooses: that refill is continuous rather than once a
 * second; that an exhausted Fargate launch bucket answers {@code ThrottlingException} like the
 * request buckets (rather than a {@code failures[]} entry); that a RunTask repeated with a known
 * client token launches nothing and so takes no launch token. Quotas can be raised per account;
 * these are the defaults.
 */
final class EcsThrottling {
  static final Bucket.Rate CLUSTER_RESOURCE_MODIFY = new Bucket.Rate(100, 40);
  static final Bucket.Rate CLUSTER_RESOURCE_READ = new Bucket.Rate(100, 20);
  static final Bucket.Rate FARGATE_RUN_TASK = new Bucket.Rate(20, 20);
  static final Bucket.Rate FARGATE_LAUNCHES = new Bucket.Rate(100, 20);

  /**
   * The rates a client that starts one Fargate task a call must keep to never be throttled here:
   * for RunTask and StopTask the tightest of the buckets a RunTask takes from, for DescribeTasks
   * the read bucket.
   */
  static CallRates paced() {
    List<Bucket.Rate> changes =
        List.of(CLUSTER_RESOURCE_MODIFY, FARGATE_RUN_TASK, FARGATE_LAUNCHES);
    return new CallRates(
        new CallRates.Rate(
            changes.stream().mapToInt(Bucket.Rate::burst).min().orElseThrow(),
            changes.stream().mapToInt(Bucket.Rate::perSecond).min().orElseThrow()),
        new CallRates.Rate(CLUSTER_RESOURCE_READ.burst(), CLUSTER_RESOURCE_READ.perSecond()));
  }

  private final Bucket modify = new Bucket(CLUSTER_RESOURCE_MODIFY);
  private final Bucket read = new Bucket(CLUSTER_RESOURCE_READ);
  private final Bucket fargateRunTask = new Bucket(FARGATE_RUN_TASK);
  private final Bucket fargateLaunches = new Bucket(FARGATE_LAUNCHES);

  /** Takes the request's tokens, or none and answers false when one of its buckets is empty. */
  synchronized boolean admit(Operation op, JsonNode body, Instant now) {
    switch (op) {
      case RUN_TASK:
        if (isFargate(body)) {
          return takeBoth(modify, fargateRunTask, now);
        }
        return modify.take(1, now);
      case STOP_TASK:
        return modify.take(1, now);
      case DESCRIBE_TASKS:
        return read.take(1, now);
      default:
        return true;
    }
  }

  /** Takes one launch token per task a RunTask is about to start. */
  synchronized boolean launch(int tasks, Instant now) {
    return fargateLaunches.take(tasks, now);
  }

  private static boolean takeBoth(Bucket a, Bucket b, Instant now) {
    if (a.available(now) < 1 || b.available(now) < 1) {
      return false;
    }
    return a.take(1, now) && b.take(1, now);
  }

  private static boolean isFargate(JsonNode body) {
    String launchType = body.path("launchType").asText("");
    return launchType.isEmpty() || "FARGATE".equals(launchType);
  }

  /** One token bucket; time only moves forward for it, whatever the clock does. */
  static final class Bucket {
    record Rate(int burst, int perSecond) {}

    private final Rate rate;
    private double tokens;
    private Instant last;

    Bucket(Rate rate) {
      this.rate = rate;
      this.tokens = rate.burst();
    }

    double available(Instant now) {
      refill(now);
      return tokens;
    }

    boolean take(int n, Instant now) {
      refill(now);
      if (tokens < n) {
        return false;
      }
      tokens -= n;
      return true;
    }

    private void refill(Instant now) {
      if (last != null && now.isAfter(last)) {
        double seconds = Duration.between(last, now).toNanos() / 1e9;
        tokens = Math.min(rate.burst(), tokens + seconds * rate.perSecond());
      }
      if (last == null || now.isAfter(last)) {
        last = now;
      }
    }
  }
}
