package buildqueue.core;

import buildqueue.platform.Capacity;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What each kind's workers run on: the stack's default and the kinds of the catalogue that name
 * their own. A worker's capacity is chosen when it is launched, from the job it was dispatched for
 * ({@link DispatchTransitions#chooseCapacity}); a job reclaimed {@link
 * ExitTransitions#MAX_RECLAIMS} times runs on on-demand from then on.
 */
public record Capacities(Capacity stackDefault, Map<String, Capacity> byKind) {
  /** Everything on on-demand: no launch needs to ask the database what to run on. */
  public static final Capacities ON_DEMAND = new Capacities(Capacity.ON_DEMAND, Map.of());

  private static final ObjectMapper JSON = new ObjectMapper();

  public Capacities {
    stackDefault = stackDefault == null ? Capacity.ON_DEMAND : stackDefault;
    byKind = Map.copyOf(byKind);
  }

  /** Whether every launch runs on on-demand, whatever its job: then no choice is made. */
  public boolean allOnDemand() {
    return stackDefault == Capacity.ON_DEMAND
        && byKind.values().stream().allMatch(c -> c == Capacity.ON_DEMAND);
  }

  /** The kinds' settings as a JSON object of labels, the choice's parameter. */
  String kindsJson() {
    Map<String, String> labels = new LinkedHashMap<>();
    byKind.forEach((kind, c) -> labels.put(kind, c.label()));
    try {
      return JSON.writeValueAsString(labels);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a map of strings always serializes", e);
    }
  }
}
