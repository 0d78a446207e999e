import t from "tap";
import { StrataClient } from "../../src/client/strata_client.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { configCopy } from "../helpers/config_copy.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

const messagesTarget = 20_000;
const batchSize = 100;
const partitions = 3;

interface Acked {
  partition: number;
  baseOffset: number;
  payloads: Uint8Array[];
  keys: string[];
}

t.test("SIGKILL mid-produce loses no acknowledged message: every one reads back byte for byte after restart", async (t) => {
  const dir = tempDir(t, "strata-crash-");
  const configPath = configCopy(dir);
  const first = await spawnServer(["--config", configPath]);
  t.teardown(() => first.stop("SIGKILL"));
  const client = new StrataClient({ baseUrl: first.baseUrl });
  await client.createStream("crash");
  await client.createTopic("crash", { name: "t", partitions, segment_size: "1 MiB" });

  const rng = new Rng(2026);
  const acked: Acked[] = [];
  let ackedMessages = 0;
  let killed = false;
  // One producer per partition, each with two requests in flight, so acks race the kill.
  const producer = async (partition: number) => {
    const send = async () => {
      while (!killed) {
        const payloads = Array.from({ length: batchSize }, () => {
          const p = new Uint8Array(rng.int(1, 1500));
          for (let i = 0; i < p.length; i += 97) p[i] = rng.int(0, 255);
          return p;
        });
        const keys = payloads.map((_, i) => `k-${partition}-${i}`);
        try {
          const r = await client.produce(
            "crash",
            "t",
            payloads.map((payload, i) => ({ payload, key: keys[i]! })),
            partition,
          );
          // Every acknowledged batch is checked, including those acknowledged as the kill lands.
          acked.push({ partition, baseOffset: r.base_offset, payloads, keys });
          ackedMessages += r.count;
          if (ackedMessages >= messagesTarget && !killed) {
            killed = true;
            first.child.kill("SIGKILL");
          }
        } catch {
          return; // the server is gone: this batch was never acknowledged
        }
      }
    };
    await Promise.all([send(), send()]);
  };
  await Promise.all([0, 1, 2].map(producer));
  t.equal(await first.stop("SIGKILL"), null, "the first server died by SIGKILL");
  t.ok(ackedMessages >= messagesTarget, `${ackedMessages} messages acknowledged before the kill`);

  const second = await spawnServer(["--config", configPath]);
  t.teardown(() => second.stop("SIGKILL"));
  const reader = new StrataClient({ baseUrl: second.baseUrl, encoding: "msgpack" });
  const mismatches: string[] = [];
  for (let p = 0; p < partitions; p++) {
    const stored = new Map<number, { payload: Uint8Array | null; key: string | null }>();
    let offset = 0;
    for (let round = 0; round < 10_000; round++) {
      const r = await reader.poll("crash", "t", p, { offset, count: 5000, maxBytes: 8 * 1024 * 1024 });
      if (r.messages.length === 0) break;
      for (const m of r.messages) stored.set(m.offset, { payload: m.payload, key: m.key });
      offset = r.next_offset;
    }
    const offsets = [...stored.keys()];
    if (offsets.some((o, i) => o !== i)) mismatches.push(`partition ${p}: offsets are not dense from 0`);
    for (const batch of acked.filter((a) => a.partition === p)) {
      batch.payloads.forEach((payload, i) => {
        const got = stored.get(batch.baseOffset + i);
        if (got === undefined || got.key !== batch.keys[i] || Buffer.compare(got.payload!, payload) !== 0) {
          mismatches.push(`partition ${p} offset ${batch.baseOffset + i}`);
        }
      });
    }
    const stats = await reader.partition("crash", "t", p);
    t.ok(
      (stats["segments"] as unknown[]).length > 1,
      `partition ${p} spans ${(stats["segments"] as unknown[]).length} segments`,
    );
  }
  t.same(mismatches.slice(0, 10), [], `all ${ackedMessages} acknowledged messages read back byte for byte`);
  t.equal(await second.stop("SIGTERM"), 0);
});
