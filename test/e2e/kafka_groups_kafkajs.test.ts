import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { Kafka, logLevel } from "kafkajs";
import { configCopy } from "../helpers/config_copy.ts";
import { type GroupMember, startGroupMember } from "../helpers/group_members.ts";
import { kafkaAddressOf } from "../helpers/kafka/kcat.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { realTime, waitFor } from "../helpers/wait_for.ts";

// kafkajs consumers in one group over a 12-partition topic, each a process of its own: three share
// the partitions; a fourth joins; one leaves; one is killed without leaving and its partitions move
// once its session lapses. Every record produced is consumed, and at the end the group's committed
// offsets reach every partition's end.
const partitions = 12;
const perRound = 240;
const sessionTimeoutMs = 6000;
const topic = "orders";
const group = "billing";
/** The waits of the test: checked every 50 ms of real time, for a minute at most. */
const minute = { deadlineMs: 60_000, pace: realTime(50) };

t.test("a kafkajs consumer group through joins, a leave and a kill", { timeout: 240_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-groups-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServer(["--config", configCopy(dir)]);
  t.teardown(() => server.stop("SIGKILL"));
  const broker = kafkaAddressOf(server.stderr());
  const kafka = new Kafka({ clientId: "strata-test", brokers: [broker], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }] });
  const producer = kafka.producer();
  await producer.connect();
  t.teardown(() => producer.disconnect());

  const members: GroupMember[] = [];
  const start = (name: string) => {
    const member = startGroupMember(name, broker, group, topic, sessionTimeoutMs);
    members.push(member);
    t.teardown(() => member.stop("SIGKILL"));
    return member;
  };
  const live = () => members.filter((m) => !m.exited);
  /** Every live member holds a share, the shares are disjoint, and together they cover every partition. */
  const balanced = (count: number) => {
    const shares = live().map((m) => m.assigned);
    const all = shares.flat().sort((a, b) => a - b);
    return shares.length === count && shares.every((s) => s.length >= Math.floor(partitions / count)) &&
      all.length === partitions && all.every((p, i) => p === i);
  };
  const consumed = () => {
    const values = new Map<string, number>();
    for (const m of members) for (const r of m.records) values.set(r.value!, (values.get(r.value!) ?? 0) + 1);
    return values;
  };
  let produced: string[] = [];
  const produceRound = async (round: string) => {
    const values = Array.from({ length: perRound }, (_, i) => `${round}-${i}`);
    await producer.send({
      topic,
      messages: values.map((value, i) => ({ partition: i % partitions, value })),
    });
    produced = [...produced, ...values];
    await waitFor(
      `every record of round ${round} consumed`,
      () => produced.every((v) => consumed().has(v)),
      minute,
    );
  };
  const describe = () => admin.describeGroups([group]).then((d) => d.groups[0]!);

  const first = [start("a"), start("b"), start("c")];
  await waitFor("three members sharing the 12 partitions", () => balanced(3), minute);
  await produceRound("one");
  t.ok(
    [...consumed().values()].every((n) => n === 1),
    "while all three stay up, each record is consumed once",
  );
  t.same(first.map((m) => m.assigned.length), [4, 4, 4], "four partitions each");
  t.equal((await describe()).state, "Stable");

  start("d");
  await waitFor("four members after the fourth joined", () => balanced(4), minute);
  await produceRound("two");
  t.equal((await describe()).members.length, 4, "DescribeGroups lists four members");

  await first[0]!.stop("SIGTERM");
  await waitFor("three members after one left", () => balanced(3), minute);
  await produceRound("three");

  const killed = first[1]!;
  const orphaned = killed.assigned;
  const killedAtMs = Date.now();
  await killed.stop("SIGKILL");
  const movedAfterMs = await waitFor("two members after one was killed", () => balanced(2), minute);
  t.ok(
    movedAfterMs >= sessionTimeoutMs - 1500,
    `the killed member's partitions ${orphaned} moved after its session lapsed (${movedAfterMs} ms after the kill)`,
  );
  t.ok(Date.now() - killedAtMs < sessionTimeoutMs + 20_000, "and not much later");
  await produceRound("four");

  const missing = produced.filter((v) => !consumed().has(v));
  t.same(missing, [], "at least once: no record produced was skipped");
  const offsets = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  const ends = await admin.fetchTopicOffsets(topic);
  await waitFor("the committed offsets to reach every partition's end", async () => {
    const now = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    return now[0]!.partitions.every((p) => p.offset === ends.find((e) => e.partition === p.partition)!.high);
  }, { deadlineMs: 30_000, pace: realTime(50) });
  t.equal(offsets[0]!.partitions.length, partitions, "an offset committed for every partition");
  const http = await (await fetch(`${server.baseUrl}/groups/${group}`)).json();
  t.equal(http.state, "Stable");
  t.equal(http.members.length, 2);
  t.same(
    http.members.flatMap((m: { assignment: { partitions: number[] }[] }) => m.assignment[0]!.partitions).sort(
      (
        a: number,
        b: number,
      ) => a - b,
    ),
    Array.from({ length: partitions }, (_, i) => i),
    "the HTTP API's view of the assignment covers every partition",
  );
  t.ok(http.offsets.every((o: { lag: number }) => o.lag === 0), "no lag left");
});
