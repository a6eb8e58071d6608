package buildqueue.local;

/**
 * A stand-in worker process for platform tests: it only lives until it is killed (or 2 minutes).
 */
public final class Sleeper {
  private Sleeper() {}

  public static void main(String[] args) throws InterruptedException {
    Thread.sleep(120_000);
  }
}
