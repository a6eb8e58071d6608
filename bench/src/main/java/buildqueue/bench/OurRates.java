package buildqueue.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * Figure 3's rows of ours alone, run by hand to compare two builds of the queue on one machine in
 * one sitting: a full run's rows are hard to compare across days, because the machine's fsync and
 * neighbours move them more than most changes do. Uses only {@link OurThroughput#run}, whose
 * signature older builds share, so this file compiles against an older build's benchmark jar too:
 *
 * <pre>
 * java -cp bench/target/buildqueue-bench.jar buildqueue.bench.OurRates [runs [users ...]]
 * javac -cp OLD/bench/target/buildqueue-bench.jar -d /tmp/old bench/src/main/java/buildqueue/bench/OurRates.java
 * java -cp OLD/bench/target/buildqueue-bench.jar:/tmp/old buildqueue.bench.OurRates
 * </pre>
 *
 * Prints each load's rates in jobs/s (default 3 runs each of 1, 10 and 100 users, 2,000 jobs in
 * all, as figure 3); run the two builds in turn, more than once, and compare the medians.
 */
public final class OurRates {
  private static final int TOTAL = 2000;
  private static final int POOL = 20;

  private OurRates() {}

  public static void main(String[] args) {
    int runs = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    List<Integer> loads = new ArrayList<>();
    for (int i = 1; i < args.length; i++) {
      loads.add(Integer.parseInt(args[i]));
    }
    if (loads.isEmpty()) {
      loads = List.of(1, 10, 100);
    }
    try (BenchPostgres pg = BenchPostgres.start()) {
      OurThroughput ours = new OurThroughput(pg, POOL);
      for (int users : loads) {
        List<String> rates = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
          rates.add(String.format("%.0f", ours.run(users, TOTAL / users).jobsPerSecond()));
        }
        System.out.println(
            users + " user(s) × " + TOTAL / users + ": " + String.join(", ", rates) + " jobs/s");
      }
    }
  }
}
