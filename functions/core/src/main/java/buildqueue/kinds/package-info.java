/**
 * Job kinds the operator defines: the kind catalogue (one file, read by the API to validate
 * submissions and by the worker to run them) and the {@link buildqueue.kinds.CommandKind} each entry
 * becomes.
 */
package buildqueue.kinds;
