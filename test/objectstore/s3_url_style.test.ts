import dns from "node:dns";
import { createServer } from "node:http";
import t, { type Test } from "tap";
import { loadConfig } from "../../src/config/load_config.ts";
import { ObjectStoreProbeError } from "../../src/objectstore/probe_object_store.ts";
import { openObjectStore } from "../../src/objectstore/open_object_store.ts";
import { S3ObjectStore } from "../../src/objectstore/s3/s3_object_store.ts";
import { initCrc32c } from "../../src/runtime/checksum/crc32c.ts";
import { silentLogger } from "../../src/runtime/logger.ts";
import { createMetricsRegistry } from "../../src/runtime/metrics/metrics.ts";
import { NodeDisk } from "../../src/runtime/disk/node_disk.ts";
import { Rng } from "../../src/runtime/rng.ts";
import { VirtualClock } from "../../src/runtime/clock/virtual_clock.ts";
import { s3Settings } from "../helpers/harnesses/s3_harness.ts";

await initCrc32c();

/**
 * Host names under `.strata.test` (and `b.localhost`) resolve to the loopback address, except
 * those in `unresolvable`, which are ENOTFOUND, as a bucket's virtual host is without wildcard DNS.
 * Every connection still goes to 127.0.0.1: only the name in the URL and the Host header differ.
 */
const unresolvable = new Set<string>();
const realLookup = dns.lookup;
type LookupCallback = (error: NodeJS.ErrnoException | null, address?: unknown, family?: number) => void;
function loopbackLookup(hostname: string, options: unknown, callback?: LookupCallback): void {
  const done = (typeof options === "function" ? options : callback) as LookupCallback;
  const all = typeof options === "object" && options !== null && (options as { all?: boolean }).all === true;
  if (!hostname.endsWith(".strata.test") && hostname !== "b.localhost") {
    (realLookup as (...args: unknown[]) => void)(hostname, options, callback);
    return;
  }
  if (unresolvable.has(hostname)) {
    const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
    error.code = "ENOTFOUND";
    queueMicrotask(() => done(error));
    return;
  }
  queueMicrotask(() => all ? done(null, [{ address: "127.0.0.1", family: 4 }]) : done(null, "127.0.0.1", 4));
}
(dns as { lookup: unknown }).lookup = loopbackLookup;
t.teardown(() => {
  (dns as { lookup: unknown }).lookup = realLookup;
});

