package buildqueue.worker;

import buildqueue.kinds.KindCatalogue;
import buildqueue.kinds.KindRegistry;
import buildqueue.kinds.PayloadSchema;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The handlers a worker can run, by kind. As a {@link KindRegistry} it accepts these kinds with
 * each handler's {@link JobHandler#validate} (a test's API built on a worker's handlers).
 */
public final class JobHandlers implements KindRegistry {
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

  /**
   * The handlers of a worker with {@code catalogue}: the built-in {@code demo} and one {@link
   * CommandJobHandler} per kind, each running its jobs through {@code runner}.
   */
  public static JobHandlers forCatalogue(KindCatalogue catalogue, CommandRunner runner) {
    return builtIn()
        .with(
            catalogue.kinds().stream()
                .map(k -> new CommandJobHandler(k, runner))
                .toArray(JobHandler[]::new));
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

  @Override
  public Set<String> kinds() {
    return byKind.keySet();
  }

  @Override
  public Optional<PayloadSchema> payloadSchema(String kind) {
    return get(kind).map(handler -> handler::validate);
  }
}
