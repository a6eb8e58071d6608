package buildqueue.faults;

import buildqueue.core.TickSchedule;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The tick's schedule as the simulation runs it (docs/architecture.md §4.5, "Idle at zero"): the
 * minute schedule fires only while this is on, the fallback whatever it is. The queue's calls are
 * scheduling points, as the EventBridge calls they stand for, and the arming faults strike the arm:
 * it is lost (the caller dies between its commit and the call), lands twice (now and a while
 * later), or lands late. An arm that went astray (lost, or late and not yet landed) is what allows
 * the schedule to be off while the queue has work; an arm that lands puts it right.
 */
final class SimSchedule implements TickSchedule {
  /** How late a late or duplicated arm lands at most: a slow call, a retry after a timeout. */
  static final int MAX_LATE_MS = 90_000;

  private final Simulation sim;
  private final Scheduler scheduler;
  private final Random sixth;
  private boolean on = true;
  private boolean astray;
  private final List<Instant> late = new ArrayList<>();
  private int landed;
  private int lost;

  SimSchedule(Simulation sim, Scheduler scheduler, Random sixth) {
    this.sim = sim;
    this.scheduler = scheduler;
    this.sixth = sixth;
  }

  @Override
  public void arm() {
    Scheduler.Actor a = scheduler.gate("TickSchedule.arm");
    try {
      if (a != null) {
        sim.callerAlive(a);
      }
    } catch (FaultyPlatform.CallerDied e) {
      lost(a, "its caller timed out before the call");
      throw e;
    }
    Fault f = sim.faults().pick(Fault.ARM_LOST, Fault.ARM_DUPLICATED, Fault.ARM_LATE);
    switch (f) {
      case ARM_LOST -> {
        lost(a, "⚡ the caller dies between its commit and the arm");
        throw new FaultyPlatform.CallerDied("died before arming the tick");
      }
      case ARM_LATE -> {
        Instant at = later();
        synchronized (this) {
          astray = true;
        }
        sim.note(a, "⚡ the arm is late: it lands at " + sim.since(at));
      }
      case ARM_DUPLICATED -> {
        Instant at = later();
        land(a, "arm lands");
        sim.note(a, "⚡ the arm is duplicated: it lands again at " + sim.since(at));
      }
      default -> land(a, "arm lands");
    }
  }

  @Override
  public void disarm() {
    Scheduler.Actor a = scheduler.gate("TickSchedule.disarm");
    if (a != null) {
      sim.callerAlive(a);
    }
    synchronized (this) {
      on = false;
    }
    sim.note(a, "the minute schedule is off");
  }

  private Instant later() {
    Instant at = sim.now().plus(Duration.ofMillis(100 + sixth.nextInt(MAX_LATE_MS)));
    synchronized (this) {
      late.add(at);
      late.sort(null);
    }
    return at;
  }

  private void lost(Scheduler.Actor a, String why) {
    synchronized (this) {
      astray = true;
      lost++;
    }
    sim.note(a, "arm lost: " + why);
  }

  private void land(Scheduler.Actor a, String what) {
    synchronized (this) {
      on = true;
      astray = false;
      landed++;
    }
    sim.armLanded();
    sim.note(a, what + ": the minute schedule is on");
  }

  /**
   * An enqueue flipped the flag and went on without calling {@link #arm} (its commit's reply was
   * lost, and the request failed): its arm is lost as surely as one that fails.
   */
  void lostBeforeTheCall() {
    lost(null, "an enqueue flipped the flag and died before arming");
  }

  /** Lands every late arm due by {@code now}. */
  void landDue(Instant now) {
    while (true) {
      synchronized (this) {
        if (late.isEmpty() || late.get(0).isAfter(now)) {
          return;
        }
        late.remove(0);
      }
      land(null, "a late arm lands");
    }
  }

  /** Lands the oldest late arm now (it races whatever runs at the same time). */
  void landOldest() {
    synchronized (this) {
      late.remove(0);
    }
    land(null, "a late arm lands");
  }

  synchronized boolean latePending() {
    return !late.isEmpty();
  }

  /** When the next late arm lands, or null. */
  synchronized Instant nextLanding() {
    return late.isEmpty() ? null : late.get(0);
  }

  synchronized boolean on() {
    return on;
  }

  /** An arm was lost, or is late, since an arm last landed: the fallback may be what ticks next. */
  synchronized boolean astray() {
    return astray || !late.isEmpty();
  }

  synchronized int landed() {
    return landed;
  }

  synchronized int lost() {
    return lost;
  }
}
