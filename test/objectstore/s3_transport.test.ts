import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import t, { type Test } from "tap";
import { AuthError, TransportError } from "../../src/objectstore/object_store_errors.ts";
import { emptyPayloadSha256, S3Transport } from "../../src/objectstore/s3/s3_transport.ts";
import { RealClock } from "../../src/runtime/clock/real_clock.ts";
import { s3Settings } from "../helpers/harnesses/s3_harness.ts";

const hourMs = 3_600_000;

/** A wall clock an hour behind the server's. */
class HourBehindClock extends RealClock {
  override wallMs(): number {
    return super.wallMs() - hourMs;
  }
}

/** When a request says it was signed: its `x-amz-date` (20240102T030405Z) in ms since the epoch. */
function signedAtMs(request: IncomingMessage): number {
  const d = String(request.headers["x-amz-date"]);
  return Date.UTC(
    +d.slice(0, 4),
    +d.slice(4, 6) - 1,
    +d.slice(6, 8),
    +d.slice(9, 11),
    +d.slice(11, 13),
    +d.slice(13, 15),
  );
}

type Answer = (request: IncomingMessage, response: ServerResponse) => void;

/** A local server answering its requests in turn with `answers` (the last one repeated), noting each. */
async function serverAnswering(t: Test, answers: Answer[]) {
  const requests: { method: string; url: string; signedAtMs: number }[] = [];
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      requests.push({ method: request.method!, url: request.url!, signedAtMs: signedAtMs(request) });
      answers[Math.min(requests.length, answers.length) - 1]!(request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("Cannot listen: no port");
  return { endpoint: `http://127.0.0.1:${address.port}`, requests };
}

const credentials = { accessKeyId: "AKIDTRANSPORT0000001", secretAccessKey: "transport-test-secret" };

const skewAnswer: Answer = (request, response) => {
  response.writeHead(403, { date: new Date().toUTCString(), "content-type": "application/xml" });
  response.end(
    request.method === "HEAD"
      ? undefined
      : "<Error><Code>RequestTimeTooSkewed</Code><Message>skew</Message></Error>",
  );
};
const okAnswer: Answer = (_request, response) => {
  response.writeHead(200, { "content-length": "0" });
  response.end();
};

function transportTo(t: Test, endpoint: string, clock = new HourBehindClock()): S3Transport {
  const transport = new S3Transport(s3Settings({ endpoint, ...credentials }, "b"), clock);
  t.teardown(() => transport.close());
  return transport;
}

t.test("a RequestTimeTooSkewed answer is signed again once with the server's time, and the time is kept", async (t) => {
  const { endpoint, requests } = await serverAnswering(t, [skewAnswer, okAnswer]);
  const transport = transportTo(t, endpoint);
  const get = {
    method: "GET" as const,
    path: "/b",
    query: { "list-type": "2" },
    headers: { "x-amz-content-sha256": emptyPayloadSha256 },
    body: null,
  };
  const response = await transport.request(get, {}, "Cannot list p/");
  t.equal(response.status, 200);
  await transport.request(get, {}, "Cannot list p/");
  t.equal(requests.length, 3, "one refused, one re-signed, one signed right the first time");
  t.same(requests.map((r) => r.url), ["/b?list-type=2", "/b?list-type=2", "/b?list-type=2"]);
  const nowMs = Date.now();
  t.ok(Math.abs(requests[0]!.signedAtMs - (nowMs - hourMs)) < 60_000, "the first was signed an hour behind");
  t.ok(Math.abs(requests[1]!.signedAtMs - nowMs) < 60_000, "the second with the server's time");
  t.ok(Math.abs(requests[2]!.signedAtMs - nowMs) < 60_000, "and the later ones too");
});

t.test("a HEAD has no error body: a 403 whose Date is far from the local clock is taken for skew", async (t) => {
  const { endpoint, requests } = await serverAnswering(t, [skewAnswer, okAnswer]);
  const transport = transportTo(t, endpoint);
  const head = {
    method: "HEAD" as const,
    path: transport.keyPath("p/k"),
    query: {},
    headers: { "x-amz-content-sha256": emptyPayloadSha256 },
    body: null,
  };
  t.equal((await transport.request(head, {}, "Cannot head p/k")).status, 200);
  t.same(requests.map((r) => r.method), ["HEAD", "HEAD"]);
});

t.test("a streamed body cannot be sent again: skew is a TransportError for the retry layer to re-sign", async (t) => {
  const { endpoint, requests } = await serverAnswering(t, [skewAnswer, okAnswer]);
  const transport = transportTo(t, endpoint);
  const put = () => ({
    method: "PUT" as const,
    path: transport.keyPath("p/k"),
    query: {},
    headers: { "content-length": "2", "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
    body: (async function* () {
      yield Uint8Array.of(1, 2);
    })(),
  });
  const error = await transport.request(put(), {}, "Cannot put p/k").catch((e) => e);
  t.ok(error instanceof TransportError, `a TransportError (${error?.name})`);
  t.equal(error.status, 403);
  t.match(error.message, /^Cannot put p\/k: clock skew of \d+ ms; re-signing$/);
  t.equal(requests.length, 1, "not sent again by the transport");
  t.equal(
    (await transport.request(put(), {}, "Cannot put p/k")).status,
    200,
    "the next attempt is re-signed",
  );
  t.ok(Math.abs(requests[1]!.signedAtMs - Date.now()) < 60_000);
});

t.test("a 403 that is not skew is an AuthError, not sent again", async (t) => {
  const denied: Answer = (_request, response) => {
    response.writeHead(403, { date: new Date().toUTCString(), "content-type": "application/xml" });
    response.end("<Error><Code>AccessDenied</Code><Message>no</Message></Error>");
  };
  const { endpoint, requests } = await serverAnswering(t, [denied]);
  const transport = transportTo(t, endpoint, new RealClock());
  const get = { method: "GET" as const, path: "/b", query: {}, headers: {}, body: null };
  const error = await transport.request(get, {}, "Cannot list p/").catch((e) => e);
  t.ok(error instanceof AuthError, `an AuthError (${error?.name})`);
  t.equal(error.message, "Cannot list p/: 403 AccessDenied (no)");
  t.equal(requests.length, 1);
});

t.test("paths name the bucket in the path or, virtual-hosted, in the host", (t) => {
  const clock = new RealClock();
  const path = new S3Transport(
    s3Settings({ endpoint: "http://s3.example.test:9", ...credentials }, "b"),
    clock,
  );
  const virtual = new S3Transport(
    s3Settings({ endpoint: "http://s3.example.test:9", ...credentials }, "b", { urlStyle: "virtual" }),
    clock,
  );
  t.teardown(() => Promise.all([path.close(), virtual.close()]));
  t.equal(path.bucketPath(), "/b");
  t.equal(path.keyPath("p/a b+c.log"), "/b/p/a%20b%2Bc.log");
  t.equal(virtual.bucketPath(), "/");
  t.equal(virtual.keyPath("p/a b+c.log"), "/p/a%20b%2Bc.log");
  t.end();
});
