// Drives pg-boss for figure 3: U users × J no-op jobs in one queue with the key_strict_fifo policy
// and singletonKey = user, so each user's jobs run one at a time and in order. Jobs are sent first,
// then the workers start; the time from work() to the last completion is what counts. Prints one
// JSON line.
import { PgBoss } from "pg-boss";

const url = process.env.BENCH_URL;
const users = Number(process.env.BENCH_USERS);
const perUser = Number(process.env.BENCH_JOBS_PER_USER);
const concurrency = Number(process.env.BENCH_CONCURRENCY);
const total = users * perUser;
// A peer that is slow on a load stops after this long and reports the rate it reached.
const maxMs = Number(process.env.BENCH_MAX_SECONDS) * 1000;
const queue = "noop";

const boss = new PgBoss({ connectionString: url, max: concurrency + 2, schedule: false });
boss.on("error", (e) => console.error(e));
await boss.start();
await boss.createQueue(queue, { policy: "key_strict_fifo" });
const enqueueStart = performance.now();
for (let j = 0; j < perUser; j++) {
  for (let u = 0; u < users; u++) {
    await boss.send(queue, { u, j }, { singletonKey: `u${u}` });
  }
}
const enqueueMs = performance.now() - enqueueStart;

let done = 0;
let finish;
const allDone = new Promise((resolve) => (finish = resolve));
const start = performance.now();
// Its fastest settings for this load: one job per fetch, fetch again at once while the last fetch
// was full and jobs are ready (burst), and the minimum base poll (0.5 s). NOTIFY is left off: with
// it the idle poll becomes a 30 s backstop.
await boss.work(
  queue,
  { batchSize: 1, localConcurrency: concurrency, pollingIntervalSeconds: 0.5, burstWhenReadyExceeds: 1 },
  async () => {
    if (++done === total) finish();
  },
);
await Promise.race([allDone, new Promise((resolve) => setTimeout(resolve, maxMs))]);
const processMs = performance.now() - start;
await boss.stop({ graceful: true, wait: true, timeout: 10000 });
console.log(JSON.stringify({ jobs: done, enqueueMs, processMs, capped: done < total }));
process.exit(0);
