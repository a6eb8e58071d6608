/**
 * Job kinds the operator defines: the kind catalogue (one file, read by the API to validate
 * submissions and by the worker to run them), the {@link buildqueue.kinds.CommandKind} each entry
 * becomes, the built-in {@link buildqueue.kinds.DemoKind}, and the {@link
 * buildqueue.kinds.KindRegistry} the API checks submissions against.
 *
 * <p>A leaf: it knows nothing of the queue's core, the API or the worker that runs the kinds (the
 * worker depends on it, never the other way); of ours it uses only the root {@link
 * buildqueue.BuildQueueException}. {@code PackageRulesTest} holds this.
 */
package buildqueue.kinds;
