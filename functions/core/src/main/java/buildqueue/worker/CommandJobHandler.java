package buildqueue.worker;

import buildqueue.kinds.CommandKind;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.Objects;

/**
 * The handler of one {@link CommandKind}: it checks payloads with the kind's {@code payloadSchema}
 * (for follow-ups; the API checks submissions against the {@link buildqueue.kinds.KindRegistry})
 * and runs each job through the {@link CommandRunner} it was given.
 */
public final class CommandJobHandler implements JobHandler {
  private final CommandKind kind;
  private final CommandRunner runner;

  public CommandJobHandler(CommandKind kind, CommandRunner runner) {
    this.kind = Objects.requireNonNull(kind, "kind");
    this.runner = Objects.requireNonNull(runner, "runner");
  }

  public CommandKind commandKind() {
    return kind;
  }

  @Override
  public String kind() {
    return kind.name();
  }

  @Override
  public void validate(JsonNode payload) {
    kind.payloadSchema().check(payload);
  }

  @Override
  public JobOutcome run(JobContext context) throws InterruptedException {
    return runner.run(kind, context);
  }
}
