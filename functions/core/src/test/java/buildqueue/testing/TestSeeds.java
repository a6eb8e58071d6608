package buildqueue.testing;

/**
 * The seeds and sizes of the seeded and soak suites. The default run is reproducible and short:
 * each seeded suite runs its own fixed seed, each soak a smaller size that keeps its coverage. Two
 * flags widen it:
 *
 * <ul>
 *   <li>{@code -Dbuildqueue.seed=random}: every seeded suite draws a new seed from the clock (to
 *       look for failures no fixed seed shows); {@code -Dbuildqueue.seed=S} runs them all on {@code
 *       S};
 *   <li>{@code -Dbuildqueue.soak=true}: the soak and scale suites run at full size.
 * </ul>
 *
 * A suite's own property ({@code -Dfuzz.seed=S}, {@code -Dfaults.baseSeed=B}) still wins, to replay
 * one run. Every seeded suite prints the seed it ran with and how to replay it.
 */
public final class TestSeeds {
  /** {@code random}, or a number for every seeded suite. */
  public static final String SEED = "buildqueue.seed";

  /** {@code true}: soaks at full size. */
  public static final String SOAK = "buildqueue.soak";

  private TestSeeds() {}

  /**
   * The seed {@code suite} runs with, printed: {@code -Dproperty} if given, else {@code
   * -Dbuildqueue.seed}, else {@code fixed}. A random seed is a multiple of 1000, so a batch of
   * scenarios seeded {@code B, B + 1, …} does not run into the next one's.
   */
  public static long seed(String suite, String property, long fixed) {
    Long own = Long.getLong(property);
    String all = System.getProperty(SEED, "").strip();
    long seed;
    String how;
    if (own != null) {
      seed = own;
      how = "from -D" + property;
    } else if (all.equals("random")) {
      seed = System.currentTimeMillis() % 1_000_000_000L * 1000;
      how = "random (-D" + SEED + "=random)";
    } else if (!all.isEmpty()) {
      seed = number(all);
      how = "from -D" + SEED;
    } else {
      seed = fixed;
      how = "fixed; -D" + SEED + "=random draws one";
    }
    System.out.println(
        suite + ": seed " + seed + " (" + how + "; replay with -D" + property + "=" + seed + ")");
    return seed;
  }

  private static long number(String value) {
    try {
      return Long.parseLong(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "-D" + SEED + " is \"random\" or a number, not \"" + value + "\"", e);
    }
  }

  /** Whether the soaks run at full size ({@code -Dbuildqueue.soak=true}). */
  public static boolean soak() {
    return Boolean.getBoolean(SOAK);
  }

  /**
   * A soak's size: {@code -Dproperty} if given, {@code full} under {@code -Dbuildqueue.soak=true},
   * else {@code quick}; printed with the suite's name.
   */
  public static int size(String suite, String property, int quick, int full) {
    Integer own = Integer.getInteger(property);
    int size = own != null ? own : soak() ? full : quick;
    String how =
        own != null
            ? "from -D" + property
            : soak() ? "soak" : "quick; -D" + SOAK + "=true runs " + full;
    System.out.println(suite + ": size " + size + " (" + how + ")");
    return size;
  }
}
