package buildqueue.local;

/**
 * A stand-in worker process that does not stop on SIGTERM: its shutdown hook never returns, as a
 * worker's would if it hung. Only SIGKILL (or 2 minutes) ends it.
 */
public final class StubbornWorker {
  static final String READY = "stubborn: hook installed";

  private StubbornWorker() {}

  public static void main(String[] args) throws InterruptedException {
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    Thread.sleep(120_000);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                }));
    System.out.println(READY);
    Thread.sleep(120_000);
  }
}
