// An integrator's program against buildqueue, on a client generated from the server's own
// /openapi.json (openapi-typescript writes buildqueue.d.ts; openapi-fetch calls it). The JUnit test
// TypeScriptClientTest generates it, compiles this with `tsc --strict` and runs it against a local
// server; a document that generators type wrongly fails the compile, a server that answers other
// than the document says fails a check here.
//
// A new route is one more entry in `steps` at the bottom, calling client.GET/POST/PUT/PATCH with
// the route's path as the document spells it.
import { createHash } from "node:crypto";
import createClient from "openapi-fetch";
import type { components, paths } from "./buildqueue.js";

type Job = components["schemas"]["Job"];
type Lane = components["schemas"]["Lane"];
type Cost = components["schemas"]["Cost"];
type Client = ReturnType<typeof createClient<paths>>;

const baseUrl = need("BQ_URL");
const run = need("BQ_RUN");
const user = clientFor(need("BQ_TOKEN"));
const quotaUser = clientFor(need("BQ_QUOTA_TOKEN"));
const quotaUserId = need("BQ_QUOTA_USER");
const admin = clientFor(need("BQ_ADMIN_TOKEN"));
const userId = need("BQ_USER");
const readOnlyAdmin = clientFor(need("BQ_READ_ONLY_TOKEN"));
// A catalogue kind whose program publishes these files (ClientTestServer), and a receiver on this
// machine for webhook deliveries.
const published: { kind: string; names: string[]; report: string; randomBytes: number } =
  JSON.parse(need("BQ_ARTIFACTS"));
const webhookUrl = need("BQ_WEBHOOK_URL");
// A delivery the test left dead (ClientTestServer.deadDelivery), to be replayed.
const dead: { endpoint: string; id: number } = JSON.parse(need("BQ_DEAD_DELIVERY"));
// The lane a user without a dedicated worker queues in; the server has one slot there.
const SHARED = "shared";
const quick = { steps: 1, stepMillis: 10 };

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

