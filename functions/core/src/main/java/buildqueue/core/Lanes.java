package buildqueue.core;

/**
 * Lane names. Users without a dedicated worker share {@code shared}; a user who pays for one has
 * {@code user:<id>} with one slot. Slots are {@code <lane>#<n>}, numbered from 1.
 */
public final class Lanes {
  public static final String SHARED = "shared";
  private static final String USER_PREFIX = "user:";

  private Lanes() {}

  public static String dedicated(String userId) {
    return USER_PREFIX + userId;
  }

  public static String of(String userId, boolean dedicatedWorker) {
    return dedicatedWorker ? dedicated(userId) : SHARED;
  }

  public static boolean isValid(String lane) {
    return SHARED.equals(lane)
        || (lane != null && lane.startsWith(USER_PREFIX) && lane.length() > USER_PREFIX.length());
  }

  public static int capacity(String lane, QueueConfig config) {
    return SHARED.equals(lane) ? config.sharedSlots() : 1;
  }
}
