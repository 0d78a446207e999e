import { readFileSync } from "node:fs";
import { TomlError } from "smol-toml";
import t, { type Test } from "tap";
import { ConfigError } from "../../src/config/config_error.ts";
import type { ConfigSchema } from "../../src/config/key_spec.ts";
import { loadConfig } from "../../src/config/load_config.ts";
import { configSchema } from "../../src/config/schema.ts";
import { envVariableName, validateConfig } from "../../src/config/validate_config.ts";

const shipped = readFileSync(new URL("../../config.toml", import.meta.url), "utf8");

/** Loads `text` and returns the ConfigError it raises, failing the test when none is raised. */
function errorOf(t: Test, text: string, env: Record<string, string> = {}): ConfigError {
  try {
    loadConfig(text, "test.toml", env);
  } catch (error) {
    t.ok(error instanceof ConfigError, "a ConfigError");
    return error as ConfigError;
  }
  t.fail("expected a ConfigError");
  return new ConfigError("none", "none");
}

t.test("an empty file gives the defaults, which are the shipped config.toml's values", (t) => {
  const defaults = loadConfig("", "empty.toml", {}).config;
  const fromShipped = loadConfig(shipped, "config.toml", {}).config;
  t.same(fromShipped, defaults, "config.toml states exactly the defaults");
  t.same(defaults.http.address, { hostname: "127.0.0.1", port: 8080 });
  t.equal(defaults.system.path, "./data");
  t.equal(defaults.system.tickIntervalMs, 10);
  t.end();
});

