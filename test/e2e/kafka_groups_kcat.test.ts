import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf, kcat, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { spawnServer } from "../helpers/spawn_server.ts";

const unavailable = kcatUnavailable();

// librdkafka's consumer group (kcat -G) against the real server: a run consumes the topic through
// the group and commits; a second run of it resumes at the committed offsets, as does a third after
// the server restarted (the coordinator reads the offsets back from __consumer_offsets), and the HTTP
// API sees the group's offsets and the lag left.
t.test("kcat -G consumes through a group and resumes at its committed offsets", {
  skip: unavailable ?? false,
  timeout: 120_000,
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-kcat-groups-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = configCopy(dir);
  const env = { STRATA_KAFKA_DEFAULT_PARTITIONS: "3", STRATA_KAFKA_ADDRESS: "127.0.0.1:0" };
  let server = await spawnServer(["--config", config], env);
  t.teardown(() => server.stop("SIGKILL"));
  let broker = kafkaAddressOf(server.stderr());
  const produce = async (from: number, to: number) => {
    const lines = Array.from({ length: to - from }, (_, i) => `k${from + i}:v${from + i}`).join("\n") + "\n";
    const produced = await kcat(["-b", broker, "-t", "events", "-P", "-K:"], lines);
    t.equal(produced.code, 0, `kcat -P exits 0: ${produced.stderr}`);
  };
  const consume = async () => {
    const run = await kcat([
      "-b",
      broker,
      "-G",
      "readers",
      "events",
      "-X",
      "auto.offset.reset=earliest",
      "-e",
      "-f",
      "%s\n",
    ]);
    t.equal(run.code, 0, `kcat -G exits 0: ${run.stderr.slice(-2000)}`);
    return run.stdout.split("\n").filter((line) => line !== "").sort();
  };
  const values = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => `v${from + i}`).sort();

  await produce(0, 60);
  t.same(await consume(), values(0, 60), "the first run reads every record once");
  await produce(60, 75);
  t.same(await consume(), values(60, 75), "the second run resumes at the committed offsets");
  t.same(await consume(), [], "a third run finds nothing new");
  t.equal(await server.stop("SIGKILL"), null);
  server = await spawnServer(["--config", config], env);
  broker = kafkaAddressOf(server.stderr());
  await produce(75, 80);
  t.same(
    await consume(),
    values(75, 80),
    "after a restart, the run resumes at the offsets committed before it",
  );

  const group = await (await fetch(`${server.baseUrl}/groups/readers`)).json();
  t.equal(group.state, "Empty", "no member is left once kcat exits");
  t.equal(group.offsets.length, 3, "an offset for each partition");
  t.equal(group.offsets.reduce((n: number, o: { offset: number }) => n + o.offset, 0), 80, "at each end");
  t.ok(group.offsets.every((o: { lag: number }) => o.lag === 0), "no lag");
  const listed = await (await fetch(`${server.baseUrl}/groups`)).json();
  t.same(listed.groups.map((g: { group_id: string }) => g.group_id), ["readers"]);
});