interface SeenRequest {
  method: string;
  host: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * A minimal S3 on loopback that notes every request: it lists nothing, keeps what is PUT (by
 * path, refusing a second If-None-Match: * create), answers ranged GETs, HEADs and DeleteObjects.
 * A request whose Host starts with a name in `deniedHosts` is refused with AccessDenied.
 */
async function fakeS3(t: Test, deniedHosts: string[] = []) {
  const requests: SeenRequest[] = [];
  const objects = new Map<string, Buffer>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const host = String(request.headers.host);
      const url = request.url!;
      requests.push({ method: request.method!, host, url, headers: request.headers });
      const path = url.split("?")[0]!;
      const xml = (status: number, body: string) => {
        response.writeHead(status, { "content-type": "application/xml" });
        response.end(body);
      };
      if (deniedHosts.some((denied) => host.startsWith(denied))) {
        return xml(403, "<Error><Code>AccessDenied</Code><Message>denied</Message></Error>");
      }
      if (request.method === "GET" && url.includes("list-type=2")) {
        return xml(200, "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
      }
      if (request.method === "POST") return xml(200, "<DeleteResult></DeleteResult>");
      if (request.method === "PUT") {
        if (request.headers["if-none-match"] === "*" && objects.has(path)) {
          return xml(412, "<Error><Code>PreconditionFailed</Code><Message>exists</Message></Error>");
        }
        objects.set(path, Buffer.concat(chunks));
        response.writeHead(200, { etag: '"e1"', "content-length": "0" });
        return response.end();
      }
      const body = objects.get(path);
      if (body === undefined) return xml(404, "<Error><Code>NoSuchKey</Code><Message>none</Message></Error>");
      if (request.method === "HEAD") {
        response.writeHead(200, { "content-length": String(body.length), etag: '"e1"' });
        return response.end();
      }
      const [from, to] = String(request.headers.range).replace("bytes=", "").split("-").map(Number);
      response.writeHead(206, { "content-length": String(to! - from! + 1) });
      response.end(body.subarray(from!, to! + 1));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("Cannot listen: no port");
  return { port: address.port, requests };
}

const credentials = { accessKeyId: "AKIDURLSTYLE00000001", secretAccessKey: "url-style-test-secret" };

/** One of each request the backend sends: list, put, head, ranged get, delete. */
async function exercise(store: S3ObjectStore): Promise<void> {
  const bytes = Uint8Array.of(1, 2, 3);
  await store.list("p/", { maxKeys: 1 });
  await store.put("p/k", () =>
    (async function* () {
      yield bytes;
    })(), { sizeBytes: 3, metadata: {}, ifAbsent: false });
  await store.head("p/k");
  await store.getRange("p/k", 0, 3);
  await store.delete(["p/k"]);
}

t.test("virtual-host style names the bucket in the Host, and paths start at the key", async (t) => {
  const { port, requests } = await fakeS3(t);
  const endpoint = `http://s3.strata.test:${port}`;
  const store = new S3ObjectStore(
    s3Settings({ endpoint, ...credentials }, "b", { urlStyle: "virtual" }),
    new VirtualClock(),
  );
  t.teardown(() => store.close());
  await exercise(store);
  t.same(requests.map((r) => `${r.method} ${r.host} ${r.url}`), [
    `GET b.s3.strata.test:${port} /?list-type=2&prefix=p%2F&max-keys=1`,
    `PUT b.s3.strata.test:${port} /p/k`,
    `HEAD b.s3.strata.test:${port} /p/k`,
    `GET b.s3.strata.test:${port} /p/k`,
    `POST b.s3.strata.test:${port} /?delete`,
  ]);
});

t.test("path style names the bucket as the path's first segment, the Host is the endpoint's", async (t) => {
  const { port, requests } = await fakeS3(t);
  const endpoint = `http://s3.strata.test:${port}`;
  const store = new S3ObjectStore(
    s3Settings({ endpoint, ...credentials }, "b", { urlStyle: "path" }),
    new VirtualClock(),
  );
  t.teardown(() => store.close());
  await exercise(store);
  t.same(requests.map((r) => `${r.method} ${r.host} ${r.url}`), [
    `GET s3.strata.test:${port} /b?list-type=2&prefix=p%2F&max-keys=1`,
    `PUT s3.strata.test:${port} /b/p/k`,
    `HEAD s3.strata.test:${port} /b/p/k`,
    `GET s3.strata.test:${port} /b/p/k`,
    `POST s3.strata.test:${port} /b?delete`,
  ]);
});

t.test("a PUT's body is signed as UNSIGNED-PAYLOAD, and that header is among the signed ones", async (t) => {
  const { port, requests } = await fakeS3(t);
  const store = new S3ObjectStore(
    s3Settings({ endpoint: `http://127.0.0.1:${port}`, ...credentials }, "b"),
    new VirtualClock(),
  );
  t.teardown(() => store.close());
  await exercise(store);
  const put = requests.find((r) => r.method === "PUT");
  t.ok(put !== undefined, "a PUT was sent");
  t.equal(put!.headers["x-amz-content-sha256"], "UNSIGNED-PAYLOAD");
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(String(put!.headers.authorization))?.[1]?.split(";");
  t.ok(signedHeaders?.includes("x-amz-content-sha256"), `signed headers: ${signedHeaders?.join(";")}`);
  const others = requests.filter((r) => r.method !== "PUT").map((r) => r.headers["x-amz-content-sha256"]);
  t.notOk(others.includes("UNSIGNED-PAYLOAD"), "requests other than PUT sign their payload's hash");
});

function openDeps() {
  return {
    disk: new NodeDisk(),
    // Wall time near the server's Date header, so a 403 is not taken for clock skew and re-signed.
    clock: new VirtualClock(0, Date.now()),
    rng: new Rng(1),
    registry: createMetricsRegistry(),
    logger: silentLogger(),
  };
}

/** The tiered-storage config for the s3 backend at `endpoint`, url_style left at its default, auto. */
function autoConfig(endpoint: string) {
  const { config } = loadConfig("", "t", {
    STRATA_TIERED_STORAGE_ENABLED: "true",
    STRATA_TIERED_STORAGE_BACKEND: "s3",
    STRATA_TIERED_STORAGE_S3_BUCKET: "b",
    STRATA_TIERED_STORAGE_S3_ENDPOINT: endpoint,
    STRATA_TIERED_STORAGE_S3_ACCESS_KEY: credentials.accessKeyId,
    STRATA_TIERED_STORAGE_S3_SECRET_KEY: credentials.secretAccessKey,
  });
  t.equal(config.tieredStorage.s3.urlStyle, "auto", "url_style defaults to auto");
  return config.tieredStorage;
}

t.test("auto, against a named host, uses virtual-host style when the bucket's host answers", async (t) => {
  const { port, requests } = await fakeS3(t);
  const opened = await openObjectStore(autoConfig(`http://s3.strata.test:${port}`), openDeps());
  t.teardown(() => opened.close());
  t.equal(opened.description.url_style, "virtual");
  t.ok(requests.length > 0);
  t.same(
    new Set(requests.map((r) => r.host)),
    new Set([`b.s3.strata.test:${port}`]),
    "only the virtual host",
  );
});

t.test("auto falls back to path style when the bucket's virtual host is unreachable", async (t) => {
  const { port, requests } = await fakeS3(t);
  unresolvable.add("b.s3.strata.test");
  t.teardown(() => unresolvable.delete("b.s3.strata.test"));
  const opened = await openObjectStore(autoConfig(`http://s3.strata.test:${port}`), openDeps());
  t.teardown(() => opened.close());
  t.equal(opened.description.url_style, "path");
  t.ok(requests.length > 0);
  t.ok(requests.every((r) => r.host === `s3.strata.test:${port}` && r.url.startsWith("/b")), "path style");
});

t.test("auto does not fall back when the virtual host answers but refuses: the error stops start-up", async (t) => {
  const { port, requests } = await fakeS3(t, ["b.s3.strata.test"]);
  const error = await openObjectStore(autoConfig(`http://s3.strata.test:${port}`), openDeps()).catch((e) =>
    e
  );
  t.ok(error instanceof ObjectStoreProbeError, `an ObjectStoreProbeError (${error?.name})`);
  t.match(error.message, /the credentials were rejected/);
  t.same(requests.map((r) => r.host), [`b.s3.strata.test:${port}`], "one LIST, and no path-style try");
});

t.test("auto, against an IP address or localhost, uses path style without trying the virtual host", async (t) => {
  // b.localhost resolves here, so a virtual-host try would succeed and be seen.
  for (const host of ["127.0.0.1", "localhost"]) {
    const { port, requests } = await fakeS3(t);
    const opened = await openObjectStore(autoConfig(`http://${host}:${port}`), openDeps());
    await opened.close();
    t.equal(opened.description.url_style, "path", host);
    t.ok(requests.length > 0);
    t.ok(
      requests.every((r) => r.host === `${host}:${port}` && r.url.startsWith("/b")),
      `${host}: path style`,
    );
  }
});
