package buildqueue.testing;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Waits for a condition by polling it; fails with the description when it never holds. */
public final class Await {
  private Await() {}

  public static void until(String what, Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    long pause = 1;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out after " + timeout + " waiting for: " + what);
      }
      try {
        Thread.sleep(pause);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted waiting for: " + what);
      }
      pause = Math.min(pause * 2, 20);
    }
  }

  public static void until(String what, BooleanSupplier condition) {
    until(what, Duration.ofSeconds(30), condition);
  }
}
