package buildqueue.core;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;

/**
 * What jobs were billed (docs/architecture.md §4.8): a job's shares of the workers that ran it, or
 * a user's in a period, summed by capacity, with the money at the operator's prices.
 *
 * @param billedMs worker time billed, in milliseconds (the jobs' shares add up to the workers')
 * @param vcpuSeconds vCPU-seconds: billed seconds × the workers' vCPU
 * @param gbSeconds GB-seconds: billed seconds × the workers' memory in GiB (Fargate's GB)
 * @param capacity {@code on-demand}, {@code spot}, or {@code mixed} when both ran it
 * @param dollars at the prices of each capacity, to 6 decimal places
 */
public record Cost(
    long billedMs,
    BigDecimal vcpuSeconds,
    BigDecimal gbSeconds,
    String capacity,
    BigDecimal dollars) {

  /**
   * One capacity's sums, as the database adds them up.
   *
   * @param vcpuMilliMs billed milliseconds × thousandths of a vCPU
   * @param mibMs billed milliseconds × MiB
   */
  public record Line(String capacity, long billedMs, long vcpuMilliMs, long mibMs) {}

  /**
   * The SQL that sums {@code build_job_cost} rows {@code c} matching {@code where} into lines, as
   * text {@link #parse} reads: one expression, so a read adds no statement.
   */
  static String linesSql(String where) {
    return """
        (select string_agg(s.capacity || ':' || s.billed || ':' || s.vcpu || ':' || s.mib, ',' order by s.capacity)
         from (select c.capacity, sum(c.billed_ms)::bigint as billed, sum(c.billed_ms * c.vcpu_milli)::bigint as vcpu,
                      sum(c.billed_ms * c.memory_mb)::bigint as mib
               from build_job_cost c where %s group by c.capacity) s)"""
        .formatted(where);
  }

  /** The lines {@link #linesSql} wrote; empty for null (nothing billed yet). */
  public static List<Line> parse(String text) {
    List<Line> lines = new ArrayList<>();
    if (text == null || text.isEmpty()) {
      return lines;
    }
    for (String part : text.split(",")) {
      String[] f = part.split(":");
      lines.add(new Line(f[0], Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3])));
    }
    return lines;
  }

  private static final BigDecimal MILLION = BigDecimal.valueOf(1_000_000);
  private static final BigDecimal MIB_MS_PER_GB_SECOND = BigDecimal.valueOf(1024L * 1000);

  /** The lines summed and priced; null when there are none (not billed yet). */
  public static Cost of(List<Line> lines, Ledger ledger) {
    if (lines.isEmpty()) {
      return null;
    }
    long billed = 0;
    BigDecimal vcpu = BigDecimal.ZERO;
    BigDecimal gb = BigDecimal.ZERO;
    BigDecimal dollars = BigDecimal.ZERO;
    String capacity = null;
    for (Line l : lines) {
      BigDecimal v = BigDecimal.valueOf(l.vcpuMilliMs()).divide(MILLION, 3, RoundingMode.HALF_EVEN);
      BigDecimal g =
          BigDecimal.valueOf(l.mibMs()).divide(MIB_MS_PER_GB_SECOND, 3, RoundingMode.HALF_EVEN);
      billed += l.billedMs();
      vcpu = vcpu.add(v);
      gb = gb.add(g);
      dollars = dollars.add(ledger.prices(l.capacity()).cost(v, g));
      capacity = capacity == null || capacity.equals(l.capacity()) ? l.capacity() : "mixed";
    }
    return new Cost(billed, vcpu, gb, capacity, dollars);
  }
}
