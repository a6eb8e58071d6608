package buildqueue.core;

/**
 * How dispatch and chaining pick a lane's next job, and how a user's place in the shared lane's
 * turns is kept (table {@code build_lane_turn}, V004). The choice is written once, as the schema's
 * function {@code build_lane_next_job} (migration V008), which the dispatch ({@code
 * build_lane_dispatch}, V008) and the worker's chaining functions ({@code build_worker_end} and
 * {@code build_worker_take_next}, as V008 last defines them) call; a user joins the turns through
 * {@code build_lane_turn_join}, which {@link #JOINED} calls.
 *
 * <p>Why a function and not one text copied into each statement: chaining runs as the worker role,
 * inside its {@code SECURITY DEFINER} functions, which live in migrations; a released migration
 * never changes, so a text generated into them could not follow a change, and V005 and V006 had to
 * hold hand copies that only a string-equality test kept equal. Why the choice is a statement of
 * its own, before the statement that takes the job (so the dispatch is a function too): a function
 * called inside a statement runs its queries with snapshots of its own, newer than the calling
 * statement's. A job committed in between could be chosen and locked by the function and yet be
 * invisible to the calling statement's {@code UPDATE}, which would take nothing (and a dispatch
 * would insert a worker with no job). Inside a PL/pgSQL function each statement sees what the ones
 * before it did, so choose-then-take is exact, and the caller still sends one statement.
 *
 * <p>A FIFO lane (every dedicated lane, and the shared lane under {@link
 * QueueConfig.SharedOrder#FIFO}) takes its oldest queued job. The shared lane otherwise takes turns
 * by user:
 *
 * <ol>
 *   <li>a job that ran and came back (an interruption, a launch failure: {@code attempts > 0}) goes
 *       first, oldest first, as at the head of a FIFO lane: a retry is not a new turn;
 *   <li>else the waiting user with the smallest turn whose oldest ready queued job can be taken:
 *       that job, and the user's turn becomes the newest served ({@code build_lane_turn_served});
 *   <li>else (every waiting user is being served by a concurrent dispatcher, or a user has queued
 *       jobs but no turn row, which no statement leaves behind) the lane's oldest ready job, so a
 *       free slot never stays empty while a job could run.
 * </ol>
 *
 * A dispatch holds the lane behind a FIFO head or a retry that is backing off after a capacity
 * failure (the jobs behind it would fail to launch the same way); chaining takes the oldest ready
 * job past it. The walk reads the turn index in order and stops at the first user with a job, so it
 * costs one probe per user it passes, not per queued job. Users it passes that have no queued and
 * no running job left are marked not {@code waiting} in the same statement, so idle users are
 * passed once, not at every dispatch.
 *
 * <p>Concurrency (READ COMMITTED):
 *
 * <ul>
 *   <li>Each turn row the walk reads is locked {@code for update skip locked}: two dispatchers of
 *       the shared lane never serve one user at once; the second passes the first's user and serves
 *       the next one, as the turns say it should. A row locked by an enqueue of that user is passed
 *       for the moment as well (the enqueue commits within its one statement).
 *   <li>{@code for update} hands back the row's newest version, which may carry an enqueue that
 *       committed after this statement's snapshot began, while the job lookups still read the
 *       snapshot and do not see that job. So the version a stale row is compared with is read
 *       without a lock (the snapshot's), and marking it idle is guarded by {@code version =} that
 *       value: PostgreSQL re-checks the guard on the newest version, finds the enqueue's bump, and
 *       leaves the row waiting.
 *   <li>A job that comes back to the queue (an exit, an interruption, a launch failure) was
 *       running, and a user with a running job is never marked idle; a job entering the lane by
 *       enqueue, a follow-up or a lane change bumps its user's row. So no queued job is ever left
 *       without a waiting turn row, and step 3 is only a guard.
 *   <li>Only the statement holding a user's row lock (from its own walk) changes that user's turn;
 *       a retry or a fallback job does not, so a dispatcher never waits for a turn row lock and no
 *       two dispatchers can deadlock over them.
 * </ul>
 *
 * The function serves the chosen user's turn itself, so its caller must take the job it returns in
 * the same transaction (or fail and roll back).
 */
final class LaneTurns {
  private LaneTurns() {}

  /**
   * A CTE for statements that queue jobs: each user with a job in {@code %s} (a CTE returning
   * {@code id}, {@code lane}, {@code user_id}) joins its lane's turns ({@code
   * build_lane_turn_join}: a waiting turn row in the shared lane, a new user's turn placed by its
   * first job). It is a query, not a data-modifying CTE, so the statement must read it ({@code
   * select count(*) from joined}) for it to run.
   */
  static final String JOINED =
      """
      joined as (
        select build_lane_turn_join(q.lane, q.user_id, min(q.id)) from %s q group by q.lane, q.user_id
      ),
      """;

  /** {@link #JOINED} for the jobs of CTE {@code source}. */
  static String joined(String source) {
    return JOINED.formatted(source);
  }
}
