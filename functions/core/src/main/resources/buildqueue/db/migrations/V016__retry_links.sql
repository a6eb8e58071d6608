-- Operator actions (docs/architecture.md §4.9): a failed or cancelled job can be retried, and
-- the retry is a new job linked both ways. retry_of names the job a retry was made from; retried_by
-- names the retry a finished job was given (set once: a job is retried at most once, a second retry
-- retries the retry). Plain ids, not foreign keys, like superseded_by: housekeeping deletes
-- finished jobs past their retention one by one, and a link must not keep one alive or block it.
alter table build_job add column retry_of bigint;
alter table build_job add column retried_by bigint;
