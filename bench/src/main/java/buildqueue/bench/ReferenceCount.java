package buildqueue.bench;

/**
 * What the reference implementation (docs/architecture.md §1) sends to the database for one job,
 * counted by hand from its code; see {@link #NOTE} for how.
 */
final class ReferenceCount {
  private ReferenceCount() {}

  static final int FRESH_STATEMENTS = 33;
  static final int FRESH_COMMITS = 15;
  static final int CHAINED_STATEMENTS = 21;
  static final int CHAINED_COMMITS = 8;

  static final String NOTE =
      """
      ### How the reference's statements were counted (figure 1)

      From the reference implementation's code (not part of this repository: docs/architecture.md §1), production path (Heroku), one job of a user in the shared
      lane on an otherwise idle queue. One statement = one SQL round trip Sequelize sends, counting
      `BEGIN`/`COMMIT`; one commit = one autocommitted statement or one committed transaction (read-only
      autocommit statements count: PostgreSQL counts them in `xact_commit`, as it does ours). The job's own
      work (`model.run`, `ArticleBuild.advance`) and the Heroku API calls are not counted.

      | step | statements | commits |
      |---|---|---|
      | `enqueue`: BEGIN, SAVEPOINT (Sequelize opens one for `findOrCreate` inside a transaction), SELECT, INSERT, UPDATE job `queued`, COMMIT | 6 | 1 |
      | `kick`: SELECT active slots, SELECT expired, SELECT user; BEGIN, SELECT slot holder, SELECT head entry (join user), SELECT job, UPDATE claim, UPDATE job `pending`, COMMIT; SELECT job; UPDATE dyno id (inside `launchWorker`, not in the file; needed for liveness checks) | 12 | 6 |
      | `run`: SELECT entry, UPDATE `running`; BEGIN, SELECT next queued entry (none), UPDATE `finished`, COMMIT | 6 | 3 |
      | exit, found by the next `kick`/`tick` liveness pass: SELECT worker entry, UPDATE `checkedAt`; `workerExited`: SELECT entries, BEGIN, SELECT … FOR UPDATE, SELECT job FOR UPDATE, UPDATE entry, COMMIT, DELETE finished | 9 | 5 |
      | **one job on a fresh worker** | **33** | **15** |
      | chained job: `enqueue` (6, 1 commit) + `kick` on a busy lane (SELECT active, SELECT worker entry, UPDATE `checkedAt`, SELECT expired, SELECT user, BEGIN, SELECT slot holder → held, COMMIT: 8, 6 commits) + the chain transaction in `run` (BEGIN, SELECT next, UPDATE `finished`, SELECT job, UPDATE next `running`, UPDATE job `pending`, COMMIT: 7, 1 commit) | **21** | **8** |

      The two items not in the file (the savepoint, the dyno-id write) make the reference's count uncertain by
      ±2 statements. Each further live slot adds 3 statements (2 commits) to every `kick`, so the reference's
      cost per job grows with the number of busy lanes; ours does not.
      """;
}
