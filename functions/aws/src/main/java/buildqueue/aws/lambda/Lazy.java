package buildqueue.aws.lambda;

import java.util.function.Supplier;

/**
 * A value built on first use and then kept for the life of the container. Lambda handlers keep
 * their heavy clients here rather than in static initialisers: under SnapStart whatever init builds
 * is frozen into a snapshot shared by many environments, and a client built after restore has its
 * own connections and fresh credentials. A failed build is not kept: the next invocation retries.
 */
public final class Lazy<T> implements Supplier<T> {
  private final Supplier<T> factory;
  private volatile T value;

  private Lazy(Supplier<T> factory) {
    this.factory = factory;
  }

  public static <T> Lazy<T> of(Supplier<T> factory) {
    return new Lazy<>(factory);
  }

  @Override
  public T get() {
    T v = value;
    if (v == null) {
      synchronized (this) {
        v = value;
        if (v == null) {
          v = factory.get();
          value = v;
        }
      }
    }
    return v;
  }
}
