package buildqueue.platform;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * What a worker runs on: on-demand Fargate, Fargate Spot (cheaper, and reclaimed with a two-minute
 * warning), or Spot that falls back to on-demand when Spot has no capacity for a launch. A setting
 * per kind in the catalogue, with a stack default; a job reclaimed {@link
 * buildqueue.core.ExitTransitions#MAX_RECLAIMS} times runs on on-demand from then on.
 */
public enum Capacity {
  ON_DEMAND("on-demand"),
  SPOT("spot"),
  SPOT_THEN_ON_DEMAND("spot-then-on-demand");

  private final String label;

  Capacity(String label) {
    this.label = label;
  }

  /** The setting as written in the catalogue, the stack parameter and the database. */
  public String label() {
    return label;
  }

  /** Whether a launch asks for Spot first. */
  public boolean spot() {
    return this != ON_DEMAND;
  }

  /** The setting a label names; the message of the exception lists the known ones. */
  public static Capacity ofLabel(String label) {
    for (Capacity c : values()) {
      if (c.label.equals(label)) {
        return c;
      }
    }
    throw new IllegalArgumentException(
        "unknown capacity \"" + label + "\"; it is one of " + labels());
  }

  /** The labels, quoted, for messages: {@code "on-demand", "spot", "spot-then-on-demand"}. */
  public static String labels() {
    return Arrays.stream(values())
        .map(c -> "\"" + c.label + "\"")
        .collect(Collectors.joining(", "));
  }
}
