package buildqueue.core;

/**
 * How dispatch and chaining pick a lane's next job, and how a user's place in the shared lane's
 * turns is kept (table {@code build_lane_turn}, V004). Dispatch runs these fragments; chaining runs
 * as the worker role, so the same text is written out in the worker's functions, {@code build_worker_end} and {@code
 * build_worker_take_next} (and {@link #JOINED} in {@code build_worker_add_follow_ups}), as V006
 * last defines them (V005 first did), and {@code LaneTurnsTest} fails if the copies drift apart.
 *
 * <p>A FIFO lane (every dedicated lane, and the shared lane under {@link
 * QueueConfig.SharedOrder#FIFO}) takes its oldest queued job. The shared lane otherwise takes
 * turns by user:
 *
 * <ol>
 *   <li>a job that ran and came back (an interruption, a launch failure: {@code attempts > 0}) goes
 *       first, oldest first, as at the head of a FIFO lane: a retry is not a new turn;
 *   <li>else the waiting user with the smallest turn whose oldest ready queued job can be taken:
 *       that job, and the user's turn becomes the newest served ({@code build_lane_turn_served});
 *   <li>else (every waiting user is being served by a concurrent dispatcher, or a user has queued
 *       jobs but no turn row, which no statement leaves behind) the lane's oldest ready job, so a free
 *       slot never stays empty while a job could run.
 * </ol>
 *
 * The walk reads the turn index in order and stops at the first user with a job, so it costs one
 * probe per user it passes, not per queued job. Users it passes that have no queued and no running
 * job left are marked not {@code waiting} in the same statement, so idle users are passed once,
 * not at every dispatch.
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
 *   <li>A job that comes back to the queue (an exit, an interruption, a launch failure) was running,
 *       and a user with a running job is never marked idle; a job entering the lane by enqueue, a
 *       follow-up or a lane change bumps its user's row. So no queued job is ever left without a
 *       waiting turn row, and step 3 is only a guard.
 *   <li>Only the statement holding a user's row lock (from its own walk) changes that user's turn;
 *       a retry or a fallback job does not, so a dispatcher never waits for a turn row lock and no
 *       two dispatchers can deadlock over them.
 * </ul>
 *
 * Each scan names its lane as a scalar subquery of {@code choose}, never as a join with it: the
 * planner then reads the lane's index in order from a value it knows at run time (an empty {@code
 * choose}, or one of the other order, makes the subquery null and the scan empty at once), where a
 * join made it walk every job by id or sort every turn row first (figure 4 of BENCHMARKS.md).
 *
 * <p>The fragment expects CTEs {@code t(now)} and {@code choose(lane, fair, fifo, room)} before it and
 * the parameter {@code :holdLane}; it defines {@code fair_next(user_id, job_id)} and {@code
 * ready(id)}, the job to take. The statement must then run {@link #SERVED} against the CTE that took
 * the job ({@code %s}: its name, returning {@code id}).
 */
final class LaneTurns {
  private LaneTurns() {}

  /**
   * A user never served takes this much less than its first job's id as its turn: below every
   * served turn (job ids stay far under 2^62), and newcomers in the order they came.
   */
  static final long NEVER_SERVED_OFFSET = 1L << 62;

