import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { configCopy } from "../helpers/config_copy.ts";
import { kafkaTieredRoundTrip } from "../helpers/kafka/kafka_tiered.ts";
import { kcatUnavailable } from "../helpers/kafka/kcat.ts";

// A tiered topic through the Kafka listener on the fs backend: produced with kcat, uploaded and
// evicted below a 1 MiB local envelope (the topic made by CreateTopics with KIP-405 configs), then read
// back from the beginning with kcat, byte for byte,
// through the chunk cache, before and after a SIGKILL and restart. The RGW run is in rgw.test.ts.
const unavailable = kcatUnavailable();

t.test("kcat reads an evicted tiered topic back byte for byte, across a SIGKILL", {
  skip: unavailable ?? false,
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "strata-kafka-tier-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await kafkaTieredRoundTrip(t, ["--config", configCopy(dir)]);
});
