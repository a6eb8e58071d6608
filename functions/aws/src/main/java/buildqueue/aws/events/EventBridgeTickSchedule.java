package buildqueue.aws.events;

import buildqueue.core.TickSchedule;
import software.amazon.awssdk.services.eventbridge.EventBridgeClient;

/**
 * The tick's schedule on AWS: its EventBridge rule ({@code rate(1 minute)}), enabled and disabled
 * with EnableRule and DisableRule (docs/architecture.md §4.5, "Idle at zero"). A rule rather than
 * EventBridge Scheduler's one-time schedules: the queue needs "on until turned off", which a rule
 * is; both calls are idempotent, so a late or repeated one changes nothing a later one does not
 * undo; the EventBridge client is already in every queue function (PutEvents); and there is nothing
 * to create or clean up per arm (a one-time schedule per arm would be, and Scheduler needs a role
 * of its own to invoke the function). The fallback rule ({@code rate(1 day)}) is never disabled.
 */
public final class EventBridgeTickSchedule implements TickSchedule {
  private final EventBridgeClient client;
  private final String rule;

  public EventBridgeTickSchedule(EventBridgeClient client, String rule) {
    this.client = client;
    this.rule = rule;
  }

  @Override
  public void arm() {
    client.enableRule(r -> r.name(rule));
  }

  @Override
  public void disarm() {
    client.disableRule(r -> r.name(rule));
  }
}