// Polls `probe` until it answers a value, for at most a minute.
async function eventually<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    check(Date.now() < deadline, `${what} within a minute`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function deliveries(name: string): Promise<components["schemas"]["WebhookDelivery"][]> {
  const { data, error } = await admin.GET("/webhooks/{name}/deliveries", {
    params: { path: { name }, query: { limit: 200 } },
  });
  check(data !== undefined, `the delivery log of ${name}, got ${JSON.stringify(error)}`);
  return data.deliveries;
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


async function setPaused(paused: boolean): Promise<Lane> {
  const { data, error } = await admin.PUT("/lanes/{lane}", {
    params: { path: { lane: SHARED } },
    body: { paused },
  });
  check(data !== undefined, `PUT /lanes/${SHARED} paused ${paused}, got ${JSON.stringify(error)}`);
  check(data.paused === paused, `the lane's paused ${paused}, got ${data.paused}`);
  return data;
}

// Jobs whose order a step checks are submitted to a paused lane, so nothing starts before the
// step has seen the order; the lane is resumed however the step ends. A failed check cancels the
// step's jobs (`mine`, filled by the body), so the next step starts from an empty lane.
async function whilePaused(body: () => Promise<void>, mine: number[] = []): Promise<void> {
  await setPaused(true);
  try {
    await body();
  } catch (e) {
    for (const id of mine) await user.POST("/jobs/{id}/cancel", { params: { path: { id } } });
    throw e;
  } finally {
    await setPaused(false);
  }
}

async function sharedLane(client: Client): Promise<Lane | undefined> {
  const { data, error } = await client.GET("/lanes", { params: { query: { queuedLimit: 200 } } });
  check(data !== undefined, `GET /lanes, got ${JSON.stringify(error)}`);
  return data.lanes.find((l) => l.lane === SHARED);
}

// A job queued behind a running one, in a lane that runs: its waitingFor, and what that says of
// when it starts.
async function queuedBehindARunningJob(): Promise<components["schemas"]["Waiting"]> {
  const running = await submit(user, { kind: "demo", payload: { steps: 100, stepMillis: 200 } });
  const queued = await submit(user, { kind: "demo", payload: quick });
  try {
    check(queued.job.status === "queued", `queued behind job ${running.job.id}: one slot`);
    check(queued.job.waitingFor !== null, "waitingFor on a queued job");
    check(queued.job.waitingFor.lanePausedAt === null, "the lane is not paused");
    return queued.job.waitingFor;
  } finally {
    await cancel(queued.job.id);
    await cancel(running.job.id);
  }
}

// A fresh server's lane has finished no job: a queued job has no estimate yet.
async function noStartEstimateWithoutHistory(): Promise<void> {
  const waiting = await queuedBehindARunningJob();
  check(waiting.estimatedStart === null, "no estimate before a job of the lane finished");
}

async function aStartEstimateFromTheLanesHistory(): Promise<void> {
  const eta = (await queuedBehindARunningJob()).estimatedStart;
  check(eta !== null, "an estimate: jobs of this lane finished in earlier steps");
  check(Date.parse(eta.from) <= Date.parse(eta.to), `from ${eta.from} <= to ${eta.to}`);
  check(eta.samples >= 1, `an estimate rests on finished jobs, got ${eta.samples}`);
}

async function pauseShowsInLanes(): Promise<void> {
  await whilePaused(async () => {
    const lane = await sharedLane(admin);
    check(lane !== undefined && lane.paused, `GET /lanes shows ${SHARED} paused`);
    check(lane.pausedAt !== null && lane.pausedBy !== null, "who paused it and when");
  });
  const lane = await sharedLane(admin);
  check(lane === undefined || !lane.paused, `GET /lanes shows ${SHARED} running again`);
}

async function position(id: number): Promise<number> {
  const j = await job(id);
  check(j.status === "queued" && j.position !== null, `job ${id} queued with a place`);
  return j.position;
}

async function prioritiesOrderOwnJobsAndRunNext(): Promise<void> {
  const ids: { low: number; normal: number; high: number } = { low: 0, normal: 0, high: 0 };
  const mine: number[] = [];
  await whilePaused(async () => {
    for (const priority of ["low", "normal", "high"] as const) {
      const { job: j } = await submit(user, { kind: "demo", payload: quick, priority });
      mine.push(j.id);
      check(j.priority === priority, `priority ${priority}, got ${j.priority}`);
      ids[priority] = j.id;
    }
    const unnamed = await submit(user, { kind: "demo", payload: quick });
    check(unnamed.job.priority === "normal", `normal by default, got ${unnamed.job.priority}`);
    await cancel(unnamed.job.id);
    const order = async () =>
      [await position(ids.high), await position(ids.normal), await position(ids.low)].join(",");
    check((await order()) === "1,2,3", `high, normal, low in the lane, got ${await order()}`);

    const waiting = (await job(ids.low)).waitingFor;
    check(waiting !== null, "waitingFor on a queued job");
    check(waiting.lanePausedAt !== null, "waitingFor says the lane is paused");
    check(waiting.estimatedStart === null, "no estimate while the lane is paused");

    const patched = await user.PATCH("/jobs/{id}", {
      params: { path: { id: ids.low } },
      body: { priority: "high" },
    });
    check(patched.data !== undefined, `PATCH priority, got ${JSON.stringify(patched.error)}`);
    check(patched.data.priority === "high", `now high, got ${patched.data.priority}`);
    // Among equal priorities the older job goes first: the patched one was submitted first.
    check(patched.data.position === 1, `the older high job first, got ${patched.data.position}`);

    const next = await admin.POST("/jobs/{id}/run-next", { params: { path: { id: ids.normal } } });
    check(next.data !== undefined, `run-next, got ${JSON.stringify(next.error)}`);
    check(next.data.priority === "next", `priority next, got ${next.data.priority}`);
    check(next.data.status === "queued", `still queued in a paused lane, got ${next.data.status}`);
    check(next.data.position === 1, `the head of the lane, got ${next.data.position}`);
    const lane = await sharedLane(admin);
    check(lane !== undefined, `GET /lanes lists ${SHARED}`);
    const queued = lane.queuedJobs.map((q) => q.id).join(",");
    const expected = [ids.normal, ids.low, ids.high].join(",");
    check(queued === expected, `GET /lanes in the order ${expected}, got ${queued}`);
  }, mine);
  const ended: Job[] = [];
  for (const id of [ids.normal, ids.low, ids.high]) {
    ended.push(await until(id, finished, "finished"));
  }
  for (const j of ended) {
    check(j.status === "succeeded" && j.dispatchedAt !== null, `job ${j.id} ran: ${j.status}`);
  }
  const started = ended.map((j) => Date.parse(j.dispatchedAt ?? ""));
  check(
    started[0]! <= started[1]! && started[1]! <= started[2]!,
    `dispatched in the lane's order, got ${ended.map((j) => j.dispatchedAt).join(", ")}`,
  );
  const late = await user.PATCH("/jobs/{id}", {
    params: { path: { id: ids.high } },
    body: { priority: "low" },
  });
  check(late.response.status === 409, `409 for a finished job, got ${late.response.status}`);
}

async function bulkCancelThenRetry(): Promise<void> {
  const mine: number[] = [];
  await whilePaused(async () => {
    for (let i = 0; i < 3; i++) {
      const payload = { steps: 2, stepMillis: 10 };
      const { job: j } = await submit(user, { kind: "demo", payload });
      mine.push(j.id);
    }
    const { data, error } = await admin.POST("/jobs/cancel", {
      body: { userId, status: ["queued"] },
    });
    check(data !== undefined, `POST /jobs/cancel, got ${JSON.stringify(error)}`);
    check(data.cancelledCount === 3, `3 cancelled, got ${data.cancelledCount}`);
    check(data.cancelled.join(",") === mine.join(","), `ids ${mine}, got ${data.cancelled}`);
    check(data.cancelRequestedCount === 0 && data.remaining === 0 && !data.more, "nothing left");
    for (const id of mine) {
      check((await job(id)).status === "cancelled", `job ${id} cancelled`);
    }
  }, mine);
  const old = mine[0]!;
  const retried = await user.POST("/jobs/{id}/retry", { params: { path: { id: old } } });
  check(retried.data !== undefined, `retry, got ${JSON.stringify(retried.error)}`);
  check(retried.response.status === 201, `201 for a retry, got ${retried.response.status}`);
  const fresh = retried.data;
  check(fresh.retryOf === old && fresh.id !== old, `a new job with retryOf ${old}`);
  check(fresh.kind === "demo" && fresh.payload["steps"] === 2, "the old job's kind and payload");
  check((await job(old)).retriedBy === fresh.id, `the old job's retriedBy ${fresh.id}`);
  const again = await user.POST("/jobs/{id}/retry", { params: { path: { id: old } } });
  check(again.response.status === 409, `409 for a second retry, got ${again.response.status}`);
  const done = await until(fresh.id, finished, "finished");
  check(done.status === "succeeded", `the retry succeeded, got ${done.status}`);
  const twice = await user.POST("/jobs/{id}/retry", { params: { path: { id: fresh.id } } });
  check(twice.response.status === 409, `409 for a succeeded job, got ${twice.response.status}`);
}

function checkCost(cost: Cost, what: string): void {
  check(cost.billedSeconds > 0, `${what}: billed seconds, got ${cost.billedSeconds}`);
  check(cost.vcpuSeconds > 0 && cost.gbSeconds > 0, `${what}: vCPU- and GB-seconds`);
  check(cost.usd >= 0, `${what}: dollars, got ${cost.usd}`);
  check(["on-demand", "spot", "mixed"].includes(cost.capacity), `${what}: ${cost.capacity}`);
}

async function costAndUsage(): Promise<void> {
  const { job: j } = await submit(user, { kind: "demo", payload: quick });
  // A worker stops when its lane is empty; then its time is shared out and the cost appears.
  const billed = await until(j.id, (x) => finished(x) && x.cost !== null, "billed");
  check(billed.cost !== null, "a cost");
  checkCost(billed.cost, `job ${j.id}`);
  const day = 86_400_000;
  const range = {
    from: new Date(Date.now() - day).toISOString(),
    to: new Date(Date.now() + day).toISOString(),
  };
  const own = await user.GET("/users/{userId}/usage", {
    params: { path: { userId }, query: range },
  });
  check(own.data !== undefined, `GET /users/${userId}/usage, got ${JSON.stringify(own.error)}`);
  check(own.data.userId === userId && own.data.jobs >= 1, `billed jobs, got ${own.data.jobs}`);
  check(own.data.cost !== null, "the user's cost");
  checkCost(own.data.cost, "usage");
  const other = await user.GET("/users/{userId}/usage", {
    params: { path: { userId: quotaUserId }, query: range },
  });
  check(other.response.status === 404, `404 for another's usage, got ${other.response.status}`);
  const all = await admin.GET("/usage", { params: { query: range } });
  check(all.data !== undefined, `GET /usage, got ${JSON.stringify(all.error)}`);
  const row = all.data.users.find((u) => u.userId === userId);
  check(row !== undefined && row.jobs === own.data.jobs, `GET /usage lists ${userId}`);
}

async function laneHistory(): Promise<void> {
  const { data, error } = await admin.GET("/lanes/history", { params: { query: { hours: 1 } } });
  check(data !== undefined, `GET /lanes/history, got ${JSON.stringify(error)}`);
  check(data.bucketSeconds === 100, `100 s buckets over an hour, got ${data.bucketSeconds}`);
  const lane = data.lanes.find((l) => l.lane === SHARED);
  check(lane !== undefined, `the history of ${SHARED}, where this program's jobs ran`);
  check(lane.buckets.length === 36, `36 buckets, got ${lane.buckets.length}`);
  const started = lane.buckets.reduce((n, b) => n + b.started, 0);
  check(started >= 5, `this program's jobs dispatched in the span, got ${started}`);
  for (const b of lane.buckets) {
    check((b.started === 0) === (b.waitP50Seconds === null), `p50 null iff none started: ${b.end}`);
    const p50 = b.waitP50Seconds;
    const p90 = b.waitP90Seconds;
    check(p50 === null || (p90 !== null && p50 <= p90), `p50 <= p90 at ${b.end}`);
  }
}

async function readOnlyAdminSeesButChangesNothing(): Promise<void> {
  const lanes = await readOnlyAdmin.GET("/lanes");
  check(lanes.response.status === 200 && lanes.data !== undefined, "200 on GET /lanes");
  const pause = await readOnlyAdmin.PUT("/lanes/{lane}", {
    params: { path: { lane: SHARED } },
    body: { paused: true },
  });
  check(pause.response.status === 403, `403 on PUT /lanes, got ${pause.response.status}`);
  check(pause.error !== undefined && pause.error.status === 403, "a problem saying why");
  const bulk = await readOnlyAdmin.POST("/jobs/cancel", { body: { userId } });
  check(bulk.response.status === 403, `403 on POST /jobs/cancel, got ${bulk.response.status}`);
  const lane = await sharedLane(admin);
  check(lane === undefined || !lane.paused, "the lane still runs");
}

async function artifactsListedAndDownloadedByteIdentical(): Promise<void> {
  const { job: j } = await submit(user, { kind: published.kind, payload: {} });
  const done = await until(j.id, finished, "finished");
  check(done.status === "succeeded", `succeeded, got ${done.status}: ${done.error}`);
  const path = { id: j.id };
  const { data, error } = await user.GET("/jobs/{id}/artifacts", { params: { path } });
  check(data !== undefined, `GET /jobs/${j.id}/artifacts, got ${JSON.stringify(error)}`);
  check(data.jobId === j.id && data.status === "succeeded", `job ${j.id}, succeeded`);
  const names = data.artifacts.map((a) => a.name).join(",");
  check(names === published.names.join(","), `exactly ${published.names}, got ${names}`);
  const downloaded = new Map<string, Buffer>();
  for (const a of data.artifacts) {
    const got = await user.GET("/jobs/{id}/artifacts/{name}", {
      params: { path: { id: j.id, name: a.name } },
      parseAs: "arrayBuffer",
    });
    check(got.data !== undefined, `${a.name} downloaded, got ${got.response.status}`);
    const bytes = Buffer.from(got.data);
    check(bytes.length === a.bytes, `${a.name}: ${a.bytes} bytes listed, ${bytes.length} came`);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    check(sha256 === a.sha256, `${a.name}: sha256 ${a.sha256} listed, ${sha256} came`);
    const header = got.response.headers.get("Buildqueue-Artifact-Sha256");
    check(header === a.sha256, `${a.name}: Buildqueue-Artifact-Sha256 ${header}`);
    downloaded.set(a.name, bytes);
  }
  const report = downloaded.get("report.txt")?.toString("utf8");
  check(report === published.report, `report.txt as written, got ${JSON.stringify(report)}`);
  const random = downloaded.get("random.bin")?.length;
  check(random === published.randomBytes, `random.bin of ${published.randomBytes} bytes: ${random}`);
  // quotaUser is another user: neither the list nor a file is theirs to see.
  const list = await quotaUser.GET("/jobs/{id}/artifacts", { params: { path } });
  check(list.response.status === 404, `404 on another's list, got ${list.response.status}`);
  const file = await quotaUser.GET("/jobs/{id}/artifacts/{name}", {
    params: { path: { id: j.id, name: "report.txt" } },
    parseAs: "arrayBuffer",
  });
  check(file.response.status === 404, `404 on another's file, got ${file.response.status}`);
}

async function webhookRegisteredDeliveredAndDeleted(): Promise<void> {
  const path = { name: `ts-${run}` };
  const body = { url: webhookUrl, userId };
  const denied = await user.PUT("/webhooks/{name}", { params: { path }, body });
  check(denied.response.status === 403, `403 for a user, got ${denied.response.status}`);

  const made = await admin.PUT("/webhooks/{name}", { params: { path }, body });
  check(made.data !== undefined, `PUT /webhooks/${path.name}, got ${JSON.stringify(made.error)}`);
  check(made.response.status === 201, `201 for a new endpoint, got ${made.response.status}`);
  const secret = made.data.secret;
  check(secret !== undefined && secret.startsWith("whsec_"), "the generated secret, shown once");
  const prints = made.data.secretFingerprints;
  check(prints.length === 1 && prints[0]!.startsWith("sha256:"), `a fingerprint, got ${prints}`);

  const all = await admin.GET("/webhooks");
  check(all.data !== undefined, `GET /webhooks, got ${JSON.stringify(all.error)}`);
  const listed = all.data.webhooks.find((w) => w.name === path.name);
  check(listed !== undefined, `GET /webhooks lists ${path.name}`);
  check(listed.url === webhookUrl && listed.userId === userId, "its url and user");
  check(listed.secretFingerprints.join() === prints.join(), "its secret's fingerprint");
  check(!JSON.stringify(all.data).includes(secret), "no secret in GET /webhooks");

  const { job: j } = await submit(user, { kind: "demo", payload: quick });
  const done = await until(j.id, finished, "finished");
  check(done.status === "succeeded", `succeeded, got ${done.status}`);
  const history = await user.GET("/jobs/{id}/events", { params: { path: { id: j.id } } });
  check(history.data !== undefined, `the job's events, got ${JSON.stringify(history.error)}`);
  const eventIds = history.data.events.map((e) => e.id);
  const log = await eventually(`job ${j.id}'s events ${eventIds} delivered`, async () => {
    const mine = (await deliveries(path.name)).filter((d) => d.jobId === j.id);
    const delivered = new Set(mine.filter((d) => d.status === "delivered").map((d) => d.eventId));
    return eventIds.every((id) => delivered.has(id)) ? mine : undefined;
  });
  const succeeded = log.find((d) => d.eventType === "succeeded");
  check(succeeded !== undefined, "the job's succeeded event in the log");
  check(succeeded.lastStatus === 200 && succeeded.deliveredAt !== null, "acknowledged by 200");

  const replayed = await admin.POST("/webhooks/{name}/deliveries/{deliveryId}/replay", {
    params: { path: { ...path, deliveryId: succeeded.id } },
  });
  check(replayed.response.status === 409, `409: delivered, not dead; got ${replayed.response.status}`);
  check(replayed.error !== undefined && replayed.error.status === 409, "a problem saying why");
  const unknown = Math.max(...log.map((d) => d.id)) + 1_000_000;
  const none = await admin.POST("/webhooks/{name}/deliveries/{deliveryId}/replay", {
    params: { path: { ...path, deliveryId: unknown } },
  });
  check(none.response.status === 404, `404 for no such delivery, got ${none.response.status}`);

  const deleted = await admin.DELETE("/webhooks/{name}", { params: { path } });
  check(deleted.response.status === 204, `204 on DELETE, got ${deleted.response.status}`);
  const gone = await admin.GET("/webhooks/{name}", { params: { path } });
  check(gone.response.status === 404, `404 once deleted, got ${gone.response.status}`);
}

async function aDeadDeliveryReplayed(): Promise<void> {
  const path = { name: dead.endpoint, deliveryId: dead.id };
  const before = (await deliveries(dead.endpoint)).find((d) => d.id === dead.id);
  check(before !== undefined && before.status === "dead", `delivery ${dead.id} dead`);
  const replayed = await admin.POST("/webhooks/{name}/deliveries/{deliveryId}/replay", {
    params: { path },
  });
  check(replayed.data !== undefined, `a replay, got ${JSON.stringify(replayed.error)}`);
  check(replayed.response.status === 202, `202 for a replay, got ${replayed.response.status}`);
  check(replayed.data.id === dead.id, `the delivery's id, got ${replayed.data.id}`);
  check(replayed.data.status === "pending", `pending again, got ${replayed.data.status}`);
  const again = await admin.POST("/webhooks/{name}/deliveries/{deliveryId}/replay", {
    params: { path },
  });
  check(again.response.status === 409, `409: no longer dead, got ${again.response.status}`);
  await eventually(`delivery ${dead.id} delivered`, async () => {
    const d = (await deliveries(dead.endpoint)).find((x) => x.id === dead.id);
    return d?.status === "delivered" ? d : undefined;
  });
}

const steps: [string, () => Promise<void>][] = [
  ["no start estimate without lane history", noStartEstimateWithoutHistory],
  ["submit with an idempotency key, poll", submitWithIdempotencyKeyAndPoll],
  ["a supersede key cancels the earlier job", supersedeKeyCancelsTheEarlierJob],
  ["list with next", listPagesWithNext],
  ["log with since", logSince],
  ["cancel", cancelAQueuedOrRunningJob],
  ["quota 429", quotaAnswers429],
  ["a start estimate from the lane's history", aStartEstimateFromTheLanesHistory],
  ["pause and resume a lane", pauseShowsInLanes],
  ["priorities, PATCH and run-next in a paused lane", prioritiesOrderOwnJobsAndRunNext],
  ["bulk cancel, then retry", bulkCancelThenRetry],
  ["a job's cost and the usage routes", costAndUsage],
  ["lane history", laneHistory],
  ["a read-only admin", readOnlyAdminSeesButChangesNothing],
  ["artifacts listed and downloaded byte-identical", artifactsListedAndDownloadedByteIdentical],
  ["a webhook registered, delivered to and deleted", webhookRegisteredDeliveredAndDeleted],
  ["a dead webhook delivery replayed", aDeadDeliveryReplayed],
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
