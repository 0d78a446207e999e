import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf, kcat, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { spawnServer } from "../helpers/spawn_server.ts";

// SASL/PLAIN with `[kafka] users`: kcat with the right credentials produces and consumes; with a
// wrong password or none it is refused; the password never reaches the log.
const unavailable = kcatUnavailable();
const password = "pw-" + "x7Qm2vL9".repeat(2);

t.test("kcat over SASL/PLAIN", { skip: unavailable ?? false }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-sasl-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServer(["--config", configCopy(dir)], {
    STRATA_KAFKA_USERS: `alice:${password},bob:other`,
  });
  t.teardown(() => server.stop("SIGKILL"));
  const broker = kafkaAddressOf(server.stderr());
  const sasl = (user: string, secret: string) => [
    "-X",
    "security.protocol=SASL_PLAINTEXT",
    "-X",
    "sasl.mechanisms=PLAIN",
    "-X",
    `sasl.username=${user}`,
    "-X",
    `sasl.password=${secret}`,
  ];

  const produced = await kcat(
    ["-b", broker, ...sasl("alice", password), "-P", "-t", "secured"],
    "one\ntwo\n",
    20_000,
  );
  t.equal(produced.code, 0, `produced with the right credentials: ${produced.stderr}`);
  const consumed = await kcat(
    [
      "-b",
      broker,
      ...sasl("alice", password),
      "-C",
      "-t",
      "secured",
      "-o",
      "beginning",
      "-e",
      "-q",
      "-f",
      "%s\n",
    ],
    "",
    20_000,
  );
  t.same(consumed.stdout.trimEnd().split("\n"), ["one", "two"]);

  const wrong = await kcat(["-b", broker, ...sasl("alice", "not-it"), "-L", "-m", "5"], "", 20_000);
  t.not(wrong.code, 0, "a wrong password is refused");
  t.match(wrong.stderr, /Authentication failed|SASL authentication error/);
  const none = await kcat(["-b", broker, "-L", "-m", "5"], "", 20_000);
  t.not(none.code, 0, "no credentials: refused");
  t.match(server.stderr(), /"msg":"Kafka authentication failed"/);
  t.match(server.stderr(), /"msg":"Kafka client authenticated".*"user":"alice"/);
  t.notMatch(server.stderr(), new RegExp(password), "the password never appears in the log");
  const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
  t.match(metrics, /strata_kafka_connections_closed_total\{reason="authentication_failed"\} [1-9]/);
  t.match(metrics, /strata_kafka_connections_closed_total\{reason="unauthenticated"\} [1-9]/);
});
