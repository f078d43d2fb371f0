// BullMQ's side of the peers bench (local/sqs-emulator/benches/peers):
//   node queue.mjs <redis-url> <prefix> <jobs> <concurrency> <paced-jobs> <paced-per-s>
// 1. Adds <jobs> jobs (addBulk, 100 a call, 8 producers: as our side sends
//    100 at a time from 8 producers), reading used_memory before and after,
//    so the bytes per waiting job are counted as on our side.
// 2. One Worker with <concurrency> processes and completes them all
//    (removeOnComplete: our side deletes each message once done).
//    Concurrency 1 is BullMQ's ordered mode, a single worker per queue;
//    its groups, which order per key, are in BullMQ Pro only.
// 3. With the worker running, adds <paced-jobs> at <paced-per-s>, each
//    carrying its enqueue time, and records enqueue → processor start.
// Prints one JSON line.
import { Queue, Worker } from 'bullmq';
import Redis from 'ioredis';

const [url, prefix, ...nums] = process.argv.slice(2);
const [jobs, concurrency, pacedJobs, pacedRate] = nums.map(Number);
if (!url || !prefix || !(jobs > 0 && concurrency > 0 && pacedJobs > 0 && pacedRate > 0)) {
  console.error('usage: node queue.mjs <redis-url> <prefix> <jobs> <concurrency> <paced-jobs> <paced-per-s>');
  process.exit(2);
}
const BODY = { mall_id: 'acme', event_no: 90001, resource: { product_no: 12345 } };
const parsed = new URL(url);
const connection = { host: parsed.hostname, port: Number(parsed.port || 6379), maxRetriesPerRequest: null };
const probe = new Redis(url);
const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await probe.info('memory'))[1]);
const queue = new Queue('bench', { connection, prefix });
await queue.waitUntilReady();
const nowUs = () => Number(process.hrtime.bigint() / 1000n) + epochOffsetUs;
// hrtime has no epoch; anchor it once so enqueue and start share one clock.
const epochOffsetUs = Date.now() * 1000 - Number(process.hrtime.bigint() / 1000n);

const memBefore = await usedMemory();
let started = process.hrtime.bigint();
let nextChunk = 0;
const chunks = Math.ceil(jobs / 100);
await Promise.all(
  Array.from({ length: 8 }, async () => {
    for (;;) {
      const c = nextChunk++;
      if (c >= chunks) return;
      const n = Math.min(100, jobs - c * 100);
      await queue.addBulk(
        Array.from({ length: n }, () => ({ name: 'e', data: BODY, opts: { removeOnComplete: true } })),
      );
    }
  }),
);
const addS = Number(process.hrtime.bigint() - started) / 1e9;
const bytesPerJob = ((await usedMemory()) - memBefore) / jobs;

let done = 0;
let latencies = null;
let finish;
let allDone = new Promise((r) => (finish = r));
let target = jobs;
started = process.hrtime.bigint();
const worker = new Worker(
  'bench',
  async (job) => {
    if (latencies && job.data.t) latencies.push(nowUs() - job.data.t);
    if (++done === target) finish();
  },
  { connection, prefix, concurrency },
);
await allDone;
const processS = Number(process.hrtime.bigint() - started) / 1e9;

// Paced phase: batches of 10 every 10 ms-equivalent of the asked rate.
latencies = [];
done = 0;
target = pacedJobs;
allDone = new Promise((r) => (finish = r));
const batch = 10;
const gapMs = (1000 * batch) / pacedRate;
const t0 = Date.now();
for (let i = 0; i < pacedJobs; i += batch) {
  const wait = t0 + (i / batch) * gapMs - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const n = Math.min(batch, pacedJobs - i);
  await queue.addBulk(
    Array.from({ length: n }, () => ({ name: 'e', data: { ...BODY, t: nowUs() }, opts: { removeOnComplete: true } })),
  );
}
await allDone;
await worker.close();
await queue.close();
await probe.quit();
process.stdout.write(
  JSON.stringify({ jobs, add_s: addS, process_s: processS, bytes_per_job: bytesPerJob, latencies_us: latencies }) + '\n',
);
