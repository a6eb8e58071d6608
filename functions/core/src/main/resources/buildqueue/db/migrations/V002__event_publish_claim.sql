-- Publishing job events (the outbox, see V001): a publisher claims unpublished rows for a short
-- time, so two publishers never send the same rows at once, and rows claimed by a publisher that
-- died are free again when its claim runs out. A row EventBridge refused is claimed again after a
-- short backoff, so one entry it keeps refusing cannot hold back the rows behind it.
alter table build_job_event add column publish_claimed_until timestamptz;
