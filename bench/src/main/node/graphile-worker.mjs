// Drives graphile-worker for figure 3: U users × J no-op jobs, one queueName per user so each
// user's jobs run one at a time. Jobs are added first, then the runner starts; the time from the
// runner's start to the last job's success is what counts. Prints one JSON line.
import { run, makeWorkerUtils } from "graphile-worker";

const url = process.env.BENCH_URL;
const users = Number(process.env.BENCH_USERS);
const perUser = Number(process.env.BENCH_JOBS_PER_USER);
const concurrency = Number(process.env.BENCH_CONCURRENCY);
const total = users * perUser;
// A peer that is slow on a load stops after this long and reports the rate it reached.
const maxMs = Number(process.env.BENCH_MAX_SECONDS) * 1000;

const utils = await makeWorkerUtils({ connectionString: url });
await utils.migrate();
const enqueueStart = performance.now();
// Round-robin over users, as the queue would see them arrive; one addJob per job, like an API call.
for (let j = 0; j < perUser; j++) {
  for (let u = 0; u < users; u++) {
    await utils.addJob("noop", { u, j }, { queueName: `u${u}` });
  }
}
const enqueueMs = performance.now() - enqueueStart;
await utils.release();

let done = 0;
let finish;
const allDone = new Promise((resolve) => (finish = resolve));
const start = performance.now();
const runner = await run({
  connectionString: url,
  concurrency,
  maxPoolSize: concurrency + 2,
  noHandleSignals: true,
  // The default is 2000 ms. A queue's next job waits for this poll: the worker fetches again as
  // soon as a job's function returns, while the completion that unlocks the job's queue is still
  // in flight, finds the queue locked and sleeps until the poll (no NOTIFY wakes it). The benchmark
  // runs both the default and a 10 ms poll, its fastest sensible setting for this load.
  pollInterval: Number(process.env.BENCH_POLL_MS),
  taskList: {
    noop: async () => {},
  },
});
runner.events.on("job:success", () => {
  if (++done === total) finish();
});
await Promise.race([allDone, new Promise((resolve) => setTimeout(resolve, maxMs))]);
const processMs = performance.now() - start;
await runner.stop();
console.log(JSON.stringify({ jobs: done, enqueueMs, processMs, capped: done < total }));
process.exit(0);