  /**
   * The choice. {@code :holdLane} (dispatch) makes a FIFO head or a retry that is backing off after
   * a capacity failure hold the lane: the jobs behind it would fail to launch the same way. Chaining
   * passes it ({@code false}): a live worker takes the oldest ready job past it.
   */
  static final String CHOOSE = fifoHead() + """
      retry_head as (
        select q.id, q.not_before from build_job q, t
        where q.lane = (select c.lane from choose c where c.fair) and q.status = 'queued' and q.attempts > 0
          and (:holdLane or q.not_before is null or q.not_before <= t.now)
        order by q.id
        limit 1
        for update of q skip locked
      ),
      -- Waiting users in turn order, each with its oldest ready queued job (locked) and whether it
      -- has any job in the lane at all: the walk goes on only past users without a job to take.
      walk(n, user_id, turn, version, job_id, active) as (
        (select 1, u.user_id, u.turn,
                (select v.version from build_lane_turn v where v.lane = u.lane and v.user_id = u.user_id),
                (select q.id from build_job q, t
                 where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued'
                   and (q.not_before is null or q.not_before <= t.now)
                 order by q.id limit 1 for update of q skip locked),
                exists (select 1 from build_job a where a.user_id = u.user_id and a.lane = u.lane
                        and a.status in ('queued', 'dispatched', 'running'))
         from (select u.lane, u.user_id, u.turn from build_lane_turn u
               where u.lane = (select c.lane from choose c where c.fair and c.room) and u.waiting
                 and not exists (select 1 from retry_head)
               order by u.turn, u.user_id
               limit 1
               for update of u skip locked) u)
        union all
        select w.n + 1, u.user_id, u.turn,
               (select v.version from build_lane_turn v where v.lane = u.lane and v.user_id = u.user_id),
               (select q.id from build_job q, t
                where q.user_id = u.user_id and q.lane = u.lane and q.status = 'queued'
                  and (q.not_before is null or q.not_before <= t.now)
                order by q.id limit 1 for update of q skip locked),
               exists (select 1 from build_job a where a.user_id = u.user_id and a.lane = u.lane
                       and a.status in ('queued', 'dispatched', 'running'))
        from walk w
        cross join lateral (
          select u.lane, u.user_id, u.turn from build_lane_turn u
          where u.lane = (select c.lane from choose c) and u.waiting and (u.turn, u.user_id) > (w.turn, w.user_id)
          order by u.turn, u.user_id
          limit 1
          for update of u skip locked) u
        where w.job_id is null
      ),
      fair_next as (select w.user_id, w.job_id from walk w where w.job_id is not null),
      idled as (
        update build_lane_turn u set waiting = false
        from walk w, choose c
        where u.lane = c.lane and u.user_id = w.user_id and w.job_id is null and not w.active
          and u.version = w.version
        returning u.user_id
      ),
      fallback as (
        select q.id from build_job q, t
        where q.lane = (select c.lane from choose c where c.fair and c.room) and q.status = 'queued'
          and (q.not_before is null or q.not_before <= t.now)
          and not exists (select 1 from retry_head) and not exists (select 1 from fair_next)
        order by q.id
        limit 1
        for update of q skip locked
      ),
      head as (
        select id, not_before from fifo_head
        union all select id, not_before from retry_head
        union all select job_id, null from fair_next
        union all select id, null from fallback
      ),
      ready as (select head.id from head, t where head.not_before is null or head.not_before <= t.now),
      """;

  /**
   * {@link #CHOOSE} for a lane that takes its oldest job: its FIFO head alone, which is all the
   * whole choice takes in such a lane. The turns' parts (the walk, the retry and fallback probes)
   * take no row there, yet PostgreSQL plans every part of a statement, and planning them was three
   * quarters of a dedicated lane's dispatch (2.5 ms against 0.7 ms), paid again at every worker's
   * exit, whose dispatch finds its lane empty.
   */
  static final String CHOOSE_OLDEST = fifoHead() + """
      ready as (select h.id from fifo_head h, t where h.not_before is null or h.not_before <= t.now),
      """;

  /** The head of a FIFO lane, the first part of both choices. */
  private static String fifoHead() {
    return """
        fifo_head as (
          select q.id, q.not_before from build_job q, t
          where q.lane = (select c.lane from choose c where c.fifo) and q.status = 'queued'
            and (:holdLane or q.not_before is null or q.not_before <= t.now)
          order by q.id
          limit 1
          for update of q skip locked
        ),
        """;
  }

  /**
   * The chosen user's turn becomes the newest served, once its job is taken ({@code %s}: the CTE
   * that took it). The walk holds the row's lock, so this never waits.
   */
  static final String SERVED =
      """
      served as (
        update build_lane_turn u set turn = nextval('build_lane_turn_served')
        from %s x, fair_next f, choose c
        where x.id = f.job_id and u.lane = c.lane and u.user_id = f.user_id
        returning u.user_id
      ),
      """;

  /**
   * A CTE for statements that queue jobs: each user with a job in {@code %s} (a CTE returning
   * {@code id}, {@code lane}, {@code user_id}) in the shared lane gets a waiting turn row, a new
   * user's turn placed by its first job. Bumping {@code version} tells a concurrent walk not to mark
   * the user idle (see the class comment).
   */
  static final String JOINED =
      """
      joined as (
        insert into build_lane_turn (lane, user_id, turn)
        select q.lane, q.user_id, min(q.id) - %d from %s q
        where q.lane = 'shared'
        group by q.lane, q.user_id
        on conflict (lane, user_id) do update set waiting = true, version = build_lane_turn.version + 1
        returning user_id
      ),
      """;

  /** {@link #JOINED} for the jobs of CTE {@code source}. */
  static String joined(String source) {
    return JOINED.formatted(NEVER_SERVED_OFFSET, source);
  }

  /** {@link #SERVED} once CTE {@code taken} has taken the job. */
  static String served(String taken) {
    return SERVED.formatted(taken);
  }
}
