package buildqueue.api;

import buildqueue.core.JobQueries;
import buildqueue.core.JobQueries.CurrentJob;
import buildqueue.core.JobQueries.JobView;
import buildqueue.core.JobQueries.SlotView;
import buildqueue.core.JobQueries.Waiting;
import buildqueue.core.JobQueries.WorkerView;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Objects;

/**
 * A job as the job routes answer it: found only by its owner or an admin ("not found" for anyone
 * else, so ids leak nothing), with what it waits for, and other users' ids redacted for a user.
 */
final class JobAnswers {
  private final JobQueries queries;

  JobAnswers(JobQueries queries) {
    this.queries = Objects.requireNonNull(queries, "queries");
  }

  /** The job the path names, if the caller may see it. */
  JobView visibleJob(Call call) {
    long id = call.jobId();
    return queries.job(id).filter(j -> call.maySee(j.userId())).orElseThrow(() -> notFound(id));
  }

  ObjectNode json(JobView job, Caller caller) {
    return ApiJson.job(job, queries.waiting(job).map(w -> redact(w, caller)), queries.ledger());
  }

  static ApiProblem notFound(long id) {
    return ApiProblem.notFound(
        "There is no job "
            + id
            + " of yours: it does not exist, was deleted after its "
            + "retention period, or belongs to another user. List yours with GET /jobs.");
  }

  /**
   * Who else is using the queue is an admin's business: a user sees which slot holds their lane,
   * its worker and the job it runs, but another user's id only as null ("another user").
   */
  static Waiting redact(Waiting w, Caller caller) {
    if (caller.admin()) {
      return w;
    }
    List<SlotView> slots =
        w.slots().stream()
            .map(
                s ->
                    new SlotView(
                        s.slot(),
                        s.worker()
                            .map(
                                worker ->
                                    new WorkerView(
                                        worker.id(),
                                        worker.lane(),
                                        worker.slot(),
                                        worker.status(),
                                        worker.taskId(),
                                        worker.leaseLeftSeconds(),
                                        worker.launchedAt(),
                                        worker.startedAt(),
                                        worker
                                            .job()
                                            .map(
                                                j ->
                                                    j.userId().equals(caller.userId())
                                                        ? j
                                                        : new CurrentJob(
                                                            j.id(),
                                                            null,
                                                            j.kind(),
                                                            j.status(),
                                                            j.progress(),
                                                            j.payloadSteps()))))))
            .toList();
    return new Waiting(
        w.lane(),
        w.capacity(),
        w.jobsAhead(),
        slots,
        w.notBefore(),
        w.turns(),
        w.estimatedStart(),
        w.pause());
  }
}
