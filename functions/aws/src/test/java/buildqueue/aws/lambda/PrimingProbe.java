package buildqueue.aws.lambda;

/**
 * Run in a fresh JVM by {@link PrimingTest}: builds the five handlers as Lambda does (which
 * registers their priming), then plays a snapshot's checkpoint and restore, and prints what was
 * registered. The environment points every AWS endpoint at a socket that counts connections.
 */
public final class PrimingProbe {
  private PrimingProbe() {}

  public static void main(String[] args) {
    new EnqueueFunction();
    new TickFunction();
    new TaskStateChangeFunction();
    new MigrateFunction();
    new WebhookDeliveryFunction();
    Priming.checkpointAndRestore();
    System.out.println("PRIMED " + String.join(",", Priming.registered()));
    System.out.flush();
    System.exit(0);
  }
}
