import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { Kafka, logLevel } from "kafkajs";
import { configCopy } from "../helpers/config_copy.ts";
import { httpValues } from "../helpers/kafka/isolated_reads.ts";
import { kafkaAddressOf } from "../helpers/kafka/kcat.ts";
import { type RunningServer, spawnServer } from "../helpers/spawn_server.ts";
import { waitFor } from "../helpers/wait_for.ts";

// Transactions survive a SIGKILL of their server: a committed transaction stays committed, one left
// open holds the last stable offset after the boot (the partition's producers rebuilt from its log)
// until the coordinator, which read __transaction_state back, aborts it at its timeout; a
// transactional id carries on from its state.
t.test("a SIGKILL keeps commits, and an open transaction is aborted at its timeout after the boot", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-txn-restart-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = configCopy(dir);
  let server: RunningServer = await spawnServer(["--config", config]);
  t.teardown(() => server.stop("SIGKILL"));
  const clientOf = (running: RunningServer) =>
    new Kafka({
      clientId: "strata-txn-restart",
      brokers: [kafkaAddressOf(running.stderr())],
      logLevel: logLevel.NOTHING,
    });
  let kafka = clientOf(server);
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: "r", numPartitions: 1 }] });
  await admin.disconnect();
  const committer = kafka.producer({ transactionalId: "a", maxInFlightRequests: 1, idempotent: true });
  await committer.connect();
  const first = await committer.transaction();
  await first.send({ topic: "r", messages: [{ value: "a1" }, { value: "a2" }] });
  await first.commit();
  const stalled = kafka.producer({ transactionalId: "b", transactionTimeout: 4000, idempotent: true });
  await stalled.connect();
  const open = await stalled.transaction();
  await open.send({ topic: "r", messages: [{ value: "b-open" }] });
  const other = kafka.producer({ transactionalId: "c", maxInFlightRequests: 1, idempotent: true });
  await other.connect();
  const after = await other.transaction();
  await after.send({ topic: "r", messages: [{ value: "c1" }] });
  await after.commit();
  await waitFor("the first commit to be readable", async () => {
    return (await httpValues(server.baseUrl, "r", "read_committed")).includes("a2");
  }, { deadlineMs: 10_000 });
  t.same(
    await httpValues(server.baseUrl, "r", "read_committed"),
    ["a1", "a2"],
    "b's open transaction holds the rest",
  );

  await Promise.all([committer, stalled, other].map((p) => p.disconnect()));
  t.equal(await server.stop("SIGKILL"), null, "SIGKILLed");
  server = await spawnServer(["--config", config]);
  kafka = clientOf(server);
  t.same(
    await httpValues(server.baseUrl, "r", "read_committed"),
    ["a1", "a2"],
    "after the boot the open transaction still holds the last stable offset",
  );
  await waitFor("the open transaction's abort at its timeout", async () => {
    return (await httpValues(server.baseUrl, "r", "read_committed")).includes("c1");
  }, { deadlineMs: 30_000 });
  t.same(
    await httpValues(server.baseUrl, "r", "read_committed"),
    ["a1", "a2", "c1"],
    "b's record is aborted",
  );
  t.same(
    await httpValues(server.baseUrl, "r", "read_uncommitted"),
    ["a1", "a2", "b-open", "c1"],
    "read_uncommitted still sees it",
  );
  const again = kafka.producer({ transactionalId: "a", maxInFlightRequests: 1, idempotent: true });
  await again.connect();
  t.teardown(() => again.disconnect());
  const next = await again.transaction();
  await next.send({ topic: "r", messages: [{ value: "a3" }] });
  await next.commit();
  await waitFor("the transactional id's next commit", async () => {
    return (await httpValues(server.baseUrl, "r", "read_committed")).includes("a3");
  }, { deadlineMs: 10_000 });
});
