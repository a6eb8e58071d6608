package buildqueue.core;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The time transitions pass as {@code :now}. In production it is null: statements fall back to the
 * database's {@code now()}, the one clock every Lambda and worker agrees on. Tests and simulations
 * pin it and move it, so leases expire on demand.
 */
public interface QueueClock {

  /** The time to use, or null for the database's clock. */
  Instant now();

  QueueClock DATABASE = () -> null;

  /** A clock that stands still until moved. */
  final class Settable implements QueueClock {
    private final AtomicReference<Instant> now;

    public Settable(Instant start) {
      this.now = new AtomicReference<>(start);
    }

    @Override
    public Instant now() {
      return now.get();
    }

    public void advance(Duration d) {
      now.updateAndGet(t -> t.plus(d));
    }

    public void set(Instant t) {
      now.set(t);
    }
  }
}
