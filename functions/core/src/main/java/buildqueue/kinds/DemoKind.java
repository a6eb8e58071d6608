package buildqueue.kinds;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Optional;
import java.util.Set;

/**
 * The built-in {@code demo} kind's payload: {@code {"steps": n, "stepMillis": m, "failAtStep": k?,
 * "crashAtStep": k?, "crashAttempts": a?}}. The worker's {@code DemoJobHandler} runs it.
 */
public final class DemoKind {
  public static final String NAME = "demo";
  public static final int MAX_STEPS = 10_000;
  public static final int MAX_STEP_MILLIS = 600_000;
  static final int MAX_CRASH_ATTEMPTS = 1_000;
  private static final Set<String> FIELDS =
      Set.of("steps", "stepMillis", "failAtStep", "crashAtStep", "crashAttempts");

  /**
   * The check {@code POST /jobs} holds a {@code demo} payload to: an object of the known fields.
   */
  public static final PayloadSchema PAYLOAD =
      payload -> {
        if (!payload.isObject()) {
          throw new IllegalArgumentException("demo payload must be a JSON object");
        }
        payload
            .fieldNames()
            .forEachRemaining(
                name -> {
                  if (!FIELDS.contains(name)) {
                    throw new IllegalArgumentException(
                        "demo payload has unknown field \""
                            + name
                            + "\"; known: steps, stepMillis, failAtStep, crashAtStep, crashAttempts");
                  }
                });
        read(payload);
      };

  /**
   * A checked demo payload; absent fields are empty, or the defaults (5 steps of 1 s).
   *
   * @param failAtStep the step at which the job fails, if any
   * @param crashAtStep the step at which the worker crashes, if any
   * @param crashAttempts the attempts that crash there (every attempt if empty)
   */
  public record Payload(
      int steps,
      int stepMillis,
      Optional<Integer> failAtStep,
      Optional<Integer> crashAtStep,
      Optional<Integer> crashAttempts) {}

  private DemoKind() {}

  /**
   * Reads a demo payload's fields (other fields are not looked at: {@link #PAYLOAD} refuses them);
   * throws {@link IllegalArgumentException} naming a field out of its range.
   */
  public static Payload read(JsonNode payload) {
    int steps = intField(payload, "steps", 0, MAX_STEPS).orElse(5);
    int stepMillis = intField(payload, "stepMillis", 0, MAX_STEP_MILLIS).orElse(1000);
    return new Payload(
        steps,
        stepMillis,
        intField(payload, "failAtStep", 1, MAX_STEPS),
        intField(payload, "crashAtStep", 1, MAX_STEPS),
        intField(payload, "crashAttempts", 1, MAX_CRASH_ATTEMPTS));
  }

  private static Optional<Integer> intField(JsonNode payload, String name, int min, int max) {
    JsonNode v = payload.get(name);
    if (v == null || v.isNull()) {
      return Optional.empty();
    }
    if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < min || v.asInt() > max) {
      throw new IllegalArgumentException(
          "demo payload field \""
              + name
              + "\" must be a whole number from "
              + min
              + " to "
              + max
              + ", was "
              + v);
    }
    return Optional.of(v.asInt());
  }
}
