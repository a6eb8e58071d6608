package buildqueue.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A seed is a scenario: running it again, on another database, gives the same event log. */
class ReplayTest {

  @Test
  void the_same_seed_replays_the_same_event_log() {
    int seeds = Integer.getInteger("faults.replaySeeds", 40);
    long base = Long.getLong("faults.replayBase", 77_000);
    List<String> differences = new ArrayList<>();
    try (Lane first = new Lane();
        Lane second = new Lane()) {
      for (int i = 0; i < seeds; i++) {
        Simulation.Options options = Simulation.Options.of(base + i);
        Simulation.Outcome a = Simulation.run(first, options);
        Simulation.Outcome b = Simulation.run(second, options);
        if (!a.log().equals(b.log())) {
          differences.add(firstDifference(base + i, a.log(), b.log()));
        }
        assertThat(a.violation()).as(a::report).isNull();
      }
    }
    assertThat(differences).isEmpty();
  }

  private static String firstDifference(long seed, List<String> a, List<String> b) {
    for (int i = 0; i < Math.max(a.size(), b.size()); i++) {
      String x = i < a.size() ? a.get(i) : "<end>";
      String y = i < b.size() ? b.get(i) : "<end>";
      if (!x.equals(y)) {
        return "seed "
            + seed
            + " line "
            + i
            + ":\n  "
            + x
            + "\n  "
            + y
            + "\ncontext:\n  "
            + String.join("\n  ", a.subList(Math.max(0, i - 8), Math.min(a.size(), i + 3)));
      }
    }
    return "seed " + seed + ": logs differ";
  }
}
