import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaAddressOf, kcat, kcatUnavailable } from "../helpers/kafka/kcat.ts";
import { spawnServer } from "../helpers/spawn_server.ts";

const unavailable = kcatUnavailable();

t.test("kcat -L against the real server", { skip: unavailable ?? false }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-kcat-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServer(["--config", configCopy(dir)]);
  t.teardown(() => server.stop("SIGKILL"));
  const broker = kafkaAddressOf(server.stderr());

  const listed = await kcat(["-b", broker, "-L", "-J", "-t", "orders"]);
  t.equal(listed.code, 0, `kcat -L exits 0: ${listed.stderr}`);
  const metadata = JSON.parse(listed.stdout);
  t.same(metadata.brokers, [{ id: 1, name: broker }], "one broker, at the address listened on");
  t.equal(metadata.controllerid, 1);
  const orders = metadata.topics.find((x: { topic: string }) => x.topic === "orders");
  t.ok(orders, "the topic asked for is created on first use");
  t.equal(orders.partitions.length, 1, "with default_partitions");
  t.same(orders.partitions[0].leader, 1);

  const all = JSON.parse((await kcat(["-b", broker, "-L", "-J"])).stdout);
  t.ok(all.topics.some((x: { topic: string }) => x.topic === "orders"), "listed with every topic");
  const http = await (await fetch(`${server.baseUrl}/streams/kafka/topics/orders`)).json();
  t.equal(http.partitions, 1, "the HTTP API sees it in the kafka stream");

  t.equal(await server.stop("SIGTERM"), 0, "graceful shutdown with the Kafka listener open");
});
