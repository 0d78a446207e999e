import { execFile, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import type { ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf } from "../helpers/kafka/kcat.ts";
import { spawnServer } from "../helpers/spawn_server.ts";
import { waitFor } from "../helpers/wait_for.ts";

// Exactly once through a librdkafka application (Debian's python3-confluent-kafka) and a kafkajs
// one: each copies an input topic to an output topic in transactions that commit the input offsets
// with the output (send_offsets_to_transaction, sendOffsets), and is SIGKILLed mid-stream again and
// again. Each new process fences the one before by its transactional id and goes on from the
// committed offset; the output, read with read_committed, holds every input record exactly once,
// and the committed offset is its end. The librdkafka tool seeds the input and checks both.
const python = "/usr/bin/python3";
const pythonMissing = spawnSync(python, ["-c", "import confluent_kafka"]).status !== 0;
const app = new URL("../helpers/kafka/exactly_once_app.py", import.meta.url).pathname;
const kafkajsApp = new URL("../helpers/kafka/exactly_once_kafkajs.ts", import.meta.url).pathname;
const records = 1500;
const kills = 3;

function runApp(mode: "seed" | "check", broker: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(python, [app, mode, broker, String(records)], { timeout: 120_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`Cannot ${mode}: ${stderr.slice(-2000)}`, { cause: error }));
      else resolve(stdout);
    });
  });
}

/**
 * Seeds "in", then runs the application `start` gives, SIGKILLing it `kills` times once it has
 * committed twice, each next run going on from the last commit, the last run to the end; then checks.
 */
async function killedAgainAndAgain(
  t: Test,
  start: (broker: string) => ChildProcessByStdio<null, Readable, Readable>,
) {
  const dir = mkdtempSync(join(tmpdir(), "strata-exactly-once-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServer(["--config", configCopy(dir)]);
  t.teardown(() => server.stop("SIGKILL"));
  const broker = kafkaAddressOf(server.stderr());
  await runApp("seed", broker);
  let committed = 0;
  for (let round = 0; round <= kills; round++) {
    const child = start(broker);
    t.teardown(() => void child.kill("SIGKILL"));
    const progress: number[] = [];
    let done = false;
    let errors = "";
    child.stderr.on("data", (chunk: Buffer) => (errors = (errors + chunk.toString()).slice(-2000)));
    child.stdout.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n")) {
        if (line.startsWith("progress ")) progress.push(Number(line.slice(9)));
        if (line === "done") done = true;
      }
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    if (round < kills) {
      // Killed once it committed twice: mid-stream, with a transaction likely open.
      await waitFor(`run ${round} to commit twice`, () => progress.length >= 2 || done, {
        deadlineMs: 60_000,
      });
      child.kill("SIGKILL");
      await exited;
      t.ok(progress[0]! > committed, `run ${round} went on from ${committed} to ${progress.at(-1)}`);
      committed = progress.at(-1)!;
    } else {
      t.equal(await exited, 0, `the last run ends: ${errors}`);
      t.ok(done, "having copied every record");
    }
  }
  const checked = JSON.parse(await runApp("check", broker));
  t.same(checked, { committed: records, read: records, exactly_once: true, misplaced: [] });
}

const skip = pythonMissing ? "python3-confluent-kafka is not installed (.ci/run installs it)" : false;

t.test(
  "a librdkafka consume-transform-produce application SIGKILLed again and again copies every record once",
  {
    skip,
  },
  async (t) => {
    await killedAgainAndAgain(
      t,
      (broker) => spawn(python, [app, "run", broker, String(records)], { stdio: ["ignore", "pipe", "pipe"] }),
    );
  },
);

t.test("a kafkajs consume-transform-produce application SIGKILLed again and again copies every record once", {
  skip,
}, async (t) => {
  await killedAgainAndAgain(
    t,
    (broker) =>
      spawn("deno", ["run", "-A", kafkajsApp, broker, String(records)], {
        stdio: ["ignore", "pipe", "pipe"],
      }),
  );
});
