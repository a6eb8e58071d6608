package buildqueue.bench;

import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Checks that a peer's hand-made chain held: each user's jobs ran in order, each after the one
 * before it. A peer that broke it would be measured doing less than the load asks, so its run
 * fails.
 */
final class SerialCheck {
  private final AtomicIntegerArray next;
  private final AtomicReference<String> broken = new AtomicReference<>();

  SerialCheck(int users) {
    next = new AtomicIntegerArray(users);
  }

  void ran(int user, int seq) {
    if (!next.compareAndSet(user, seq, seq + 1)) {
      broken.compareAndSet(
          null, "user " + user + " ran job " + seq + " when job " + next.get(user) + " was next");
    }
  }

  void verify() {
    if (broken.get() != null) {
      throw new IllegalStateException("a user's jobs ran out of order: " + broken.get());
    }
  }
}
