-- A lane's recently finished jobs, newest first, for two reads (issue 27): a queued job's start
-- estimate draws on its lane's last 60 finished jobs within a day (SlotReads.WAITING_LANE, on every
-- read of a queued job), and the dashboard's history (LaneHistory) finds the jobs that finished in
-- its span. build_job_finished (finished_at) alone makes the first scan every lane's finished jobs
-- of the day to find one quiet lane's; on (lane, finished_at) it reads only that lane's newest.
create index build_job_lane_finished on build_job (lane, finished_at) where finished_at is not null;
