package buildqueue.worker;

import com.fasterxml.jackson.databind.JsonNode;

/** What a running job sees of the queue. */
public interface JobContext {
  long jobId();

  String userId();

  String kind();

  JsonNode payload();

  /** The progress recorded before this attempt started: resume from here. */
  int progress();

  /** 1 for the first dispatch of this job, 2 after one interruption, and so on. */
  int attempt();

  /**
   * Records progress (fenced by this worker's token). A job that moved forward since its last
   * interruption has its recovery count reset.
   *
   * @throws JobCancelledException the owner cancelled the job: stop and return
   * @throws WorkerFencedOffException this worker no longer owns the job: stop at once
   */
  void reportProgress(int progress);

  /**
   * Enqueues a job for the same user, committed together with this job's success and not at all
   * if it fails.
   */
  void enqueueFollowUp(String kind, JsonNode payload);

  /**
   * Ends the worker abruptly, as a crash would: a process exits with no cleanup, an in-process
   * worker stops writing and unwinds. For demos and fault tests.
   */
  void crashWorker();
}
