import { parse } from "smol-toml";
import t from "tap";
import { toConfig } from "../../src/config/config.ts";
import { configSchema } from "../../src/config/schema.ts";
import { validateConfig } from "../../src/config/validate_config.ts";

/** The typed tiered-storage settings of a TOML text, validated against the schema (no cross-key rules). */
const tieredOf = (text: string) => toConfig(validateConfig(configSchema, parse(text), {})).tieredStorage;

// toConfig: each validated snake_case key lands in its typed field, in the unit its name says.

const tieredText = `
[system]
path = "/var/strata"

[tiered_storage]
backend = "s3"
segment_upload_timeout = "2 m"
default_local_retention_age = "unlimited"
default_local_retention_size = "10 GiB"

[tiered_storage.housekeeping]
interval = "7 m"
request_quota = 123
delete_grace = "90 s"
delete_pending_per_partition = 800
verify_interval = "2 h"

[tiered_storage.retry]
transient_initial = "20 ms"
non_transient_factor = 3
non_transient_max = "45 s"

[tiered_storage.s3]
bucket = "logs"
url_style = "virtual"
access_key = "AKIDCONFIGTEST000001"
conditional_writes = false
connections = 8

[tiered_storage.cache]
size = "1 GiB"
chunk_size = "4 MiB"
readahead_max = 2
trim_min_interval = "3 s"
`;

t.test("the tiered-storage sections map to their typed fields, with units and unlimited values", (t) => {
  const ts = tieredOf(tieredText);
  t.equal(ts.backend, "s3");
  t.equal(ts.segmentUploadTimeoutMs, 120_000);
  t.equal(ts.defaultLocalRetentionAgeMs, null, "unlimited is null");
  t.equal(ts.defaultLocalRetentionSizeBytes, 10 * 1024 ** 3);
  t.equal(ts.housekeeping.intervalMs, 420_000);
  t.equal(ts.housekeeping.requestsPerRunMax, 123);
  t.equal(ts.housekeeping.deleteGraceMs, 90_000);
  t.equal(ts.housekeeping.verifyIntervalMs, 7_200_000);
  t.equal(ts.housekeeping.deleteBatchPerPass, 300, "a key left out keeps its default");
  t.equal(ts.housekeeping.deletePendingPerPartitionMax, 800);
  t.same(ts.retry, {
    transient: { initialMs: 20, factor: 2, maxMs: 5000 },
    nonTransient: { initialMs: 1000, factor: 3, maxMs: 45_000 },
  });
  t.equal(ts.s3.bucket, "logs");
  t.equal(ts.s3.urlStyle, "virtual");
  t.equal(ts.s3.accessKey, "AKIDCONFIGTEST000001");
  t.equal(ts.s3.conditionalWrites, false);
  t.equal(ts.s3.connectionsMax, 8);
  t.equal(ts.s3.prefix, "strata");
  t.equal(ts.cache.sizeBytes, 1024 ** 3);
  t.equal(ts.cache.chunkBytes, 4 * 1024 ** 2);
  t.equal(ts.cache.readaheadChunksMax, 2);
  t.equal(ts.cache.trimMinIntervalMs, 3000);
  t.end();
});

t.test("empty object and cache paths are placed under the data directory", (t) => {
  const ts = tieredOf(tieredText);
  t.equal(ts.fs.path, "/var/strata/objects");
  t.equal(ts.cache.path, "/var/strata/cache");
  const placed = tieredOf(
    `[tiered_storage.fs]\npath = "/mnt/objects"\n[tiered_storage.cache]\npath = "/mnt/cache"\n`,
  );
  t.equal(placed.fs.path, "/mnt/objects");
  t.equal(placed.cache.path, "/mnt/cache");
  t.end();
});
