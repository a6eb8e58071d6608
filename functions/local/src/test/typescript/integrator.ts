// An integrator's program against buildqueue, on a client generated from the server's own
// /openapi.json (openapi-typescript writes buildqueue.d.ts; openapi-fetch calls it). The JUnit test
// TypeScriptClientTest generates it, compiles this with `tsc --strict` and runs it against a local
// server; a document that generators type wrongly fails the compile, a server that answers other
// than the document says fails a check here.
//
// A new route is one more entry in `steps` at the bottom, calling client.GET/POST/PUT/PATCH with
// the route's path as the document spells it.
import createClient from "openapi-fetch";
import type { components, paths } from "./buildqueue.js";

type Job = components["schemas"]["Job"];
type Client = ReturnType<typeof createClient<paths>>;

const baseUrl = need("BQ_URL");
const run = need("BQ_RUN");
const user = clientFor(need("BQ_TOKEN"));
const quotaUser = clientFor(need("BQ_QUOTA_TOKEN"));
const quotaUserId = need("BQ_QUOTA_USER");
const admin = clientFor(need("BQ_ADMIN_TOKEN"));

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

function clientFor(token: string): Client {
  return createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
}

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`expected ${what}`);
}

async function submit(
  client: Client,
  body: components["schemas"]["SubmitJob"],
): Promise<{ job: Job; status: number }> {
  const { data, error, response } = await client.POST("/jobs", { body });
  check(data !== undefined, `a job from POST /jobs, got ${response.status} ${JSON.stringify(error)}`);
  return { job: data, status: response.status };
}

async function job(id: number): Promise<Job> {
  const { data, error } = await user.GET("/jobs/{id}", { params: { path: { id } } });
  check(data !== undefined, `job ${id}, got ${JSON.stringify(error)}`);
  return data;
}

async function until(id: number, done: (j: Job) => boolean, what: string): Promise<Job> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const j = await job(id);
    if (done(j)) return j;
    check(Date.now() < deadline, `job ${id} ${what} within a minute; it is ${j.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const finished = (j: Job) => ["succeeded", "failed", "cancelled"].includes(j.status);

async function submitWithIdempotencyKeyAndPoll(): Promise<void> {
  const body = {
    kind: "demo",
    payload: { steps: 3, stepMillis: 20 },
    idempotencyKey: `ts-${run}-build-1`,
  };
  const first = await submit(user, body);
  check(first.status === 201, `201 for a new job, got ${first.status}`);
  const again = await submit(user, body);
  check(again.status === 200 && again.job.id === first.job.id, "the same job for the same key");
  const done = await until(first.job.id, finished, "finished");
  check(done.status === "succeeded", `succeeded, got ${done.status}: ${done.error}`);
  check(done.progress === 3, `progress 3, got ${done.progress}`);
}

async function supersedeKeyCancelsTheEarlierJob(): Promise<void> {
  const supersedeKey = `ts-${run}-doc-7`;
  const long = { steps: 100, stepMillis: 200 };
  const first = await submit(user, { kind: "demo", payload: long, supersedeKey });
  const second = await submit(user, { kind: "demo", payload: long, supersedeKey });
  const replaced = await until(first.job.id, finished, "ended");
  check(replaced.status === "cancelled", `the first cancelled, got ${replaced.status}`);
  check(replaced.supersededBy === second.job.id, `supersededBy ${second.job.id}`);
  await cancel(second.job.id);
}

async function listPagesWithNext(): Promise<void> {
  const seen = new Set<number>();
  let before: number | undefined;
  for (let page = 0; page < 2; page++) {
    const query = before === undefined ? { limit: 1 } : { limit: 1, before };
    const { data, error } = await user.GET("/jobs", { params: { query } });
    check(data !== undefined, `a page, got ${JSON.stringify(error)}`);
    check(data.jobs.length === 1, `one job a page, got ${data.jobs.length}`);
    for (const j of data.jobs) {
      check(!seen.has(j.id), `job ${j.id} on one page only`);
      seen.add(j.id);
    }
    check(data.next !== null, "a next page: this user has several jobs");
    const cursor = new URL(data.next, baseUrl).searchParams.get("before");
    check(cursor !== null, `next names its cursor: ${data.next}`);
    before = Number(cursor);
  }
}

async function logSince(): Promise<void> {
  const { job: j } = await submit(user, { kind: "demo", payload: { steps: 2, stepMillis: 10 } });
  await until(j.id, finished, "finished");
  const path = { id: j.id };
  const all = await user.GET("/jobs/{id}/log", { params: { path }, parseAs: "text" });
  check(all.data !== undefined, `the log, got ${all.response.status}`);
  const total = Number(all.response.headers.get("Buildqueue-Log-Total-Bytes"));
  check(Number.isInteger(total) && total > 0, `a log total, got ${total}`);
  check(all.response.headers.get("Buildqueue-Job-Status") === "succeeded", "the job's status");
  const rest = await user.GET("/jobs/{id}/log", {
    params: { path, query: { since: total } },
    parseAs: "text",
  });
  // openapi-fetch gives no data for an empty body (Content-Length: 0), not "".
  check(rest.response.status === 200, `200 for the rest of the log, got ${rest.response.status}`);
  const after = rest.data ?? "";
  check(after === "", `nothing after byte ${total}, got ${JSON.stringify(after)}`);
}

async function cancel(id: number): Promise<void> {
  const { data, error } = await user.POST("/jobs/{id}/cancel", { params: { path: { id } } });
  check(data !== undefined, `cancel ${id}, got ${JSON.stringify(error)}`);
  const ended = await until(id, finished, "cancelled");
  check(ended.status === "cancelled", `cancelled, got ${ended.status}`);
}

async function cancelAQueuedOrRunningJob(): Promise<void> {
  const { job: j } = await submit(user, { kind: "demo", payload: { steps: 100, stepMillis: 200 } });
  await cancel(j.id);
}

async function quotaAnswers429(): Promise<void> {
  const set = await admin.PUT("/users/{userId}", {
    params: { path: { userId: quotaUserId } },
    body: { maxQueuedJobs: 1 },
  });
  check(set.data !== undefined, `the quota set, got ${JSON.stringify(set.error)}`);
  const mine: number[] = [];
  try {
    for (let i = 0; i < 5; i++) {
      const { data, error, response } = await quotaUser.POST("/jobs", {
        body: { kind: "demo", payload: { steps: 100, stepMillis: 200 } },
      });
      if (data !== undefined) {
        mine.push(data.id);
        continue;
      }
      check(response.status === 429, `429 once the quota is used, got ${response.status}`);
      check(error !== undefined && error.detail.length > 0, "a problem saying why");
      check(response.headers.get("Retry-After") !== null, "Retry-After");
      return;
    }
    check(false, "a 429 within 5 submissions with a quota of 1 queued job");
  } finally {
    for (const id of mine) {
      await quotaUser.POST("/jobs/{id}/cancel", { params: { path: { id } } });
    }
  }
}

const steps: [string, () => Promise<void>][] = [
  ["submit with an idempotency key, poll", submitWithIdempotencyKeyAndPoll],
  ["a supersede key cancels the earlier job", supersedeKeyCancelsTheEarlierJob],
  ["list with next", listPagesWithNext],
  ["log with since", logSince],
  ["cancel", cancelAQueuedOrRunningJob],
  ["quota 429", quotaAnswers429],
];

let passed = 0;
let failed = 0;
for (const [name, step] of steps) {
  try {
    await step();
    passed++;
    console.log(`ok ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAILED ${name}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
console.log(`typescript client: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
