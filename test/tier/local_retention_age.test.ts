import t from "tap";
import { tierHarness } from "../helpers/tier_harness.ts";

// Local retention by age, end to end through the tier service: an uploaded segment stays local until
// its newest message is `local_retention_age` old, then is evicted, even while a stored consumer
// offset lags behind it (the consumer barrier holds back total retention only).

const ageMs = 20_000;

t.test("uploaded segments are evicted once older than local_retention_age, a lagging consumer or not", async (t) => {
  const { partition, clock, produce, runUntil, lastSealedEnd } = await tierHarness(t, {
    ageMs,
    sizeBytes: null,
  });
  await produce(30);
  await partition.offsets.set("lagging", 0);
  const sealed = () => partition.log.segments.filter((s) => s.sealed);
  const remote = () => sealed().filter((s) => s.location === "remote");
  t.ok(
    await runUntil(() => partition.superblock.tieredUpToOffset === lastSealedEnd() + 1),
    "every sealed segment uploaded",
  );
  const uploadedAtMs = clock.nowMs();
  t.ok(uploadedAtMs < ageMs, `uploaded at ${uploadedAtMs} ms, before the segments are ${ageMs} ms old`);
  await runUntil(() => clock.nowMs() >= ageMs - 1000);
  t.same(remote(), [], "uploaded but younger than local_retention_age: all still local");
  t.ok(
    await runUntil(() => remote().length === sealed().length, 3000),
    "then every sealed segment is evicted",
  );
  const newestUs = Math.max(...sealed().map((s) => s.maxTimestampUs));
  t.ok(clock.wallMs() * 1000 - newestUs >= ageMs * 1000, "not before the newest of them was that old");
  t.equal(partition.offsets.get("lagging"), 0, "the lagging consumer's offset did not hold eviction back");
  t.ok(partition.log.segments.at(-1)!.location !== "remote", "the active segment stays local");
});
