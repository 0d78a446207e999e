import { scrapeText } from "../../src/runtime/metrics/labelled_series.ts";
import t from "tap";
import { tierHarness } from "../helpers/tier_harness.ts";
import { waitFor } from "../helpers/wait_for.ts";

// Local retention by age, end to end through the tier service: an uploaded segment stays local until
// its newest message is `local_retention_age` old, then is evicted, even while a stored consumer
// offset lags behind it (the consumer barrier holds back total retention only).

const ageMs = 20_000;

t.test("uploaded segments are evicted once older than local_retention_age, a lagging consumer or not", async (t) => {
  const { partition, clock, produce, ticks, lastSealedEnd } = await tierHarness(t, {
    ageMs,
    sizeBytes: null,
  });
  await produce(30);
  await partition.offsets.set("lagging", 0);
  const sealed = () => partition.log.segments.filter((s) => s.sealed);
  const remote = () => sealed().filter((s) => s.location === "remote");
  await waitFor(
    "every sealed segment uploaded",
    () => partition.superblock.tieredUpToOffset === lastSealedEnd() + 1,
    ticks(),
  );
  const uploadedAtMs = clock.nowMs();
  t.ok(uploadedAtMs < ageMs, `uploaded at ${uploadedAtMs} ms, before the segments are ${ageMs} ms old`);
  await waitFor(
    "the clock to reach a second before local_retention_age",
    () => clock.nowMs() >= ageMs - 1000,
    ticks(),
  );
  t.same(remote(), [], "uploaded but younger than local_retention_age: all still local");
  await waitFor("every sealed segment evicted", () => remote().length === sealed().length, ticks(30_000));
  const newestUs = Math.max(...sealed().map((s) => s.maxTimestampUs));
  t.ok(clock.wallMs() * 1000 - newestUs >= ageMs * 1000, "not before the newest of them was that old");
  t.equal(partition.offsets.get("lagging"), 0, "the lagging consumer's offset did not hold eviction back");
  t.ok(partition.log.segments.at(-1)!.location !== "remote", "the active segment stays local");
});

t.test("the gauges: bytes per partition local and remote, and the age envelope's overshoot while uploads lag", async (t) => {
  const { partition, sim, clock, registry, produce, ticks, lastSealedEnd, tier } = await tierHarness(t, {
    ageMs,
    sizeBytes: null,
  });
  const gauge = async (name: string) => {
    const line = (await scrapeText(registry)).split("\n").find((l) =>
      l.startsWith(`${name} `) || l.startsWith(`${name}{`)
    );
    return Number(line?.split(" ").at(-1));
  };
  sim.faults = { outages: [{ fromMs: 0, toMs: 2 * ageMs }] };
  await produce(30);
  const sealedBytes = () =>
    partition.log.segments.filter((s) => s.sealed).reduce((n, s) => n + s.sizeBytes, 0);
  t.equal(await gauge("strata_tier_local_overshoot_bytes"), 0, "young segments: no overshoot");
  await waitFor(
    "the clock to pass local_retention_age by a second",
    () => clock.nowMs() >= ageMs + 1000,
    ticks(),
  );
  t.equal(partition.superblock.tieredUpToOffset, 0, "the store is down: nothing uploaded");
  t.equal(
    await gauge("strata_tier_local_overshoot_bytes"),
    sealedBytes(),
    "every sealed segment is past the age",
  );
  t.equal(await gauge("strata_tier_partition_local_bytes"), partition.log.localSizeBytes);
  t.equal(await gauge("strata_tier_partition_remote_bytes"), 0);
  await waitFor(
    "the floor to catch up once the store is back",
    () => partition.superblock.tieredUpToOffset === lastSealedEnd() + 1,
    ticks(60_000),
  );
  await waitFor(
    "every sealed segment evicted",
    () => partition.log.segments.every((s) => !s.sealed || s.location === "remote"),
    ticks(10_000),
  );
  // The overshoot is as the last eviction look found it: the look after the eviction's write.
  await waitFor(
    "the look after the eviction to see no overshoot",
    () => tier.localOvershootBytes() === 0,
    ticks(11_000),
  );
  t.equal(await gauge("strata_tier_local_overshoot_bytes"), 0, "evicted: the overshoot is gone");
  t.equal(await gauge("strata_tier_partition_remote_bytes"), sealedBytes(), "the sealed bytes are remote");
  t.equal(
    await gauge("strata_tier_partition_remote_segments"),
    partition.log.segments.filter((s) => s.sealed).length,
    "and so are the sealed segments",
  );
  t.equal(
    await gauge("strata_tier_partition_local_bytes"),
    partition.log.localSizeBytes,
    "the active segment's",
  );
});