t.test("the shipped config.toml lists every key, each under a comment giving its default", (t) => {
  const lines = shipped.split("\n");
  for (const [section, keys] of Object.entries(configSchema)) {
    const header = lines.indexOf(`[${section}]`);
    t.ok(header >= 0, `[${section}] is present`);
    for (const key of Object.keys(keys)) {
      const at = lines.findIndex((l, i) => i > header && l.startsWith(`${key} = `));
      t.ok(at > 0, `${section}.${key} is present`);
      t.match(lines[at - 1] ?? "", /^# .*Default /, `${section}.${key} has a comment with its default`);
    }
  }
  t.end();
});

t.test("an unknown key stops start-up with a message naming it", (t) => {
  const error = errorOf(t, `[system]\npth = "/tmp/x"\n`);
  t.equal(error.message, "Cannot load config: [system] pth: unknown key");
  t.equal(error.key, "[system] pth");
  t.end();
});

t.test("an unknown section is named", (t) => {
  t.match(errorOf(t, `[sytem]\npath = "x"\n`).message, /\[sytem\]: unknown section/);
  t.match(errorOf(t, `path = "x"\n`).message, /path: top-level keys must be inside a \[section\]/);
  t.end();
});

t.test("a wrong type is named with what was expected", (t) => {
  t.match(errorOf(t, `[system]\npath = 5\n`).message, /\[system\] path: expected a string, got number 5/);
  t.match(
    errorOf(t, `[system]\ntick_interval = "fast"\n`).message,
    /\[system\] tick_interval: expected a duration/,
  );
  t.match(errorOf(t, `[http]\naddress = "localhost"\n`).message, /\[http\] address: expected "host:port"/);
  t.match(errorOf(t, `[log]\nlevel = "loud"\n`).message, /\[log\] level: expected one of "debug", "info"/);
  t.end();
});

t.test("an out-of-range value is named with its range", (t) => {
  t.match(
    errorOf(t, `[system]\ntick_interval = "2 s"\n`).message,
    /\[system\] tick_interval: 2000 is out of range \[1, 1000\]/,
  );
  t.match(errorOf(t, `[http]\naddress = "127.0.0.1:70000"\n`).message, /\[http\] address/);
  t.match(
    errorOf(t, `[tiered_storage.housekeeping]\ndelete_pending_per_partition = 0\n`).message,
    /\[tiered_storage\.housekeeping\] delete_pending_per_partition: 0 is out of range \[1, 100000\]/,
  );
  t.end();
});

t.test("max_open_files bounds the files held open: 4096 by default, at least 1, named when out of range", (t) => {
  t.equal(loadConfig("", "empty.toml", {}).config.system.maxOpenFiles, 4096);
  t.equal(loadConfig(`[system]\nmax_open_files = 64\n`, "test.toml", {}).config.system.maxOpenFiles, 64);
  const zero = errorOf(t, `[system]\nmax_open_files = 0\n`);
  t.equal(zero.key, "[system] max_open_files");
  t.match(zero.message, /\[system\] max_open_files: 0 is out of range \[1, 1048576\]/);
  t.equal(errorOf(t, `[system]\nmax_open_files = "many"\n`).key, "[system] max_open_files");
  t.equal(
    loadConfig("", "empty.toml", { STRATA_SYSTEM_MAX_OPEN_FILES: "128" }).config.system.maxOpenFiles,
    128,
    "an environment variable overrides it",
  );
  t.end();
});

t.test("invalid TOML names the file and position", (t) => {
  t.match(errorOf(t, `[system\npath = 1`).message, /Cannot load config: test\.toml: invalid TOML at line 1/);
  t.end();
});

t.test("a ConfigError found through a parse error keeps it as its cause", (t) => {
  // Proves the parser's own account (its message, with the excerpt it points at) is not lost.
  const error = errorOf(t, `[system\npath = 1`);
  t.ok(error.cause instanceof TomlError, "the TOML parser's error is its cause");
  t.equal((error.cause as TomlError).line, 1);
  t.equal(errorOf(t, `[http]\naddress = 7\n`).cause, undefined, "a bad value has no cause but its key");
  t.end();
});

t.test("STRATA_<SECTION>_<KEY> overrides a single key; a bad or unknown variable is named", (t) => {
  const { config } = loadConfig(shipped, "config.toml", {
    STRATA_HTTP_ADDRESS: "0.0.0.0:9999",
    STRATA_SYSTEM_TICK_INTERVAL: "5 ms",
    PATH: "/usr/bin",
  });
  t.same(config.http.address, { hostname: "0.0.0.0", port: 9999 });
  t.equal(config.system.tickIntervalMs, 5);
  t.match(
    errorOf(t, "", { STRATA_SYSTEM_TICK_INTERVAL: "soon" }).message,
    /STRATA_SYSTEM_TICK_INTERVAL \(\[system\] tick_interval\): expected a duration/,
  );
  t.match(
    errorOf(t, "", { STRATA_SYSTEM_PTH: "x" }).message,
    /STRATA_SYSTEM_PTH: unknown environment variable/,
  );
  t.end();
});

t.test("secrets: env names for nested sections, values collected for scrubbing and never echoed", (t) => {
  const schema: ConfigSchema = {
    "store.s3": { secret_key: { kind: "string", default: "", secret: true } },
    "store": { enabled: { kind: "bool", default: false } },
  };
  t.equal(envVariableName("store.s3", "secret_key"), "STRATA_STORE_S3_SECRET_KEY");
  const v = validateConfig(schema, { store: { enabled: true } }, {
    STRATA_STORE_S3_SECRET_KEY: "hunter2-long",
  });
  t.equal(v["store.s3"]!["secret_key"], "hunter2-long");
  t.equal(v["store"]!["enabled"], true);
  try {
    validateConfig(schema, { store: { s3: { secret_key: 12345678 } } }, {});
    t.fail("a number is not a string");
  } catch (error) {
    t.match((error as Error).message, /\[store\.s3\] secret_key: expected a string, got number$/);
    t.notMatch((error as Error).message, /12345678/, "the wrong-typed secret is not echoed");
  }
  t.end();
});

t.test("the chunk cache: chunk_size a multiple of 4096; size at least 2 × chunk_size × fetch_concurrency × shards", (t) => {
  t.match(
    errorOf(t, `[tiered_storage.cache]\nchunk_size = ${1024 * 1024 + 1000}\n`).message,
    /\[tiered_storage\.cache\] chunk_size: must be a multiple of 4096 bytes, got 1049576/,
  );
  // 2 × 8 MiB × 4 × 2 shards = 128 MiB.
  const sized = (size: string) => `[system]\nshards = 2\n[tiered_storage.cache]\nsize = "${size}"\n`;
  const error = errorOf(t, sized("127 MiB"));
  t.equal(error.key, "[tiered_storage.cache] size");
  t.match(
    error.message,
    /at least 2 × chunk_size × fetch_concurrency × shards = 134217728 bytes, got 133169152/,
  );
  t.equal(
    loadConfig(sized("128 MiB"), "test.toml", {}).config.tieredStorage.cache.sizeBytes,
    128 * 1024 * 1024,
  );
  const fewerFetches = `${sized("64 MiB")}[tiered_storage]\nfetch_concurrency = 2\n`;
  t.equal(
    loadConfig(fewerFetches, "test.toml", {}).config.tieredStorage.fetchConcurrency,
    2,
    "the rule follows the keys",
  );
  t.end();
});

t.test("[kafka]: loopback only without authentication; an advertised address needs a port", (t) => {
  const open = errorOf(t, `[kafka]\naddress = "10.0.0.5:9092"\n`);
  t.equal(open.key, "[kafka] address");
  t.match(
    open.message,
    /10\.0\.0\.5 is not a loopback address .* set users for SASL\/PLAIN, or allow_unauthenticated = true/,
  );
  const allowed = loadConfig(`[kafka]\naddress = "10.0.0.5:9092"\nallow_unauthenticated = true\n`, "t", {});
  t.same(allowed.config.kafka.address, { hostname: "10.0.0.5", port: 9092 });
  t.equal(
    loadConfig(`[kafka]\naddress = "10.0.0.5:9092"\nenabled = false\n`, "t", {}).config.kafka.enabled,
    false,
  );

  const wildcard = `[kafka]\naddress = "0.0.0.0:9092"\nallow_unauthenticated = true\n`;
  t.equal(errorOf(t, wildcard).key, "[kafka] advertised_address", "a wildcard needs an advertised address");
  const advertised = loadConfig(`${wildcard}advertised_address = "kafka.example:19092"\n`, "t", {});
  t.same(advertised.config.kafka.advertisedAddress, { hostname: "kafka.example", port: 19092 });
  t.equal(errorOf(t, `[kafka]\nadvertised_address = "h:0"\n`).key, "[kafka] advertised_address");
  t.match(errorOf(t, `[kafka]\nadvertised_address = "nowhere"\n`).message, /expected "host:port"/);
  t.equal(loadConfig("", "t", {}).config.kafka.advertisedAddress, null, "empty: the address listened on");
  t.end();
});

t.test("[kafka] users: name:password entries, refused without echoing them; they allow a non-loopback address", (t) => {
  const loaded = loadConfig(
    `[kafka]\nusers = ["alice:pa:ss", "bob:x"]\naddress = "10.0.0.5:9092"\n`,
    "t",
    {},
  );
  t.same(
    [...loaded.config.kafka.users],
    [["alice", "pa:ss"], ["bob", "x"]],
    "the name ends at the first colon",
  );
  t.ok(loaded.secrets.includes("pa:ss"), "passwords are scrubbed from logs");
  const missing = errorOf(t, `[kafka]\nusers = ["nocolonhere"]\n`);
  t.equal(missing.key, "[kafka] users");
  t.notMatch(missing.message, /nocolonhere/, "the entry is not echoed");
  t.match(errorOf(t, `[kafka]\nusers = ["a:1", "a:2"]\n`).message, /user a is listed twice/);
  t.same([...loadConfig("", "t", { STRATA_KAFKA_USERS: "u1:p1,u2:p2" }).config.kafka.users.keys()], [
    "u1",
    "u2",
  ]);
  t.end();
});

t.test("[cluster]: off by default; on, it needs a secret, etcd URLs, whole-second leases and the Kafka listener", (t) => {
  const single = loadConfig("", "t", {}).config.cluster;
  t.equal(single.enabled, false);
  t.same(single.etcdEndpoints, ["http://127.0.0.1:2379"]);
  t.equal(single.leaseTtlMs, 2000);
  t.equal(single.replicationFactor, 3);
  t.equal(single.minInsyncReplicas, 2);
  t.equal(single.replicaLagMaxMs, 10_000);
  const secret = "s3cret-of-sixteen-chars";
  const on = (extra: string) => `[cluster]\nenabled = true\nsecret = "${secret}"\n${extra}`;
  const loaded = loadConfig(
    on(`node_id = 2\netcd_endpoints = ["http://127.0.0.1:2379", "http://10.0.0.2:2379"]\n`),
    "t",
    {},
  );
  t.equal(loaded.config.cluster.nodeId, 2);
  t.same(loaded.config.cluster.etcdEndpoints, ["http://127.0.0.1:2379", "http://10.0.0.2:2379"]);
  t.ok(loaded.secrets.includes(secret), "the secret is never logged");
  const fromEnv = loadConfig(`[cluster]\nenabled = true\n`, "t", { STRATA_CLUSTER_SECRET: secret });
  t.equal(fromEnv.config.cluster.secret, secret);

  const missing = errorOf(t, `[cluster]\nenabled = true\n`);
  t.equal(missing.key, "[cluster] secret");
  t.match(missing.message, /at least 16 characters/);
  const short = errorOf(t, `[cluster]\nenabled = true\nsecret = "short"\n`);
  t.notMatch(short.message, /short"/, "the secret is not echoed");
  t.equal(errorOf(t, on(`etcd_endpoints = ["127.0.0.1:2379"]\n`)).key, "[cluster] etcd_endpoints");
  t.equal(errorOf(t, on(`etcd_endpoints = []\n`)).key, "[cluster] etcd_endpoints");
  t.equal(errorOf(t, on(`lease_ttl = "1500 ms"\n`)).key, "[cluster] lease_ttl");
  t.equal(
    errorOf(t, on(`replication_factor = 2\nmin_insync_replicas = 3\n`)).key,
    "[cluster] min_insync_replicas",
  );
  t.equal(errorOf(t, on(`node_id = 0\n`)).key, "[cluster] node_id");
  t.equal(errorOf(t, `${on("")}[kafka]\nenabled = false\n`).key, "[kafka] enabled");
  t.equal(errorOf(t, `${on("")}[http]\nadvertised_address = "h:0"\n`).key, "[http] advertised_address");
  const http = loadConfig(`[http]\nadvertised_address = "node1.example:8080"\n`, "t", {}).config.http;
  t.same(http.advertisedAddress, { hostname: "node1.example", port: 8080 });
  t.end();
});
