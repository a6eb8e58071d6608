package buildqueue.bench;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/** Samples of one measure, with the order statistics the report prints. */
final class Stats {
  private final List<Double> sorted;

  Stats(Collection<? extends Number> samples) {
    List<Double> values = new ArrayList<>();
    for (Number n : samples) {
      values.add(n.doubleValue());
    }
    if (values.isEmpty()) {
      throw new IllegalArgumentException("no samples");
    }
    Collections.sort(values);
    this.sorted = values;
  }

  int count() {
    return sorted.size();
  }

  double min() {
    return sorted.get(0);
  }

  double max() {
    return sorted.get(sorted.size() - 1);
  }

  double median() {
    return percentile(50);
  }

  /** Linear interpolation between closest ranks. */
  double percentile(double p) {
    double rank = p / 100.0 * (sorted.size() - 1);
    int lo = (int) Math.floor(rank);
    int hi = (int) Math.ceil(rank);
    return sorted.get(lo) + (sorted.get(hi) - sorted.get(lo)) * (rank - lo);
  }
}
