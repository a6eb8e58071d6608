package buildqueue.platform;

import java.util.Collection;
import java.util.Map;

/**
 * A platform that passes every call on to another: the base of decorators (metering, timing, and
 * the test kit's fault injection) that change one call and must forward the rest unchanged.
 */
public abstract class ForwardingWorkerPlatform implements WorkerPlatform {
  protected final WorkerPlatform delegate;

  protected ForwardingWorkerPlatform(WorkerPlatform delegate) {
    this.delegate = delegate;
  }

  @Override
  public LaunchOutcome launch(WorkerLaunch launch) {
    return delegate.launch(launch);
  }

  @Override
  public Map<String, TaskState> check(Collection<String> taskIds) {
    return delegate.check(taskIds);
  }

  @Override
  public boolean canCheck(String taskId) {
    return delegate.canCheck(taskId);
  }

  @Override
  public void stop(String taskId, String reason) {
    delegate.stop(taskId, reason);
  }

  @Override
  public CallRates callRates() {
    return delegate.callRates();
  }
}
