// rolling-rate-limiter's side of the peers bench (local/sqs-emulator/benches/peers):
//   node limiter.mjs <redis-url> <namespace> <callers> <keys> <attempts-per-key>
// Attempt i goes to key i % keys, so every key gets its attempts spread
// over the run; `callers` async callers share one ioredis connection (the
// bench's Rust side does the same with one multiplexed connection).
// Prints one JSON line: attempts, admitted, elapsed_s, and per key the
// admitted timestamps (µs), which the bench checks with the same code as
// ours for the most admitted in any rolling window.
import Redis from 'ioredis';
import microtime from 'microtime';
import { RedisRateLimiter } from 'rolling-rate-limiter';

const [url, namespace, callers, keys, perKey] = process.argv.slice(2);
const [nCallers, nKeys, nPerKey] = [callers, keys, perKey].map(Number);
if (!url || !namespace || !(nCallers > 0 && nKeys > 0 && nPerKey > 0)) {
  console.error('usage: node limiter.mjs <redis-url> <namespace> <callers> <keys> <attempts-per-key>');
  process.exit(2);
}

// The library stamps each attempt with microtime.now() synchronously before
// its MULTI goes out, and does not return the stamp: record it here, so the
// admitted timestamps are the ones the library itself decided with.
const now = microtime.now;
let lastStamp = 0;
microtime.now = () => (lastStamp = now());

const client = new Redis(url, { enableAutoPipelining: false });
const limiter = new RedisRateLimiter({ client, namespace, interval: 60_000, maxInInterval: 60 });
const stamps = Array.from({ length: nKeys }, () => []);
const total = nKeys * nPerKey;
let next = 0;
let admitted = 0;

async function caller() {
  for (;;) {
    const i = next++;
    if (i >= total) return;
    const key = i % nKeys;
    const decision = limiter.limitWithInfo(`k${key}`);
    const stamp = lastStamp;
    const info = await decision;
    if (!info.blocked) {
      admitted++;
      stamps[key].push(stamp);
    }
  }
}

await client.ping();
const started = process.hrtime.bigint();
await Promise.all(Array.from({ length: nCallers }, caller));
const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
await client.quit();
process.stdout.write(JSON.stringify({ attempts: total, admitted, elapsed_s: elapsed, stamps }) + '\n');
