package buildqueue.core;

import buildqueue.BuildQueueException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;

/**
 * How workers are billed and priced, and the budget every user has unless an admin set their own
 * (docs/architecture.md §4.8).
 *
 * @param vcpuMilli a worker's vCPU in thousandths (default 1,000: the template's {@code WorkerCpu}
 *     1024 units)
 * @param memoryMb a worker's memory in MiB (default 2,048: the template's {@code WorkerMemory})
 * @param billingStep a worker's billed time is rounded up to this (default 1 s: Fargate bills per
 *     second; locally 1 ms, the child's wall time)
 * @param billingMinimum a worker is billed at least this (default 60 s: Fargate's minimum; locally
 *     0)
 * @param onDemand prices of an on-demand worker (default: Fargate, us-east-1, Linux/x86)
 * @param spot prices of a Spot worker (default: a published Fargate Spot price; Spot prices change)
 * @param defaultBudgetVcpuSeconds the budget of a user without their own, in vCPU-seconds per
 *     period; null: none
 * @param budgetPeriod {@code month} (default), {@code week} or {@code day}, UTC
 */
public record Ledger(
    int vcpuMilli,
    int memoryMb,
    Duration billingStep,
    Duration billingMinimum,
    Prices onDemand,
    Prices spot,
    Long defaultBudgetVcpuSeconds,
    String budgetPeriod) {

  /**
   * Prices in US dollars per vCPU-hour and per GB-hour.
   *
   * @param perVcpuHour dollars per vCPU-hour
   * @param perGbHour dollars per GB-hour (Fargate's GB is 1,024 MiB)
   */
  public record Prices(BigDecimal perVcpuHour, BigDecimal perGbHour) {
    public Prices {
      if (perVcpuHour == null
          || perGbHour == null
          || perVcpuHour.signum() < 0
          || perGbHour.signum() < 0) {
        throw new BuildQueueException(
            "prices must be zero or more, were " + perVcpuHour + " and " + perGbHour);
      }
    }

    /** Parses {@code "0.04048,0.004445"}: per vCPU-hour, per GB-hour. */
    public static Prices parse(String text) {
      String[] parts = text == null ? new String[0] : text.split(",");
      try {
        if (parts.length == 2) {
          return new Prices(new BigDecimal(parts[0].trim()), new BigDecimal(parts[1].trim()));
        }
      } catch (NumberFormatException e) {
        // falls through to the message below
      }
      throw new BuildQueueException(
          "prices must be \"<dollars per vCPU-hour>,<dollars per GB-hour>\", e.g. \"0.04048,0.004445\", was "
              + text);
    }

    /** Dollars for vCPU-milliseconds and GiB-milliseconds, to 6 decimal places. */
    public BigDecimal cost(BigDecimal vcpuSeconds, BigDecimal gbSeconds) {
      BigDecimal hour = BigDecimal.valueOf(3600);
      return vcpuSeconds
          .multiply(perVcpuHour)
          .add(gbSeconds.multiply(perGbHour))
          .divide(hour, 6, RoundingMode.HALF_EVEN);
    }
  }

  /** Fargate on-demand, us-east-1, Linux/x86: $0.04048 per vCPU-hour, $0.004445 per GB-hour. */
  public static final Prices FARGATE_US_EAST_1 =
      new Prices(new BigDecimal("0.04048"), new BigDecimal("0.004445"));

  /** A published Fargate Spot price: $0.01334053 per vCPU-hour, $0.00146489 per GB-hour. */
  public static final Prices FARGATE_SPOT =
      new Prices(new BigDecimal("0.01334053"), new BigDecimal("0.00146489"));

  /** The budget periods, as PostgreSQL's {@code date_trunc} names them. */
  public static final Set<String> PERIODS = Set.of("month", "week", "day");

  /** Fargate's billing with the template's default worker (1 vCPU, 2 GiB), no budget. */
  public static Ledger fargate() {
    return new Ledger(
        1000,
        2048,
        Duration.ofSeconds(1),
        Duration.ofSeconds(60),
        FARGATE_US_EAST_1,
        FARGATE_SPOT,
        null,
        "month");
  }

  /** Local workers: the child's wall time to the millisecond, no minimum. */
  public Ledger wallTime() {
    return with(vcpuMilli, memoryMb, Duration.ofMillis(1), Duration.ZERO, onDemand, spot);
  }

  public Ledger withWorkerSize(int vcpuMilli, int memoryMb) {
    return with(vcpuMilli, memoryMb, billingStep, billingMinimum, onDemand, spot);
  }

  public Ledger withPrices(Prices onDemand, Prices spot) {
    return with(vcpuMilli, memoryMb, billingStep, billingMinimum, onDemand, spot);
  }

  public Ledger withBudget(Long vcpuSeconds, String period) {
    return new Ledger(
        vcpuMilli, memoryMb, billingStep, billingMinimum, onDemand, spot, vcpuSeconds, period);
  }

  /** These billing settings and prices, with this budget. */
  private Ledger with(
      int vcpuMilli, int memoryMb, Duration step, Duration minimum, Prices onDemand, Prices spot) {
    return new Ledger(
        vcpuMilli, memoryMb, step, minimum, onDemand, spot, defaultBudgetVcpuSeconds, budgetPeriod);
  }

  /** The prices of a worker of {@code capacity} ({@code spot}, else on-demand). */
  public Prices prices(String capacity) {
    return "spot".equals(capacity) ? spot : onDemand;
  }

  public Ledger {
    if (vcpuMilli < 1 || memoryMb < 1) {
      throw new BuildQueueException(
          "a worker's vCPU and memory must be positive, were " + vcpuMilli + " and " + memoryMb);
    }
    if (billingStep == null || billingStep.toMillis() < 1) {
      throw new BuildQueueException("billingStep must be at least 1 ms, was " + billingStep);
    }
    if (billingMinimum == null || billingMinimum.isNegative()) {
      throw new BuildQueueException("billingMinimum must not be negative, was " + billingMinimum);
    }
    if (onDemand == null || spot == null) {
      throw new BuildQueueException("prices must be set for on-demand and Spot");
    }
    if (defaultBudgetVcpuSeconds != null && defaultBudgetVcpuSeconds < 0) {
      throw new BuildQueueException(
          "the default budget must be zero or more vCPU-seconds, was " + defaultBudgetVcpuSeconds);
    }
    budgetPeriod = budgetPeriod == null ? "month" : budgetPeriod.toLowerCase(Locale.ROOT);
    if (!PERIODS.contains(budgetPeriod)) {
      throw new BuildQueueException("budgetPeriod must be month, week or day, was " + budgetPeriod);
    }
  }
}
