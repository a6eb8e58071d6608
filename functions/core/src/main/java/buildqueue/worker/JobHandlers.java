package buildqueue.worker;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** The handlers a worker can run, by kind. The API accepts only these kinds. */
public final class JobHandlers {
  private final Map<String, JobHandler> byKind;

  private JobHandlers(Map<String, JobHandler> byKind) {
    this.byKind = Collections.unmodifiableMap(byKind);
  }

  public static JobHandlers of(JobHandler... handlers) {
    Map<String, JobHandler> map = new LinkedHashMap<>();
    for (JobHandler h : handlers) {
      if (map.put(h.kind(), h) != null) {
        throw new IllegalArgumentException("two handlers for kind " + h.kind());
      }
    }
    return new JobHandlers(map);
  }

  /** The handlers every buildqueue worker ships with: {@code demo}. */
  public static JobHandlers builtIn() {
    return of(new DemoJobHandler());
  }

  /** A copy with more handlers. */
  public JobHandlers with(JobHandler... handlers) {
    Map<String, JobHandler> map = new LinkedHashMap<>(byKind);
    for (JobHandler h : handlers) {
      map.put(h.kind(), h);
    }
    return new JobHandlers(map);
  }

  public Optional<JobHandler> get(String kind) {
    return Optional.ofNullable(byKind.get(kind));
  }

  public Set<String> kinds() {
    return byKind.keySet();
  }
}
